"""What ``lsrbench run`` builds, checked before snakemake starts: a mistyped report or ``--row`` is one line
listing the valid ones."""

from __future__ import annotations

from pathlib import Path

from lsrbench.errors import InputError

__all__ = ["check_targets", "table_rows", "row_targets_of"]


def _report_targets(config: dict) -> list[str]:
    from lsrbench.report.reports import report_outputs
    from lsrbench.ops.probe import probe_targets

    return [path for path in report_outputs(config) if "/manifests/" not in path] + probe_targets()


def check_targets(targets: list[str], config: dict, files: list[str]) -> None:
    """Refuse a ``results/NAME`` target no report of ``config`` writes; other targets go to snakemake as they
    are."""
    reports = _report_targets(config)
    for target in targets:
        if Path(target).parent == Path("results") and target not in reports:
            raise InputError("command line", "TARGET", f"'{target}' is not a file {', '.join(files)} makes; its "
                                                       f"reports: {', '.join(reports)}")


def table_rows(config: dict) -> list[str]:
    """Table 1's rows of ``config`` as ``--row`` takes them: RUN/kK, and BM25 where the table has it."""
    from lsrbench.config.grid import runs
    from lsrbench.names import BM25

    return [f"{run}/k{k}" for run, k in runs(config)] + ([BM25] if config["report"]["bm25"] else [])


def row_targets_of(rows: list[str], files: list[str], command_line: dict) -> list[str]:
    """``--row RUN/kK``: the files that Table 1 row is read from; an unknown row is one line listing the
    config's."""
    from lsrbench.dag.fingerprint import FileDigests
    from lsrbench.report.reports.collect import row_targets
    from lsrbench.names import BM25
    from lsrbench.ops.gc import config_layout

    layout = config_layout(files, command_line or None, "results",
                           FileDigests(Path("results") / ".cache" / "file-digests.json"))
    targets = []
    for row in rows:
        run, _, k = row.rpartition("/k") if row != BM25 else (BM25, "", "-")
        found = row_targets(layout, run, k) if run else []
        if not found:
            raise InputError("command line", "--row", f"'{row}' is not a Table 1 row of {', '.join(files)}; its rows: "
                                                      f"{', '.join(table_rows(layout.config))}")
        targets += found
    return targets
