"""Faults that ended in a traceback or in someone else's message (issue 47 items 5 and 10), each
made for real and run as a user types it: a snakemake holding the folder (gc --delete, a second
snakemake), a checkpoint cut short, Ctrl-C while snakemake starts and during lsrbench verify, a
folder without config/, a read-only folder, a full disk. Each ends in one ``lsrbench: error:`` line
(or note), and every finished file is byte-identical afterwards."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.catalogue import record
from helpers.paths import REPO
from helpers.snakemake import SNAKEMAKE, copy_run, micro_config, train_dir

pytestmark = pytest.mark.slow
STEPS = 600  # ~35 s of training here: the window in which gc and a second snakemake meet the running one


def _finished(work: Path) -> dict[str, str]:
    """sha256 of every file under results/ (its digest cache aside: a start-up may refresh it)."""
    results = work / "results"
    return {str(p.relative_to(results)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(results.rglob("*")) if p.is_file() and ".cache" not in p.relative_to(results).parts}


def _errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("lsrbench: error:")]


def _one_line(proc: subprocess.CompletedProcess, pattern: str, case: str | None = None, tmp: Path | None = None) -> str:
    """The one ``lsrbench: error:`` line of a failed process, matched against ``pattern``; no
    traceback. ``case``: its name in the bad-input catalogue (docs/bad-input-catalogue.md)."""
    lines = _errors(proc.stderr)
    assert proc.returncode != 0 and len(lines) == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "Exception" not in proc.stderr, proc.stderr[-3000:]
    assert re.fullmatch(pattern, lines[0]), lines[0]
    if case:
        record(case, lines[0], tmp)
    return lines[0]


def _complete_checkpoints(run_dir: Path) -> list[int]:
    return sorted(int(p.name.split("-")[1]) for p in run_dir.glob("checkpoints/checkpoint-*")
                  if re.fullmatch(r"checkpoint-\d+", p.name) and (p / "lsrbench_train_log.jsonl").is_file())


def _wait(proc, condition, what: str, seconds: float = 300) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline and proc.poll() is None and not condition():
        time.sleep(0.1)
    assert proc.poll() is None, f"the run ended before {what}"


def test_a_snakemake_holding_the_folder_and_a_damaged_checkpoint(micro_run, tmp_path, vaswani_slice, tiny_roberta):
    """While a snakemake trains in the finished micro run's folder (a longer recipe: a new run):
    gc --delete (the new run is no config's but its own), a second snakemake of the same command
    and its --unlock are each refused in one line naming the holder's pid and command, without
    suggesting --unlock.
    Once it is killed (SIGKILL: the lock stays), both say the holder is gone and suggest --unlock.
    The latest checkpoint's weights then cut in half: the rerun sets it aside, says so in one line,
    resumes from the one before (training keeps about one: usually none is left, and it restarts
    from step 0) and finishes. The finished micro run is byte-identical throughout."""
    work = copy_run(micro_run, tmp_path / "work")
    before = _finished(work)
    cfg = micro_config(tmp_path, vaswani_slice, tiny_roberta, steps=STEPS, checkpoint_steps=20)
    run_dir = train_dir(work, cfg, "rand-roberta", "1")
    cmd = [*SNAKEMAKE, str((run_dir / "train_log.jsonl").relative_to(work)), "--cores", "2", "-d", str(work),
           "--configfile", str(cfg)]
    gc = [str(Path(sys.executable).parent / "lsrbench"), "gc", "--configfile", str(micro_run["config"]), "--delete"]
    holder = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        # training keeps about one checkpoint: two whole ones seldom coexist on a quiet machine
        _wait(holder, lambda: len(_complete_checkpoints(run_dir)) >= 1, "its first checkpoint")
        locks = re.escape(str(work / ".snakemake" / "locks"))
        held = (rf"lsrbench: error: {locks}: a snakemake run holds this folder since [-0-9: ]+ \(pid {holder.pid} on "
                rf"\S+ \(snakemake .*{re.escape(str(cfg))}\)\): {{}} while it runs; wait for it to end, or stop it "
                r"\(Ctrl-C in its terminal\)")
        _one_line(subprocess.run(gc, cwd=work, capture_output=True, text=True), held.format("gc --delete removes nothing"),
                  "gc --delete while a snakemake runs in the folder", tmp_path)
        _one_line(subprocess.run(cmd, capture_output=True, text=True), held.format("this snakemake cannot start"),
                  "a second snakemake while one runs in the folder", tmp_path)
        _one_line(subprocess.run([*cmd, "--unlock"], capture_output=True, text=True),
                  held.format("--unlock would let a second run write its files"),
                  "snakemake --unlock while the run holding the lock runs", tmp_path)
        assert run_dir.is_dir() and holder.poll() is None and any((work / ".snakemake" / "locks").glob("*.lock"))
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()
    gone = (rf"lsrbench: error: {locks}: a lock left since [-0-9: ]+ by a run that was stopped \(the run that took it "
            rf"\(pid {holder.pid} .*\) has ended\): {{}} until it is removed: snakemake --unlock \(with the same "
            r"--snakefile/-d\), then run again")
    _one_line(subprocess.run(gc, cwd=work, capture_output=True, text=True), gone.format("gc --delete removes nothing"))
    _one_line(subprocess.run(cmd, capture_output=True, text=True), gone.format("this snakemake cannot start"),
              "a snakemake on a lock left by a killed run", tmp_path)

    complete = _complete_checkpoints(run_dir)
    latest, previous = complete[-1], (complete[-2] if len(complete) > 1 else None)
    then = (f"training resumes from checkpoint-{previous}, the last whole one" if previous is not None
            else "no whole checkpoint is left: training restarts from step 0")
    weights = sorted((run_dir / "checkpoints" / f"checkpoint-{latest}").rglob("*.safetensors"))[0]
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    subprocess.run([*cmd, "--unlock"], capture_output=True, check=True)
    rerun = subprocess.run([*cmd, "--rerun-incomplete"], capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    notes = [line for line in rerun.stderr.splitlines() if "damaged checkpoint" in line]
    assert len(notes) == 1 and "Traceback" not in rerun.stderr, rerun.stderr[-3000:]
    assert re.fullmatch(rf"lsrbench: note: .*checkpoint-{latest}: damaged checkpoint \(.*safetensors: .*\): set aside "
                        rf"as checkpoint-{latest}\.damaged; {then}", notes[0]), notes[0]
    record("a checkpoint cut short, resumed from (a note; the run goes on)", notes[0], tmp_path)
    summary = json.loads((run_dir / "train_provenance.json").read_text())["summary"]
    assert summary["resumed_from_step"] == previous
    assert [json.loads(line)["step"] for line in (run_dir / "train_log.jsonl").read_text().splitlines()] == \
        list(range(1, STEPS + 1))
    assert (run_dir / "checkpoints" / f"checkpoint-{latest}.damaged").is_dir()  # set aside, kept
    after = _finished(work)
    # every finished run kept; the micro run's reports are another config's here, removed before the first job
    kept = {name: digest for name, digest in before.items() if "/" in name and name.split("/")[0] not in ("manifests", "html")}
    assert {name: after.get(name) for name in kept} == kept


def _interrupted(cmd: list[str], cwd: Path, delay: float, from_first_line: bool) -> subprocess.CompletedProcess:
    """``cmd`` interrupted (SIGINT, as Ctrl-C sends it) ``delay`` seconds after its start (or its first line on stderr)."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    first = proc.stderr.readline() if from_first_line else ""
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    err = first + proc.stderr.read()
    return subprocess.CompletedProcess(cmd, proc.wait(), "", err)


def _landed(proc: subprocess.CompletedProcess, says: str) -> bool:
    """Whether the interrupt landed: then one line matching ``says``, exit 130. Else it came after
    the command had done its work (exit 0, or Python's silent SIGINT death while it was exiting),
    which must have printed no error and no traceback either."""
    if proc.returncode == 130:
        _one_line(proc, says)
        return True
    assert proc.returncode in (0, -signal.SIGINT) and not _errors(proc.stderr), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "KeyboardInterrupt" not in proc.stderr, proc.stderr[-3000:]
    return False


def test_ctrl_c_while_snakemake_starts_and_during_verify(micro_run, tmp_path):
    """SIGINT at a few points of the start-up of snakemake on the finished micro run (its
    Snakefile's checks, the DAG; "Nothing to be done" when uninterrupted), counted from its first
    line (Snakemake's profile note: by then Snakemake is imported; an interrupt inside Python's
    import of Snakemake stays Python's), and of lsrbench verify, counted from its start: where it
    lands, one line, exit 130, no traceback; where the command was already done (a loaded machine
    runs faster or slower from one run to the next), no message at all. Two land at least; every finished
    file is byte-identical after each."""
    work = copy_run(micro_run, tmp_path / "work")
    before = _finished(work)
    snakemake = [*SNAKEMAKE, "--cores", "1", "--configfile", str(micro_run["config"])]
    verify = [str(Path(sys.executable).parent / "lsrbench"), "verify", "--results", "results"]
    for cmd, after_line, delays, says in [
            (snakemake, True, (0.6, 0.8, 1.0, 1.3, 1.6, 2.0, 2.5),
             rf"lsrbench: error: {re.escape(str(work))}: interrupted \(Ctrl-C\) while snakemake was starting, before "
             r"any job ran: nothing finished was changed; run the same command again to go on"),
            (verify, False, (0.3, 0.6, 1.0, 1.5, 2.0),
             r"lsrbench: error: command line: interrupted \(Ctrl-C\) before the command finished: what it had "
             r"finished stays; run it again to go on")]:
        landed = []
        for delay in delays:
            if _landed(_interrupted(cmd, work, delay, after_line), says):
                landed.append(delay)
            assert _finished(work) == before
        # how long start-up lasts depends on the machine's load: some delays fall after it (ended quietly)
        assert len(landed) >= 1, (cmd, landed)


def test_a_folder_without_config_is_one_line(tmp_path):
    """snakemake -s .../Snakefile in an empty folder: one line naming the config to give, not
    Snakemake's WorkflowError; the folder is left as it was but for Snakemake's own .snakemake/."""
    proc = subprocess.run([*SNAKEMAKE, "--cores", "1"], cwd=tmp_path, capture_output=True, text=True)
    _one_line(proc, rf"lsrbench: error: {re.escape(str(tmp_path))}: no config/config.yaml here: run snakemake in the "
                    rf"lsrbench checkout, or give a config \(--configfile {re.escape(str(REPO / 'config' / 'config.yaml'))}\)",
              "snakemake -s .../Snakefile in a folder without config/", tmp_path)
    assert {p.name for p in tmp_path.iterdir()} <= {".snakemake"}


@contextlib.contextmanager
def _tmpfs(folder: Path, megabytes: int):
    """A tmpfs of ``megabytes`` mounted at ``folder`` (root with CAP_SYS_ADMIN), unmounted after."""
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(folder)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()}): a full or read-only disk cannot be made")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


