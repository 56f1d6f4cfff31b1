"""What each figure of the report shows, as data: the figures (:mod:`lsrbench.report.figures.plots`) draw exactly
these values, and each figure rule writes them beside its images as ``<figure>.data.json``
(:func:`write_figure_record`: the config it was made with, the files it read, the SHA-256 of the images), which
``lsrbench verify`` recomputes from the run files (:mod:`lsrbench.report.verify.reports`)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from lsrbench.atomic import atomic_open
from lsrbench.hashing import sha256_file
from lsrbench.model.auto_k import REPORTED_HEAD_STATISTICS
from lsrbench.model.losses import candidates_per_query
from lsrbench.names import BM25, POOLED, RUN_COLUMN, k_order, split_run_name
from lsrbench.report.results import best_ks, bm25_label, flops_datasets, label_notes, pareto_front, run_label
from lsrbench.report.figures.tradeoff import tradeoff_datasets, tradeoff_points

__all__ = ["FIGURE_RECORD", "tradeoff_data", "loss_data", "norms_data", "write_figure_record",
           "file_stamp"]

# <figure>.data.json beside each figure rule's images
FIGURE_RECORD = "{}.data.json"


def _number(x) -> float | None:
    return float(x) if x is not None and math.isfinite(float(x)) else None


def tradeoff_data(metrics: pd.DataFrame, report_cfg: dict, backbones: dict, chance: dict | None = None) -> dict:
    """The points of the tradeoff plot (one per finished, non-collapsed run, by backbone then k),
    which of them are on the Pareto frontier, the BM25 line, the chance line (a random ranking's
    expected score, from ``chance``: results/chance.json) and the notes on the marks of the labels."""
    from lsrbench.report.tables.chance import CHANCE_LABEL, column_chance

    measure = report_cfg["tradeoff_measure"]
    datasets = tradeoff_datasets(metrics, report_cfg)
    pts = tradeoff_points(metrics, report_cfg).reset_index(drop=True)
    pts = pts.assign(_k=pts["k"].map(k_order)).sort_values([RUN_COLUMN, "_k"], kind="stable").drop(columns="_k")
    keys = [f"{b}|{k}" for b, k in zip(pts[RUN_COLUMN], pts["k"])]
    front = set(pareto_front(list(zip(keys, pts["flops"], pts["score"]))))
    bm25_rows = metrics[(metrics[RUN_COLUMN] == BM25) & (metrics["measure"] == measure) & metrics["dataset"].isin(datasets)]
    return {
        "measure": measure, "datasets": datasets, "flops_pooled": flops_datasets(metrics, report_cfg) == [POOLED],
        "points": [{"run": b, "k": k, "label": run_label(b, backbones), "flops": float(f), "score": float(s),
                    "frontier": key in front}
                   for b, k, f, s, key in zip(pts[RUN_COLUMN], pts["k"], pts["flops"], pts["score"], keys)],
        "bm25": ({"label": bm25_label(report_cfg), "score": float(bm25_rows["value"].mean())} if len(bm25_rows) else None),
        "chance": ({"label": CHANCE_LABEL, "score": level.expected}
                   if (level := column_chance(chance, measure, datasets)) is not None else None),
        "notes": label_notes({b: backbones.get(split_run_name(b)[0], {}) for b in set(pts[RUN_COLUMN])}),
    }


def loss_data(runs: dict[str, dict[str, list]], backbones: dict, batch_size: int | None,
              key: str = "ranking_loss") -> dict:
    """The curves of the loss figure (``runs``: run -> k -> ``[(step, value), ...]``) and its chance
    level: the ranking loss of a model that scores every candidate of a query alike, ln of the
    candidates per query (:func:`lsrbench.model.losses.candidates_per_query`)."""
    candidates = candidates_per_query(batch_size) if batch_size else None
    return {
        "measure": key, "candidates_per_query": candidates,
        "chance_level": math.log(candidates) if candidates else None,
        "curves": [{"run": run, "k": k, "label": run_label(run, backbones), "steps": [int(s) for s, _ in pts],
                    "values": [_number(v) for _, v in pts]}
                   for run in runs for k, pts in sorted(runs[run].items(), key=lambda kv: k_order(kv[0]))],
    }


def norms_data(statistics: dict[str, dict], metrics: pd.DataFrame, report_cfg: dict, autos: dict[str, float]) -> dict:
    """Per backbone: the statistics the norms figure shows, the best k of the sweep and the auto k."""
    first = report_cfg["columns"][0]
    best = best_ks(metrics, first["measure"], first["datasets"])
    return {"backbones": [{"backbone": b, **{s: _number(stats.get(s)) for s in REPORTED_HEAD_STATISTICS},
                           "best_k": best.get(b), "auto_k": _number(autos.get(b))} for b, stats in statistics.items()]}


def file_stamp(path: str) -> dict:
    return {"sha256": sha256_file(path), "bytes": Path(path).stat().st_size}


def write_figure_record(path: str, config: dict | None, outputs: list[str], sources: dict, data: dict) -> None:
    """``<figure>.data.json``: ``data`` (what the figure shows), the config it was made with, the
    files it read (``sources``: a path, or ``[key..., path]`` rows) and the SHA-256 of ``outputs``
    (its images, written before this)."""
    record = {"format": 1, "manifest": str(path), "config": config, "sources": sources,
              "outputs": {str(out): file_stamp(out) for out in outputs}, "data": data}
    with atomic_open(path, "w", encoding="utf-8") as fh:
        json.dump(record, fh, indent=1, ensure_ascii=False, allow_nan=False)
        fh.write("\n")
