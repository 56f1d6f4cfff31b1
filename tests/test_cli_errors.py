"""The command line's own failures (issue 22 item 7), each one line and no traceback: a reader that
closes the pipe, an optional package not installed, a bad ``--cores``, ``export-mteb`` onto a file
or a folder it cannot write, a full disk, and every argument of ``prefetch`` and ``gc`` wrong in
each way it can be (the CLI catalogue). (A bad config through the CLI: tests/dag/test_bad_inputs_dag.py.)"""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys

import pytest

from lsrbench.cli import main
from lsrbench.cli_errors import BROKEN_PIPE_STATUS, run_one_line

from helpers.catalogue import record
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


@pytest.mark.parametrize("text", ["", "# nothing yet\n\n"])
def test_run_refuses_an_empty_config_file_before_snakemake(monkeypatch, capsys, tmp_path, text):
    """Snakemake reads every --configfile before the Snakefile can speak: an empty one was its own
    WorkflowError. ``lsrbench run`` reads it first, as the Snakefile reads it."""
    (tmp_path / "empty.yaml").write_text(text)
    monkeypatch.chdir(REPO)
    assert main(["run", "-n", "--configfile", str(tmp_path / "empty.yaml")]) == 2
    line = _one_line(capsys)
    assert line == f"lsrbench: error: {tmp_path / 'empty.yaml'}: empty: no settings in it (only blank lines or comments)"
    record(f"run: an empty --configfile ({'no line' if not text else 'only a comment'})", line, tmp_path)


def test_run_refuses_a_config_key_with_a_dot_before_snakemake(monkeypatch, capsys):
    """``--config recipe.steps=10`` ended in a Snakemake traceback (its parser takes top-level keys only)."""
    monkeypatch.chdir(REPO)
    assert main(["run", "-n", "--", "--config", "mirror=../shared", "recipe.steps=10"]) == 2
    line = _one_line(capsys)
    assert line == ("lsrbench: error: command line: --config: 'recipe.steps=10': snakemake --config takes top-level "
                    "keys only; a nested setting goes in a config file (base: config/config.yaml, then recipe: ...)")
    record("run: a --config key with a dot", line, REPO)


def test_run_refuses_an_empty_config_key_before_snakemake(monkeypatch, capsys):
    """``--config =1``: Snakemake's parser refuses it with a traceback, before the Snakefile runs."""
    monkeypatch.chdir(REPO)
    assert main(["run", "-n", "--", "--config", "=1"]) == 2
    line = _one_line(capsys)
    assert line == "lsrbench: error: command line: --config: '=1': snakemake --config takes top-level keys only"
    record("run: an empty --config key", line, REPO)


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


