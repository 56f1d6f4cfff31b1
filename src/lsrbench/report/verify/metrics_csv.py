"""``lsrbench verify`` for metrics.csv: every row equals a row of a manifest-backed metrics.tsv it was
collected from (those its metrics.sources.json lists), and every row of those is in it."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from lsrbench.names import METRIC_COLUMNS, NO_SEED, SEEDED_METRIC_COLUMNS
from lsrbench.report.verify.trace import Trace, where

__all__ = ["check_metrics_csv"]


def _same_number(csv_text: str, value: float) -> bool:
    try:
        got = float(csv_text)
    except ValueError:
        return False
    if math.isnan(got) or math.isnan(value):
        return math.isnan(got) and math.isnan(value)
    return csv_text.strip() == f"{value:.6g}" or math.isclose(got, value, rel_tol=1e-5, abs_tol=1e-12)


def _collected(metrics_csv: Path, side: Path, trace: Trace) -> tuple[dict[Path, dict], dict[Path, str] | None]:
    if not side.is_file():
        return trace.backed, None
    try:
        record = json.loads(side.read_text(encoding="utf-8"))
        located = where(metrics_csv.parent, side, record["manifest"])
        listed = {located(p).resolve() for p in record["sources"]}
        seeds = ({located(p).resolve(): str(s) for p, s in record["seeds"].items()}
                 if "seeds" in record else None)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        trace.problems.append(f"{side}: unreadable ({' '.join(str(exc).split())}); every run file is traced instead")
        return trace.backed, None
    return {path: rows for path, rows in trace.backed.items() if path in listed}, seeds


def check_metrics_csv(metrics_csv: Path, sources_json: Path, trace: Trace) -> None:
    """Every row of metrics.csv equals a row of a manifest-backed metrics.tsv it was collected
    from, and every row of those is in metrics.csv."""
    if not metrics_csv.is_file():
        trace.problems.append(f"{metrics_csv}: missing")
        return
    collected, seeds = _collected(metrics_csv, sources_json, trace)
    columns = METRIC_COLUMNS if seeds is None else SEEDED_METRIC_COLUMNS
    # (backbone, k, (seed,) dataset) -> measure -> value
    by_run: dict[tuple[str, ...], dict[str, float]] = {}
    for path, rows in collected.items():
        for (b, k, d, m), v in rows.items():
            by_run.setdefault((b, k, d) if seeds is None else (b, k, seeds.get(path, NO_SEED), d), {})[m] = v
    seen: set[tuple[str, ...]] = set()
    try:
        with open(metrics_csv, encoding="utf-8", newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header != columns:
                trace.problems.append(f"{metrics_csv}: line 1: expected header {','.join(columns)}, got {header}"
                                      + ("" if seeds is None else f" (the seeds of {sources_json.name})"))
                return
            for lineno, row in enumerate(reader, 2):
                if row:
                    _check_metrics_row(metrics_csv, lineno, row, by_run, seen, trace, len(columns))
    except UnicodeDecodeError as exc:
        trace.problems.append(f"{metrics_csv}: not UTF-8 text (byte {exc.start}): cannot be traced")
        return
    except csv.Error as exc:
        trace.problems.append(f"{metrics_csv}: malformed CSV ({exc})")
        return
    for key, run in sorted(by_run.items()):
        missing = sorted(m for m in run if (*key, m) not in seen)
        if missing:
            trace.problems.append(f"{metrics_csv}: no row for {', '.join(missing)} of {_run_text(key)} "
                                  "(stale: re-run the collect rule)")


def _run_text(key: tuple) -> str:
    return f"backbone {key[0]}, k {key[1]}, " + (f"seed {key[2]}, " if len(key) == 4 else "") + f"dataset {key[-1]}"


def _check_metrics_row(metrics_csv: Path, lineno: int, row: list[str], by_run: dict, seen: set, trace: Trace,
                       width: int) -> None:
    trace.counts["metric_rows"] += 1
    if len(row) != width:
        trace.problems.append(f"{metrics_csv}: line {lineno}: expected {width} fields, got {len(row)}")
        return
    *key, m, v = row
    key = tuple(key)
    seen.add((*key, m))
    run = by_run.get(key)
    problem = None
    if run is None:
        problem = f"no manifest-backed metrics.tsv for {_run_text(key)}"
    elif m not in run:
        problem = f"measure {m} is not in the metrics.tsv of {_run_text(key)}"
    elif not _same_number(v, run[m]):
        problem = f"{m} = {v} but the run's metrics.tsv has {run[m]!r} ({_run_text(key)})"
    if problem:
        trace.problems.append(f"{metrics_csv}: line {lineno}: {problem}")
    trace.traced[(*key, m)] = (lineno, problem is None)
