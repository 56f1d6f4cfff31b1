"""Tidy metric files: ``metrics.tsv`` (one row per run, k, dataset, measure) and ``perquery.tsv``, values
written with ``repr`` so they read back identical."""

from __future__ import annotations

import csv
import os

from lsrbench.atomic import atomic_open
from lsrbench.names import METRIC_COLUMNS, PERQUERY_COLUMNS

__all__ = ["write_metric_rows", "read_metrics_tsv"]


def write_metric_rows(metrics_out: str | os.PathLike, perquery_out: str | os.PathLike | None, run: str, k: str,
                      dataset: str, rows, per_query=None) -> None:
    """Write ``rows`` (and ``per_query`` when ``perquery_out`` is given), atomically."""
    with atomic_open(metrics_out, "w", encoding="utf-8") as fh:
        fh.write("\t".join(METRIC_COLUMNS) + "\n")
        for measure, value in rows:
            fh.write(f"{run}\t{k}\t{dataset}\t{measure}\t{value!r}\n")
    if perquery_out is None:
        return
    with atomic_open(perquery_out, "w", encoding="utf-8") as fh:
        fh.write("\t".join(PERQUERY_COLUMNS) + "\n")
        for qid, measure, value in per_query or []:
            fh.write(f"{qid}\t{measure}\t{value!r}\n")


def read_metrics_tsv(path: str | os.PathLike) -> tuple[dict[tuple[str, str, str, str], float], list[str]]:
    """A ``metrics.tsv`` as ``{(run, k, dataset, measure): value}`` and one line per problem found."""
    rows: dict[tuple[str, str, str, str], float] = {}
    problems: list[str] = []
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            reader = csv.reader(fh, delimiter="\t")
            header = next(reader, None)
            if header != METRIC_COLUMNS:
                return rows, [f"{path}: line 1: expected header {' '.join(METRIC_COLUMNS)}"]
            for lineno, row in enumerate(reader, 2):
                if len(row) != len(METRIC_COLUMNS):
                    problems.append(f"{path}: line {lineno}: expected {len(METRIC_COLUMNS)} fields, got {len(row)}")
                    continue
                try:
                    rows[tuple(row[:4])] = float(row[4])
                except ValueError:
                    problems.append(f"{path}: line {lineno}: value {row[4]!r} is not a number")
    except UnicodeDecodeError as exc:
        problems.append(f"{path}: not UTF-8 text (byte {exc.start})")
    except OSError as exc:
        problems.append(f"{path}: unreadable ({exc.strerror or exc})")
    return rows, problems
