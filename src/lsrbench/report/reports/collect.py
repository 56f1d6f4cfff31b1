"""metrics.csv: every metric file of the config's runs in one table, and metrics.sources.json: which
files those were (results/ also holds other configs' runs), which ``lsrbench verify`` traces it to."""

from __future__ import annotations

from lsrbench.config.grid import several_seeds
from lsrbench.dag.report_rule import Report, Shown
from lsrbench.dag.stage import as_list
from lsrbench.report.config_record import config_record, keyed
from lsrbench.report.reports.inputs import bm25_metric_files, run_metric_files

__all__ = ["REPORT", "METRICS_CSV", "SOURCES_JSON", "report_collect", "row_targets", "metrics"]

METRICS_CSV, SOURCES_JSON = "metrics.csv", "metrics.sources.json"


def report_collect(metric_files, metrics_csv: str, sources_json: str, config_yaml: str | None = None,
                   seeded_files=None) -> None:
    """metrics.csv and metrics.sources.json; ``seeded_files`` (``[run, k, seed, dataset, path]``,
    several training seeds): each file's seed, metrics.csv's seed column."""
    from lsrbench.provenance import write_json
    from lsrbench.report.results import collect_metrics

    files = as_list(metric_files)
    seeds = {path: str(key[2]) for key, path in keyed(seeded_files).items()} if seeded_files else None
    collect_metrics(files, metrics_csv, seeds)
    write_json(sources_json, {"manifest": sources_json, "metrics_csv": metrics_csv, "sources": files,
                              "config": config_record(config_yaml), **({"seeds": seeds} if seeds else {})})


def row_targets(layout, run: str, k: str) -> list[str]:
    """The files of Table 1's row (``run``, ``k``), every seed's (``lsrbench run --row``); BM25's
    for ``run`` BM25; empty when the row is not the config's."""
    from lsrbench.names import BM25

    if run == BM25:
        return bm25_metric_files(layout)
    return [row[-1] for row in run_metric_files(layout) if row[0] == run and str(row[1]) == str(k)]


def metrics(layout) -> dict:
    return {"metrics_csv": f"{layout.results}/{METRICS_CSV}"}


def verify_collect(root, stated, trace) -> None:
    """Every row of metrics.csv traced to a manifest-backed run file, and back."""
    from lsrbench.report.verify.metrics_csv import check_metrics_csv

    check_metrics_csv(root / METRICS_CSV, root / SOURCES_JSON, trace)


REPORT = Report(
    name="collect", job=report_collect,
    outputs={"metrics_csv": METRICS_CSV, "sources_json": SOURCES_JSON},
    files=lambda L: {"metric_files": [row[-1] for row in run_metric_files(L)] + bm25_metric_files(L)},
    keyed=lambda L: {"seeded_files": run_metric_files(L)} if several_seeds(L.config) else {},
    shown={"metrics_csv": Shown("Tables", "metrics", "Every number (metrics.csv)", 8)},
    stated_in=("sources_json",),
    verify=verify_collect,
)
