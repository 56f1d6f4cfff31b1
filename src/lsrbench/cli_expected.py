"""``expected`` (a results folder against the config's expected values, with a reproduction-log entry) and
``cells`` (one command per Table 1 row and claim); apart from cli.py for its size."""

from __future__ import annotations

import json
from pathlib import Path

from lsrbench.cli_errors import path_argument
from lsrbench.cli_options import add_results_option, results_folder
from lsrbench.errors import InputError

__all__ = ["add_expected_parsers"]


def _expected(args) -> int:
    from lsrbench.report.verify.expected import (FAIL, OK, check_folder, check_lines, counts_text, find_expected,
                                                 folder_config, load_expected, summary_line)

    results = results_folder(args, "expected")
    path = Path(args.expected) if args.expected else find_expected(results)
    expected = load_expected(path)
    checks = check_folder(results, expected)
    config = folder_config(results)
    if expected.get("config_id") and config.get("id") and config["id"] != expected["config_id"]:
        print(f"note: {results} was made with config {config['id']} ({', '.join(config.get('files') or [])}); these "
              f"expected values are for config {expected['config_id']} ({expected['config']}): a setting that changed "
              "changes the numbers it decides")
    for line in check_lines(checks):
        print(line)
    summary = summary_line(checks, results, path)
    print(summary)
    if args.log_entry:
        from lsrbench.report.verify.reproduction import log_entry

        print("\nA reproduction-log entry for this folder (append it to docs/reproductions.md; notes: how it was run):")
        print(log_entry(results, f"{counts_text(checks)} ({path.name})", config))
    if not any(c.status in (OK, FAIL) for c in checks):
        raise InputError(results, None, "no number of it could be checked against the expected values")
    return 1 if any(c.status == FAIL for c in checks) else 0


def _cells(args) -> int:
    from lsrbench.cli_options import command_line_config, config_files, load_config
    from lsrbench.ops.cells import cells_page
    from lsrbench.report.verify.expected import load_expected

    files = config_files(args)
    config, config_file = load_config(files, check_files=False, command_line=command_line_config(args))[0], files[-1]
    expected = load_expected(args.expected) if args.expected else None
    plan = None
    if args.plan:
        try:
            plan = json.loads(Path(args.plan).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(args.plan, None, f"not a plan of lsrbench plan --json: {exc}") from None
        from lsrbench.ops.plan import check_publishable

        check_publishable(plan, args.plan)  # a calibration made under load is not published
    print(cells_page(config, config_file, expected, plan, args.expected, args.plan), end="")
    return 0


def add_expected_parsers(sub, configfile_option) -> None:
    """The ``expected`` and ``cells`` subcommands."""
    p = sub.add_parser("expected", help="check a finished results folder against the values its config is expected "
                                        "to give", description="Compare every number of the folder's Table 1 and "
                       "every tested claim's difference with the expected values of its config (config/expected/, "
                       "docs/expected.md). Each line names the tier it was held to: [OK] exact where the folder has a "
                       "recorded seed's own value, [FAIL] exact where it misses it on a CPU model that reproduces "
                       "the record's bits; elsewhere its basis (seeds: the seeds' 95 % prediction interval; "
                       "deterministic), with a joint check over the runs; the claims' recorded verdicts; [--] for "
                       "what it cannot check (yet). Exit status 1 on any FAIL.")
    add_results_option(p)
    p.add_argument("--expected", metavar="FILE", type=path_argument("--expected"),
                   help="the expected-values file (default: the one under config/expected/ for the folder's config)")
    p.add_argument("--log-entry", action="store_true",
                   help="also print a ready reproduction-log entry for the folder (docs/reproductions.md)")
    p.set_defaults(func=_expected)

    p = sub.add_parser("cells", help="one command per Table 1 row and claim, with its expected value and cost",
                       description="Print (Markdown) for every Table 1 row and every claim of a config the command "
                                   "that builds it alone (lsrbench run --row), its expected value (--expected) and "
                                   "its cost (--plan: a plan written by lsrbench plan --json). docs/cells-tiny.md and "
                                   "docs/cells-paper.md are its output for the two configs of this repository.")
    configfile_option(p)
    p.add_argument("--expected", metavar="FILE", type=path_argument("--expected"), help="the config's expected values")
    p.add_argument("--plan", metavar="FILE", type=path_argument("--plan"), help="the config's plan (lsrbench plan --json)")
    p.set_defaults(func=_cells)
