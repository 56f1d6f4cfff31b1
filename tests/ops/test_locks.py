"""Who holds Snakemake's lock on a folder (lsrbench.locks): its record, a live or ended pid,
another host, a lock without a record traced through /proc; each with the line gc and a second
snakemake print. Real processes, real lock files as Snakemake 9 writes them (the DAG-level cases:
tests/dag/test_faults_dag.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from lsrbench.locks import LOCKS, lock_holder, lock_line


def _lock(work, records=()) -> float:
    """A lock as Snakemake writes it (``0.output.lock``, the paths it writes), with holder records; its mtime."""
    folder = work / LOCKS
    folder.mkdir(parents=True)
    (folder / "0.output.lock").write_text("results/table1.md\n")
    for record in records:
        (folder / f"{record['pid']}.holder.json").write_text(json.dumps(record))
    os.utime(folder / "0.output.lock", (1_700_000_000, 1_700_000_000))
    return 1_700_000_000


@pytest.fixture
def sleeper(tmp_path):
    """A real process run as a snakemake is (``python .../snakemake``), in ``tmp_path``."""
    script = tmp_path / "bin" / "snakemake"
    script.parent.mkdir()
    script.write_text("import time\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path)
    time.sleep(0.2)
    yield proc
    proc.kill()
    proc.wait()


def test_no_lock_no_holder(tmp_path):
    assert lock_holder(tmp_path) is None
    (tmp_path / LOCKS).mkdir(parents=True)  # Snakemake's empty folder: nothing held
    assert lock_holder(tmp_path) is None


def test_a_recorded_live_holder(tmp_path, sleeper):
    import socket

    since = _lock(tmp_path, [{"pid": sleeper.pid, "host": socket.gethostname(), "command": "snakemake --cores 2"}])
    holder = lock_holder(tmp_path)
    assert (holder.pid, holder.alive, holder.command, holder.since) == (sleeper.pid, True, "snakemake --cores 2", since)
    line = lock_line(tmp_path, holder, "gc --delete removes nothing")
    assert f"(pid {sleeper.pid} on {socket.gethostname()} (snakemake --cores 2))" in line
    assert "--unlock" not in line and line.startswith(f"{tmp_path / LOCKS}: a snakemake run holds this folder since ")


def test_a_recorded_holder_that_ended_suggests_unlock(tmp_path):
    import socket

    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(ended.stdout)
    _lock(tmp_path, [{"pid": pid, "host": socket.gethostname(), "command": "snakemake --cores 2"}])
    holder = lock_holder(tmp_path)
    assert (holder.pid, holder.alive) == (pid, False)
    line = lock_line(tmp_path, holder, "this snakemake cannot start")
    assert f"the run that took it (pid {pid} " in line and line.endswith("snakemake --unlock (with the same "
                                                                         "--snakefile/-d), then run again")


def test_a_pid_reused_by_another_program_is_not_the_holder(tmp_path):
    """The recorded pid alive but no snakemake (this test's own process, run by pytest): the lock was left."""
    import socket

    _lock(tmp_path, [{"pid": os.getpid(), "host": socket.gethostname(), "command": "snakemake"}])
    if b"snakemake" in open(f"/proc/{os.getpid()}/cmdline", "rb").read():
        pytest.fail("this test's command line names snakemake: it cannot stand for another program")
    assert lock_holder(tmp_path).alive is False


def test_a_holder_on_another_host_is_not_called_dead(tmp_path):
    _lock(tmp_path, [{"pid": 4242, "host": "node-17", "command": "snakemake --profile profiles/slurm"}])
    holder = lock_holder(tmp_path)
    assert (holder.pid, holder.host, holder.alive) == (4242, "node-17", None)
    line = lock_line(tmp_path, holder, "gc --delete removes nothing")
    assert "another machine" in line and "once it has ended, snakemake --unlock" in line


def test_a_lock_without_record_is_traced_to_the_snakemake_running_there(tmp_path, sleeper):
    """Taken moments ago (before onstart wrote the record), or by another Snakefile: /proc names it."""
    _lock(tmp_path)
    holder = lock_holder(tmp_path)
    assert (holder.pid, holder.alive) == (sleeper.pid, True)
    assert holder.command.endswith("snakemake")


def test_a_lock_without_record_or_process_was_left(tmp_path):
    _lock(tmp_path)
    holder = lock_holder(tmp_path)
    assert (holder.pid, holder.alive) == (None, False)
    assert "(no snakemake runs in this folder on this machine)" in lock_line(tmp_path, holder, "x")
