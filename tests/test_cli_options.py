"""One spelling per option across the subcommands (the results folder ``--results DIR``, the mirror
``--mirror DIR``, the config ``--configfile FILE`` with ``--config KEY=VALUE`` beside it); each earlier
spelling still works and prints one line naming the documented form."""

from __future__ import annotations

import argparse

import pytest

from helpers.cli import lsrbench
from lsrbench.cli import build_parser
from lsrbench.cli_options import mirror_of, results_folder, workdir_of
from lsrbench.errors import InputError

# every subcommand that reads a results folder, a mirror, or a config
RESULTS = ("verify", "expected", "plan", "status", "probe", "gc", "mteb-check", "export-mteb")
MIRROR = ("check-config", "run", "probe", "prefetch", "plan", "gc", "status")
CONFIG = ("check-config", "run", "probe", "prefetch", "plan", "cells", "gc", "status", "mteb-check")


def _options(command: str) -> set[str]:
    sub = build_parser()._subparsers._group_actions[0].choices[command]  # noqa: SLF001
    return {o for a in sub._actions if a.help != argparse.SUPPRESS for o in a.option_strings}  # noqa: SLF001


@pytest.mark.parametrize("command", sorted(set(RESULTS) | set(MIRROR) | set(CONFIG)))
def test_each_option_has_one_documented_spelling(command):
    options = _options(command)
    assert ("--results" in options) == (command in RESULTS)
    assert ("--mirror" in options) == (command in MIRROR)
    assert ("--configfile" in options) == (command in CONFIG) == ("--config" in options)
    assert not options & {"-d", "--directory"}  # the earlier spelling of the results folder's parent: hidden


def test_earlier_spellings_work_with_a_note(capsys):
    args = argparse.Namespace(results=None, legacy_results="out/res", legacy_directory=None)
    assert results_folder(args, "verify") == "out/res"
    assert capsys.readouterr().err == ("lsrbench: note: 'verify out/res' still works; the documented form is "
                                       "'verify --results out/res'\n")
    args = argparse.Namespace(results=None, legacy_directory="work")
    assert results_folder(args, "status") == "work/results" and workdir_of("work/results") == "work"
    assert "the documented form is 'status --results work/results'" in capsys.readouterr().err
    assert mirror_of(argparse.Namespace(mirror=None), {"mirror": "../shared"}) == "../shared"
    assert mirror_of(argparse.Namespace(mirror="../shared"), {"mirror": "../shared"}) == "../shared"
    assert results_folder(argparse.Namespace(results=None), "gc") == "results" and capsys.readouterr().err == ""


def test_conflicting_spellings_are_one_line():
    with pytest.raises(InputError, match="given twice"):
        results_folder(argparse.Namespace(results="a", legacy_results="b", legacy_directory=None), "verify")
    with pytest.raises(InputError, match="'a' and --config mirror=b: give one of them"):
        mirror_of(argparse.Namespace(mirror="a"), {"mirror": "b"})
    with pytest.raises(InputError, match="workflow writes its results folder as 'results'"):
        workdir_of("somewhere/out")


def test_verify_positional_folder_still_verifies(tmp_path):
    """``lsrbench verify DIR`` (the spelling of earlier releases) checks DIR, with the note."""
    proc = lsrbench("verify", tmp_path / "results")
    assert "the documented form is 'verify --results" in proc.stderr
    assert str(tmp_path / "results") in proc.stderr  # it verified that folder (and names it)


def _cli(*argv: str):
    """``lsrbench ARGV`` as a user runs it: a process of its own, in the checkout."""
    import subprocess
    import sys

    from helpers.paths import REPO

    return subprocess.run([sys.executable, "-m", "lsrbench", *map(str, argv)], cwd=REPO, capture_output=True,
                          text=True)


def test_config_values_are_taken_beside_the_config_file():
    """``--config KEY=VALUE`` changes what check-config checks, as snakemake --config does; ``--mirror DIR``
    is ``--config mirror=DIR``; a dotted key or two different mirrors are one line."""
    default, one_k = _cli("check-config"), _cli("check-config", "--config", "k_grid=[1]")
    assert default.stdout.splitlines()[0] == "config/config.yaml: ok: 2 backbones, 5 runs, datasets vaswani"
    # the twin sweeps k_grid (1 and 16); splade-tiny names its own k: one run fewer
    assert one_k.stdout.splitlines()[0] == "config/config.yaml: ok: 2 backbones, 4 runs, datasets vaswani"
    assert "splade-tiny-x10  shared  k = 1\n" in one_k.stdout
    dotted = _cli("plan", "--no-calibration", "--config", "recipe.steps=3")
    assert dotted.returncode == 2 and dotted.stderr == (
        "lsrbench: error: command line: --config: 'recipe.steps=3': snakemake --config takes top-level keys only; a "
        "nested setting goes in a config file (base: config/config.yaml, then recipe: ...)\n")
    both = _cli("probe", "-n", "--mirror", "a", "--config", "mirror=b")
    assert both.returncode == 2 and both.stderr == "lsrbench: error: command line: --mirror: 'a' and --config mirror=b: give one of them\n"


def test_run_takes_config_values_and_targets_in_any_order():
    from lsrbench.cli import _parse, snakemake_command

    args = _parse(build_parser(), ["run", "--config", "mirror=../shared", "cache_dir=/tmp/c", "results/table1.md", "-n"])
    assert snakemake_command(args) == ["results/table1.md", "--cores", "all", "--dry-run", "--config",
                                       "mirror=../shared", "cache_dir=/tmp/c"]


def test_a_mistyped_target_lists_the_reports():
    proc = _cli("run", "-n", "results/tabel1.md")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and "MissingRule" not in proc.stderr
    head, _, reports = proc.stderr.partition("; its reports: ")
    assert head == "lsrbench: error: command line: TARGET: 'results/tabel1.md' is not a file config/config.yaml makes"
    reports = reports.strip().split(", ")
    assert {"results/table1.md", "results/claims.md", "results/tradeoff.png", "results/probe.md"} <= set(reports)
    assert not [r for r in reports if "manifests" in r]


def test_an_unknown_row_lists_the_rows_of_the_config():
    proc = _cli("run", "-n", "--row", "splade-tiny/k3")
    assert proc.returncode == 2 and proc.stderr == (
        "lsrbench: error: command line: --row: 'splade-tiny/k3' is not a Table 1 row of config/config.yaml; its rows: "
        "splade-tiny/k1, splade-tiny/k16, splade-tiny+untie/k16, splade-tiny-x10/k1, splade-tiny-x10/k16, BM25\n")