@pytest.mark.parametrize("fault", ["read-only", "full"])
def test_a_folder_that_cannot_be_written_is_one_line(micro_run, tmp_path, fault):
    """The finished micro run on a read-only filesystem, or on a full one, and its report deleted
    (a job to run): one line naming the folder and what to do, before Snakemake writes its log,
    locks and metadata there (before: logging errors and an OSError traceback); every finished
    file byte-identical."""
    with _tmpfs(tmp_path / "disk", 16) as disk:
        work = copy_run(micro_run, disk / "work")
        (work / "results" / "table1.md").unlink()
        before = _finished(work)
        if fault == "read-only":
            subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
            says = (rf"lsrbench: error: {re.escape(str(work))}: read-only file system: snakemake writes results/ and "
                    r"\.snakemake/ in the folder it runs in \(nothing finished was changed\): make it writable, or "
                    r"run in another folder \(snakemake -d DIR\)")
        else:
            with contextlib.suppress(OSError), open(disk / "filler", "wb") as fh:
                while True:
                    fh.write(bytes(1 << 16))
                    fh.flush()
            says = (rf"lsrbench: error: {re.escape(str(work / '.snakemake'))}: no space left on device writing it "
                    r"\(nothing finished was changed: outputs appear only once whole\); free space and run again")
        proc = subprocess.run([*SNAKEMAKE, "--cores", "1", "--configfile", str(micro_run["config"])], cwd=work,
                              capture_output=True, text=True)
        _one_line(proc, says, f"snakemake in a {fault} folder", tmp_path)
        assert "Logging error" not in proc.stderr and "OSError" not in proc.stderr, proc.stderr[-3000:]
        assert _finished(work) == before
