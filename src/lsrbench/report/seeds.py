"""Training-seed variance (``recipe.seeds``): with several seeds each (backbone, mode, k) is trained once per seed,
and a verdict about the recipe ("RoBERTa's best k is 2", arXiv 2606.18811) has the seed noise in it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from lsrbench.names import METRIC_COLUMNS, NO_SEED, RUN_COLUMN, SEED

__all__ = ["is_seeded", "seeds_of", "seed_order", "seed_mean", "per_seed", "spread", "run_seeds", "mean_perquery",
           "mean_train_logs", "by_model", "read_mean_train_logs"]

_MEAN_KEYS = [RUN_COLUMN, "k", "dataset", "measure"]


def is_seeded(metrics: pd.DataFrame) -> bool:
    """Whether a metrics frame has per-seed rows (metrics.csv of a config with several seeds)."""
    return SEED in metrics.columns


def seed_order(seed: str) -> float:
    """Sort key of a seed as metrics.csv writes it: numbers ascending, :data:`NO_SEED` first."""
    return -1.0 if seed == NO_SEED else float(seed)


def seeds_of(metrics: pd.DataFrame) -> list[str]:
    """The training seeds of a seeded frame, ascending ([] without a seed column)."""
    if not is_seeded(metrics):
        return []
    return sorted((s for s in metrics[SEED].unique() if s != NO_SEED), key=seed_order)


def run_seeds(rows: pd.DataFrame) -> list[str]:
    """The seeds one run's rows come from (``[NO_SEED]`` for BM25 or a released checkpoint; ``[]``
    without a seed column)."""
    return sorted(rows[SEED].unique(), key=seed_order) if is_seeded(rows) else []


def seed_mean(metrics: pd.DataFrame) -> pd.DataFrame:
    """metrics.csv as every report reads it: one row per (backbone, k, dataset, measure), the mean over the run's
    seeds (its own row for BM25 and released checkpoints); a row that some seed of the run lacks is left out, as
    a table cell is."""
    if not is_seeded(metrics):
        return metrics
    seeds = metrics.groupby([RUN_COLUMN, "k"], sort=False)[SEED].transform("nunique")
    grouped = metrics.assign(_seeds=seeds).groupby(_MEAN_KEYS, sort=False, as_index=False).agg(
        value=("value", "mean"), _rows=("value", "size"), _seeds=("_seeds", "first"))
    return grouped[grouped["_rows"] == grouped["_seeds"]][METRIC_COLUMNS].reset_index(drop=True)


def per_seed(metrics: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Each seed's own metrics (its rows and the unseeded ones: BM25, released checkpoints), as a
    one-seed metrics.csv; {} without a seed column."""
    return {s: metrics[metrics[SEED].isin([s, NO_SEED])][METRIC_COLUMNS].reset_index(drop=True)
            for s in seeds_of(metrics)}


def spread(values) -> float | None:
    """The sample standard deviation (n - 1) of per-seed values; None under two values."""
    values = [float(v) for v in values]
    return float(np.std(values, ddof=1)) if len(values) >= 2 else None


def by_model(keyed: dict[tuple, object], fields: int) -> dict[tuple, list]:
    """Files or frames keyed ``(run, k, seed, *rest)`` (several seeds) grouped as ``(run, k, *rest)
    -> [one per seed]``; keys of ``fields`` entries without a seed (one seed) as ``[value]``."""
    grouped: dict[tuple, list] = {}
    for key, value in keyed.items():
        plain = key if len(key) == fields else (*key[:2], *key[3:])
        grouped.setdefault(plain, []).append(value)
    return grouped


def mean_perquery(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Per-query scores (``query_id, measure, value``) averaged over seeds: the score of each query
    that every seed scored, in the first seed's query order. One frame: itself."""
    if len(frames) == 1:
        return frames[0]
    stacked = pd.concat(frames, ignore_index=True)
    grouped = stacked.groupby(["query_id", "measure"], sort=False)["value"]
    out = grouped.agg(["mean", "count"]).reset_index()
    out = out[out["count"] == len(frames)].rename(columns={"mean": "value"})
    return out[["query_id", "measure", "value"]].reset_index(drop=True)


def _mean(values: list) -> float | None:
    if any(v is None for v in values):
        return None
    return float(np.mean(values)) if all(math.isfinite(v) for v in values) else math.nan


def mean_train_logs(logs: list[list[dict]]) -> list[dict]:
    """Training logs averaged over seeds, step by step: each numeric value the mean over the seeds (NaN where a
    seed's is not finite, so a curve stops where any seed collapsed), at the steps every seed logged."""
    if len(logs) == 1:
        return logs[0]
    steps = set.intersection(*({row["step"] for row in log} for log in logs))
    by_step = [{row["step"]: row for row in log} for log in logs]
    out = []
    for step in sorted(steps):
        rows = [b[step] for b in by_step]
        keys = [k for k in rows[0] if k != "step" and all(isinstance(r.get(k), (int, float, type(None))) for r in rows)]
        out.append({"step": step, **{k: _mean([r.get(k) for r in rows]) for k in keys}})
    return out


def read_mean_train_logs(log_files: dict[tuple, str]) -> dict[tuple, list[dict]]:
    """``{(run, k): its training log's rows}`` from ``{(run, k[, seed]): train_log.jsonl}``: with
    several seeds, their mean step by step (:func:`mean_train_logs`)."""
    from lsrbench.model.train_log import read_train_log

    return {key: mean_train_logs([read_train_log(p) for p in paths]) for key, paths in by_model(log_files, 2).items()}