# --------------------------------------------------------------------------- every argument of prefetch and gc
# Each a bad argument of one kind (missing, a folder where a file is meant or the reverse, a place
# that cannot be written, blank, of the wrong form), run from a folder that is not the checkout
# (a results folder elsewhere), each one line naming the argument or its path. Tests run as root,
# whom a folder's mode does not stop: "cannot be written" is a path below a regular file
# (ENOTDIR) or in /proc (the kernel's own tree), which the system refuses to root too.
CONFIG = str(REPO / "config" / "config.yaml")
ARGUMENT_CASES = {
    "prefetch: no --configfile outside the checkout": (
        ["prefetch", "--mirror", "{tmp}/m"],
        r"command line: --configfile: not given, and the default config/config\.yaml is not in {tmp}: give the "
        r"config the results were made with \(--configfile FILE\), or run from the lsrbench checkout"),
    "prefetch: --configfile missing": (["prefetch", "--configfile", "{tmp}/none.yaml", "--mirror", "{tmp}/m"],
                                       r"{tmp}/none\.yaml: file not found"),
    "prefetch: --configfile a folder": (["prefetch", "--configfile", "{tmp}", "--mirror", "{tmp}/m"],
                                        r"{tmp}: a folder, not a YAML file"),
    "prefetch: --configfile blank": (["prefetch", "--configfile", "", "--mirror", "{tmp}/m"],
                                     r"command line: --configfile: '' is empty: give a path"),
    "prefetch: --mirror missing": (["prefetch", "--configfile", CONFIG],
                                   r"command line: the following arguments are required: --mirror \(lsrbench prefetch --help\)"),
    "prefetch: --mirror a file": (["prefetch", "--configfile", CONFIG, "--mirror", "{tmp}/file"],
                                  r"{tmp}/file: a file, not a folder: give the mirror folder to fetch into \(--mirror DIR\)"),
    "prefetch: --mirror below a file (unwritable)": (
        ["prefetch", "--configfile", CONFIG, "--mirror", "{tmp}/file/mirror"],
        r"{tmp}/file/mirror: cannot write the mirror folder here \(Not a directory\): give a folder this user can "
        r"write \(--mirror DIR\)"),
    "prefetch: --mirror in /proc (unwritable)": (
        ["prefetch", "--configfile", CONFIG, "--mirror", "/proc/lsrbench-mirror"],
        r"/proc/lsrbench-mirror: cannot write the mirror folder here \(.+\): give a folder this user can write "
        r"\(--mirror DIR\)"),
    "prefetch: --mirror blank": (["prefetch", "--configfile", CONFIG, "--mirror", ""],
                                 r"command line: --mirror: '' is empty: give a path"),
    "prefetch: an unknown option": (["prefetch", "--mirror", "{tmp}/m", "--forse"],
                                    r"command line: unrecognized arguments: --forse \(lsrbench --help\)"),
    "gc: no --configfile outside the checkout": (
        ["gc"], r"command line: --configfile: not given, and the default config/config\.yaml is not in {tmp}: .*"),
    "gc: --configfile missing": (["gc", "--configfile", "{tmp}/none.yaml"], r"{tmp}/none\.yaml: file not found"),
    "gc: --configfile not a config (a YAML list)": (["gc", "--configfile", "{tmp}/list.yaml"],
                                                    r"{tmp}/list\.yaml: expected a YAML mapping at the top level"),
    "gc: --configfile not YAML": (["gc", "--configfile", "{tmp}/garbage.yaml"], r"{tmp}/garbage\.yaml: line \d+: YAML error: .*"),
    "gc: --configfile a folder": (["gc", "--configfile", "{tmp}"], r"{tmp}: a folder, not a YAML file"),
    "gc: --configfile blank": (["gc", "--configfile", ""], r"command line: --configfile: '' is empty: give a path"),
    "gc: --results a file": (["gc", "--configfile", CONFIG, "--results", "{tmp}/file"],
                             r"{tmp}/file: a file, not a folder: give the results folder of a run \(--results DIR\), "
                             r"or run from the folder snakemake ran in"),
    "gc: --results missing": (["gc", "--configfile", CONFIG, "--results", "{tmp}/nowhere"],
                              r"{tmp}/nowhere: results folder not found \(in {tmp}\): give the results folder of a "
                              r"run \(--results DIR\), or run from the folder snakemake ran in"),
    "gc: --results blank": (["gc", "--configfile", CONFIG, "--results", ""],
                            r"command line: --results: '' is empty: give a path"),
    "gc: --config without =": (["gc", "--configfile", CONFIG, "--config", "recipe.steps"],
                               r"command line: --config: 'recipe\.steps' is not KEY=VALUE \(as snakemake --config takes it\)"),
    "run: --gpus not a number": (["run", "-n", "--gpus", "abc"],
                                 r"command line: --gpus: invalid int value: 'abc' \(lsrbench run --help\)"),
    "an unknown subcommand": (["frobnicate"], r"command line: COMMAND: invalid choice: 'frobnicate' .*"),
}


@pytest.mark.parametrize("name", ARGUMENT_CASES)
def test_a_bad_argument_is_one_line(monkeypatch, capsys, tmp_path, name):
    args, expected = ARGUMENT_CASES[name]
    (tmp_path / "file").write_text("not a folder\n")
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    (tmp_path / "garbage.yaml").write_text("a: [1, 2\n")
    (tmp_path / "results").mkdir()  # gc's default --results (checked before the configs)
    monkeypatch.chdir(tmp_path)  # not the checkout: no config/config.yaml, no Snakefile here
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main([a.format(tmp=tmp_path) for a in args]) != 0
    assert re.fullmatch("lsrbench: error: " + expected.format(tmp=re.escape(str(tmp_path))), _one_line(capsys))
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written (no mirror folder made)


@pytest.mark.parametrize("filename, says", [
    (None, "command line: no space left on device"),  # as write() reports it: no file name
    ("/data/mirror/models/x/model.safetensors", "/data/mirror/models/x/model.safetensors: no space left on device writing it"),
])
def test_a_full_disk_in_a_command_is_one_line(capsys, filename, says):
    def command():
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), *([filename] if filename else []))
    assert run_one_line(command) == 1
    assert _one_line(capsys) == (f"lsrbench: error: {says} (nothing finished was changed: outputs appear only once "
                                 "whole); free space and run again")
