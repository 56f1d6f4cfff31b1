"""The options every subcommand spells one way: ``--results DIR``, ``--mirror DIR``, ``--configfile FILE`` with
``--config KEY=VALUE``. Earlier spellings still work with a one-line note."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lsrbench.cli_errors import check_config_key, default_config, path_argument
from lsrbench.errors import InputError

__all__ = ["DEFAULT_CONFIG", "load_config", "config_files", "config_overrides", "RESULTS", "add_results_option", "add_mirror_option", "results_folder", "workdir_of", "mirror_of",
           "deprecated", "add_config_options", "command_line_config", "config_pairs"]

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


def mirror_of(args, overrides: dict | None = None) -> str | None:
    """``--mirror``, else ``mirror=`` of ``--config`` (``overrides``); both, if they differ, is one line."""
    given = (overrides or {}).get("mirror")
    if args.mirror and given is not None and str(given) != args.mirror:
        raise InputError("command line", "--mirror", f"'{args.mirror}' and --config mirror={given}: give one of them")
    return args.mirror if args.mirror is not None else (None if given is None else str(given))


def add_config_options(p, configfile_help: str | None = None) -> None:
    """``--configfile FILE`` (repeatable) and ``--config KEY=VALUE ...``, as snakemake takes them."""
    p.add_argument("--configfile", action="append", metavar="FILE", type=path_argument("--configfile"),
                   help=configfile_help or f"the run config (default: {DEFAULT_CONFIG}); repeat it for several files, "
                                           "merged in order; a file may start with 'base: FILE' to add to another config")
    p.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE",
                   help="top-level settings over the config files, as snakemake --config takes them (mirror=DIR, ...)")


def command_line_config(args) -> dict:
    """The ``--config`` values of ``args`` with ``--mirror`` among them, as the Snakefile merges them."""
    values = config_overrides(args.config)
    mirror = mirror_of(args, values) if hasattr(args, "mirror") else None
    return {**values, **({"mirror": mirror} if mirror is not None else {})}


def config_pairs(values: dict) -> list[str]:
    """``values`` as snakemake ``--config`` arguments (null: an empty value)."""
    return [f"{key}=" if value is None else f"{key}={value}" for key, value in values.items()]


def load_config(files: list[str], check_files: bool = True, command_line: dict | None = None) -> tuple[dict, list[str]]:
    """The checked config of ``files`` with ``command_line`` on top, and every file read; ``check_files`` also
    requires the folders it names."""
    from lsrbench.config.layers import load_config_files, locate_config_paths, workflow_dir
    from lsrbench.validation.config import check_config

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
    """``--config key=value`` as Snakemake reads it (empty is null); a key Snakemake would refuse with a
    traceback is one line here."""
    import yaml

    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError("command line", "--config", f"'{pair}' is not KEY=VALUE (as snakemake --config takes it)")
        check_config_key(pair)
        out[key] = yaml.safe_load(value) if value else None
    return out
