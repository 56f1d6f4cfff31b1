"""``lsrbench gc`` (:mod:`lsrbench.cli`): list or remove the outputs no current config refers to
(:mod:`lsrbench.ops.gc`). Apart from cli.py only for its size."""

from __future__ import annotations

from lsrbench.cli_options import (DEFAULT_CONFIG, add_config_options, add_mirror_option, add_results_option,
                                  command_line_config, config_files, results_folder)
from lsrbench.errors import OneLineError

__all__ = ["add_gc_parser"]


def _gc(args) -> int:
    from lsrbench.ops.gc import current_folders, find_garbage, human, remove_garbage, report_folders

    files = config_files(args)
    results = results_folder(args, "gc")
    args.delete and _refuse_while_locked(results)  # before the (slow) layouts, and again before removing
    keep = current_folders(files, command_line_config(args), results)
    if not args.ignore_reports:
        reported = report_folders(results) - keep
        if reported:
            print(f"keeping {len(reported)} folder(s) the reports in {results} were made from (another config's "
                  "runs): --ignore-reports to treat them as the others")
        keep |= reported
    garbage = find_garbage(results, keep)
    verb = "removed" if args.delete else "would remove"
    args.delete and _refuse_while_locked(results)
    for item in garbage:
        print(f"{verb}: {item.path} ({human(item.bytes)})")
    if args.delete:
        remove_garbage(results, garbage)
    total = human(sum(item.bytes for item in garbage))
    print(f"{results}: {len(garbage)} folder(s) no config of {', '.join(files)} refers to, {total}"
          + ("" if args.delete or not garbage else "; run again with --delete to remove them"))
    return 0


def _refuse_while_locked(results: str) -> None:
    from pathlib import Path

    from lsrbench.locks import lock_holder, lock_line

    workdir = Path(results).resolve().parent  # the folder snakemake runs in
    holder = lock_holder(workdir)
    if holder is not None:
        raise OneLineError(lock_line(workdir, holder, "gc --delete removes nothing"))


def add_gc_parser(sub) -> None:
    p = sub.add_parser("gc", help="list (default) or remove (--delete) outputs no current config refers to",
                       description="A config edit computes new outputs beside the finished ones (content-addressed "
                                   "folders, docs/results-layout.md). List every output folder under the results "
                                   "folder that no given config refers to, with sizes; --delete removes them. "
                                   "Run it from the folder snakemake runs in.")
    add_config_options(p, f"a current config (default: {DEFAULT_CONFIG}); repeat it for several configs, each kept "
                          "(not merged, unlike the other subcommands)")
    add_mirror_option(p, "the mirror folder the configs run with (--config mirror=DIR)")
    add_results_option(p)
    p.add_argument("--delete", action="store_true", help="remove them (default: only list them)")
    p.add_argument("--ignore-reports", action="store_true",
                   help="do not keep what the reports in the results folder were made from (kept by default, "
                        "whichever configs are given, so that lsrbench verify keeps passing on them)")
    p.set_defaults(func=_gc)
