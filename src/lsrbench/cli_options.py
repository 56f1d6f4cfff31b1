"""The options every subcommand spells one way: the results folder ``--results DIR``, the mirror
``--mirror DIR``, the run config ``--configfile FILE``. Earlier spellings still work, each with a
one-line note naming the documented form: ``verify DIR`` (positional), ``-d/--directory DIR`` (the
folder snakemake runs in, of ``plan``, ``status`` and ``probe``: now ``--results DIR/results``) and
``--config mirror=DIR`` (of ``gc`` and ``status``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lsrbench.cli_errors import default_config, path_argument
from lsrbench.errors import InputError

__all__ = ["DEFAULT_CONFIG", "load_config", "config_files", "config_overrides", "RESULTS", "add_results_option", "add_mirror_option", "results_folder", "workdir_of", "mirror_of",
           "deprecated"]

RESULTS = "results"  # the folder the DAG writes, inside the directory snakemake runs in
DEFAULT_CONFIG = "config/config.yaml"


def deprecated(old: str, new: str) -> None:
    """The one line an earlier spelling prints (stderr), naming the documented one."""
    print(f"lsrbench: note: '{old}' still works; the documented form is '{new}'", file=sys.stderr)


def add_results_option(p, *, directory_alias: bool = False, positional_alias: bool = False) -> None:
    """``--results DIR`` (default ``results``), with the subcommand's earlier spelling as a hidden alias."""
    p.add_argument("--results", metavar="DIR", type=path_argument("--results"),
                   help=f"the results folder (default: {RESULTS})")
    if directory_alias:
        p.add_argument("-d", "--directory", dest="legacy_directory", type=path_argument("--directory"),
                       help=argparse.SUPPRESS)
    if positional_alias:
        p.add_argument("legacy_results", nargs="?", metavar="DIR", help=argparse.SUPPRESS)


def results_folder(args, command: str) -> str:
    """The results folder of ``args``: ``--results``, else an earlier spelling (with its note), else ``results``."""
    given = [name for name in ("results", "legacy_directory", "legacy_results") if getattr(args, name, None)]
    if len(given) > 1:
        raise InputError("command line", "--results", "the results folder is given twice: give --results DIR alone")
    if getattr(args, "legacy_results", None):
        deprecated(f"{command} {args.legacy_results}", f"{command} --results {args.legacy_results}")
        return args.legacy_results
    if getattr(args, "legacy_directory", None):
        folder = str(Path(args.legacy_directory) / RESULTS)
        deprecated(f"{command} -d {args.legacy_directory}", f"{command} --results {folder}")
        return folder
    return args.results or RESULTS


def workdir_of(results: str) -> str:
    """The directory snakemake runs in for a results folder (the DAG writes ``results/`` there)."""
    path = Path(results)
    if path.name != RESULTS:
        raise InputError("command line", "--results", f"'{results}': the workflow writes its results folder as "
                                                      f"'{RESULTS}' inside the directory it runs in: give .../{RESULTS}")
    return str(path.parent)


def add_mirror_option(p, help_text: str = "read models and data from this mirror folder (--config mirror=DIR)") -> None:
    p.add_argument("--mirror", metavar="DIR", type=path_argument("--mirror"), help=help_text)


def mirror_of(args, command: str, overrides: dict | None = None) -> str | None:
    """``--mirror``, else ``mirror=`` of ``--config`` (``overrides``; an earlier spelling, with its note)."""
    legacy = (overrides or {}).get("mirror")
    if args.mirror and legacy is not None and str(legacy) != args.mirror:
        raise InputError("command line", "--mirror", f"'{args.mirror}' and --config mirror={legacy}: give --mirror alone")
    if args.mirror is None and legacy is not None:
        deprecated(f"{command} --config mirror={legacy}", f"{command} --mirror {legacy}")
        return str(legacy)
    return args.mirror


def load_config(files: list[str], check_files: bool = True, command_line: dict | None = None) -> tuple[dict, list[str]]:
    """The checked config of ``files`` (each with its ``base:`` chain, then ``command_line`` values as
    ``--config`` gives them), and every file read; ``check_files``: also the dataset and model
    folders it names and the mirror, which must exist (lsrbench.dag.validate)."""
    from lsrbench.config.layers import load_config_files, locate_config_paths, workflow_dir
    from lsrbench.dag.validate import check_config

    config, origins, read = load_config_files(files, command_line)
    config = locate_config_paths(config, workflow_dir())  # as the Snakefile reads them (snakemake -d elsewhere)
    return check_config(config, files[-1], origins, files=check_files, mirror_must_exist=check_files), read


def config_files(args) -> list[str]:
    files = list(args.configfile or [])
    legacy = getattr(args, "legacy_configfile", None)
    if legacy:
        deprecated(f"check-config {legacy}", f"check-config --configfile {legacy}")
        files.append(legacy)
    return files or [default_config(DEFAULT_CONFIG)]


def config_overrides(pairs: list[str]) -> dict:
    """``--config key=value`` as Snakemake reads it (an empty value is null)."""
    import yaml

    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError("command line", "--config", f"'{pair}' is not KEY=VALUE (as snakemake --config takes it)")
        out[key] = yaml.safe_load(value) if value else None
    return out
