"""The command line as a user meets it: help, version, the argument forms, ``lsrbench run``."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from lsrbench.cli import _parse, build_parser, main, snakemake_command
from lsrbench.cli_options import DEFAULT_CONFIG

from helpers.paths import REPO, SHARED


def _lsrbench(*args, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lsrbench", *args], cwd=cwd, capture_output=True, text=True)


def test_no_arguments_prints_the_help():
    proc = _lsrbench()
    assert proc.returncode == 2 and proc.stdout.startswith("usage: lsrbench") and "check-config" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    out = capsys.readouterr().out.splitlines()  # then each library against the lock (tests/test_environment.py)
    assert re.fullmatch(r"lsrbench \d+\.\d+\.\d+\S*", out[0]) and out[1].startswith("torch ")


def test_every_argument_is_documented_and_no_rest_markup():
    parser = build_parser()
    subcommands = parser._subparsers._group_actions[0].choices  # noqa: SLF001 (no public accessor)
    texts = [parser.format_help()]
    for name, sub in subcommands.items():
        texts.append(sub.format_help())
        for action in sub._actions:  # noqa: SLF001
            if action.dest not in ("help", "legacy_configfile"):
                assert action.help, f"{name} {action.option_strings or action.dest}: no help"
    for text in texts:
        assert "``" not in text and ":func:" not in text and ":mod:" not in text


def test_check_config_positional_still_works_with_a_note():
    new = _lsrbench("check-config", "--configfile", DEFAULT_CONFIG)
    old = _lsrbench("check-config", DEFAULT_CONFIG)
    assert new.returncode == old.returncode == 0 and new.stdout == old.stdout
    assert new.stdout.splitlines()[0] == "config/config.yaml: ok: 2 backbones, 5 runs, datasets vaswani"
    assert "check-config --configfile config/config.yaml" in old.stderr and new.stderr == ""


def test_run_puts_targets_first_whatever_the_order():
    args = _parse(build_parser(), ["run", "--configfile", "my.yaml", "results/table1.md", "--gpus", "1", "-n",
                                   "results/norms.md", "--mirror", "../shared", "--", "--quiet", "rules"])
    assert snakemake_command(args) == ["results/table1.md", "results/norms.md", "--cores", "all", "--dry-run",
                                       "--resources", "gpu=1", "--configfile", "my.yaml", "--config",
                                       "mirror=../shared", "--quiet", "rules"]
    report = _parse(build_parser(), ["run", "--report", "results/report.html"])
    assert snakemake_command(report) == ["--report", "results/report.html", "--cores", "1"]
    profile = _parse(build_parser(), ["run", "--profile", "profiles/local"])
    assert snakemake_command(profile) == ["--profile", "profiles/local"]  # the profile sets the cores


def test_run_dry_runs_through_snakemake():
    if not SHARED.is_dir():
        pytest.skip("../shared not present")
    proc = _lsrbench("run", "-n", "--mirror", str(SHARED), "results/table1.md", "--cores", "1")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr.startswith(f"$ snakemake results/table1.md --cores 1 --dry-run --config mirror={SHARED}\n")
    assert "table1" in proc.stdout and "claims" not in proc.stdout


def test_run_outside_a_checkout_is_one_line(tmp_path):
    proc = _lsrbench("run", "-n", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"lsrbench: error: {tmp_path}: no Snakefile here: run lsrbench run from the lsrbench checkout"
