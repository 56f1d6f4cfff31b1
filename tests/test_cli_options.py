"""One spelling per option across the subcommands (the results folder ``--results DIR``, the mirror
``--mirror DIR``, the config ``--configfile FILE``); each earlier spelling still works and prints
one line naming the documented form."""

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
    assert ("--configfile" in options) == (command in CONFIG)
    assert not options & {"-d", "--directory"}  # the earlier spelling of the results folder's parent: hidden


def test_earlier_spellings_work_with_a_note(capsys):
    args = argparse.Namespace(results=None, legacy_results="out/res", legacy_directory=None)
    assert results_folder(args, "verify") == "out/res"
    assert capsys.readouterr().err == ("lsrbench: note: 'verify out/res' still works; the documented form is "
                                       "'verify --results out/res'\n")
    args = argparse.Namespace(results=None, legacy_directory="work")
    assert results_folder(args, "status") == "work/results" and workdir_of("work/results") == "work"
    assert "the documented form is 'status --results work/results'" in capsys.readouterr().err
    args = argparse.Namespace(mirror=None)
    assert mirror_of(args, "gc", {"mirror": "../shared"}) == "../shared"
    assert "the documented form is 'gc --mirror ../shared'" in capsys.readouterr().err
    assert results_folder(argparse.Namespace(results=None), "gc") == "results" and capsys.readouterr().err == ""


def test_conflicting_spellings_are_one_line():
    with pytest.raises(InputError, match="given twice"):
        results_folder(argparse.Namespace(results="a", legacy_results="b", legacy_directory=None), "verify")
    with pytest.raises(InputError, match="give --mirror alone"):
        mirror_of(argparse.Namespace(mirror="a"), "gc", {"mirror": "b"})
    with pytest.raises(InputError, match="workflow writes its results folder as 'results'"):
        workdir_of("somewhere/out")


def test_verify_positional_folder_still_verifies(tmp_path):
    """``lsrbench verify DIR`` (the spelling of earlier releases) checks DIR, with the note."""
    proc = lsrbench("verify", tmp_path / "results")
    assert "the documented form is 'verify --results" in proc.stderr
    assert str(tmp_path / "results") in proc.stderr  # it verified that folder (and names it)
