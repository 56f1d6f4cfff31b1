"""The command line's own failures (issue 22 item 7), each one line and no traceback: a reader that
closes the pipe, an optional package not installed, a bad ``--cores``, ``export-mteb`` onto a file
or a folder it cannot write. (A bad config through the CLI: tests/dag/test_bad_inputs_dag.py.)"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from lsrbench.cli import main
from lsrbench.cli_errors import BROKEN_PIPE_STATUS

from helpers.paths import REPO


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err.strip()


@pytest.mark.parametrize("args, status", [(["check-config", "--configfile", "config/config.yaml"], BROKEN_PIPE_STATUS),
                                          (["--help"], 0)])  # argparse ignores a failed write of its help
def test_a_closed_pipe_ends_quietly(args, status):
    """``lsrbench check-config | head -0``: the reader is gone before the first line is written."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([sys.executable, "-m", "lsrbench", *args], cwd=REPO, stdout=write,
                              stderr=subprocess.PIPE, text=True)
    finally:
        os.close(write)
    assert proc.returncode == status and proc.stderr == "", proc.stderr


@pytest.mark.parametrize("command", [["mteb-check", "splade-tiny/k1", "vaswani"], ["export-mteb", "out"]])
def test_a_missing_extra_is_named(monkeypatch, capsys, tmp_path, command):
    monkeypatch.setitem(sys.modules, "mteb", None)  # import mteb now fails as if it were not installed
    monkeypatch.chdir(tmp_path)
    assert main(command) == 2
    assert _one_line(capsys) == (f"lsrbench: error: command line: {command[0]}: needs the optional package mteb, "
                                 "which is not installed: pip install -e '.[mteb]'")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("cores", ["abc", "0", "-1", "2.5", ""])
def test_run_cores_not_a_count(capsys, cores):
    assert main(["run", "--cores", cores, "-n"]) == 2
    assert _one_line(capsys) == (f"lsrbench: error: command line: --cores: '{cores}' is not a number of cores "
                                 "(a positive integer, or all)")


@pytest.fixture
def results(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "metrics.csv").write_text("backbone,k,dataset,measure,value\nsplade-tiny,1,vaswani,nDCG@10,0.3\n")
    return folder


def test_export_mteb_onto_a_file(capsys, results, tmp_path):
    target = tmp_path / "taken.json"
    target.write_text("{}")
    assert main(["export-mteb", str(target), "--results", str(results)]) == 2
    assert _one_line(capsys) == (f"lsrbench: error: {target}: a file, not a folder: give the folder to write the "
                                 "MTEB results into")
    assert target.read_text() == "{}"


def test_export_mteb_below_a_file(capsys, results, tmp_path):
    (tmp_path / "taken").write_text("")
    assert main(["export-mteb", str(tmp_path / "taken" / "out"), "--results", str(results)]) == 1
    assert _one_line(capsys).startswith(f"lsrbench: error: {tmp_path / 'taken'}")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_export_mteb_onto_an_unwritable_folder(capsys, results, tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir(mode=0o555)
    assert main(["export-mteb", str(folder), "--results", str(results)]) == 1
    assert _one_line(capsys).endswith(": Permission denied")
    assert list(folder.iterdir()) == []


def test_export_mteb_works(capsys, results, tmp_path):
    assert main(["export-mteb", str(tmp_path / "out"), "--results", str(results)]) == 0
    assert (tmp_path / "out" / "results").is_dir()
