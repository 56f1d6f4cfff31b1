"""Reading the results of a grid: ``results/metrics.csv`` (tidy rows, one per run, dataset and measure), the
per-run table every report is built from, and the best k of a run: the one definition used by Table 1's bold,
the norms report, the auto-k report and the claims."""

from __future__ import annotations

import numpy as np
import pandas as pd

from lsrbench.atomic import atomic_open
from lsrbench.names import (BM25, COLLAPSED, DEFAULT_MODE, DOC_DIMS, FLOPS, METRIC_COLUMNS, NO_SEED, POOLED, QUERY_DIMS,
                            RUN_COLUMN, SEED, SEEDED_METRIC_COLUMNS, k_order, k_value, split_run_name)

__all__ = ["OWN_COLUMNS", "collect_metrics", "read_metrics", "read_mean_metrics", "run_label", "bm25_label", "bm25_notes", "label_notes",
           "flops_datasets", "run_table", "collapsed_runs", "mean_score", "best_k", "swept_ks", "best_ks", "pareto_front"]


# Columns the tables make themselves (run_table's, Table 1's and table_beir's): a report column
# (report.columns[].name) may not take one of these names.
OWN_COLUMNS = (RUN_COLUMN, "k", "FLOPs", "q dims", "d dims", "collapsed", "Backbone", "q / d dims")


def collect_metrics(files: list[str], out_csv: str, seeds: dict[str, str] | None = None) -> pd.DataFrame:
    """Concatenate per-run tidy metric files into ``results/metrics.csv`` (deterministic order)."""
    frames = [pd.read_csv(f, sep="\t", dtype={RUN_COLUMN: str, "k": str, "dataset": str, "measure": str}) for f in files]
    columns = METRIC_COLUMNS if seeds is None else SEEDED_METRIC_COLUMNS
    if seeds is not None:
        frames = [frame.assign(**{SEED: str(seeds.get(f, NO_SEED))}) for f, frame in zip(files, frames)]
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
    df = df[columns]
    df["_bm25"] = df[RUN_COLUMN] != BM25
    df["_k"] = df["k"].map(k_order)
    order = ["_bm25", RUN_COLUMN, "_k", "dataset", "measure"]
    if seeds is not None:
        from lsrbench.report.seeds import seed_order

        df["_seed"] = df[SEED].map(seed_order)
        order.insert(3, "_seed")
    df = df.sort_values(order, kind="stable").drop(columns=[c for c in df.columns if c.startswith("_")])
    with atomic_open(out_csv, "w", encoding="utf-8", newline="") as fh:
        df.to_csv(fh, index=False, float_format="%.6g")
    return df


def read_metrics(path: str) -> pd.DataFrame:
    """results/metrics.csv as a frame (k, seed and names as text), per-seed rows as written."""
    return pd.read_csv(path, dtype={RUN_COLUMN: str, "k": str, SEED: str, "dataset": str, "measure": str})


def read_mean_metrics(path: str) -> pd.DataFrame:
    """metrics.csv as the reports read it: one row per run, dataset and measure, the mean over
    training seeds (:func:`lsrbench.report.seeds.seed_mean`; with one seed, the file as it is)."""
    from lsrbench.report.seeds import seed_mean

    return seed_mean(read_metrics(path))


def _one_row_per_run(metrics: pd.DataFrame) -> None:
    if SEED in metrics.columns:
        raise ValueError("metrics with per-seed rows: average them first (lsrbench.report.seeds.seed_mean)")


SYNTHETIC_NOTE = "† synthetic backbone: a real checkpoint with its head scaled at load (see config)."
RELEASED_NOTE = ("‡ released checkpoint (evaluate_only): a trained sparse encoder evaluated as released, at k = 1 "
                 "(head not rescaled), not trained here.")


def run_label(name: str, backbones: dict) -> str:
    """How a run is named in tables and figures: its backbone's label, the mode, a dagger for
    synthetic backbones, a double dagger for released (evaluate-only) ones."""
    base, mode = split_run_name(name)
    entry = backbones.get(base, {})
    label = entry.get("label", base)
    if mode != "shared":
        label = f"{label} [{mode}]"
    if entry.get("evaluate_only"):
        label = f"{label} ‡"
    return f"{label} †" if entry.get("synthetic") else label


def label_notes(backbones: dict) -> list[str]:
    """The footnotes of the marks :func:`run_label` puts on the backbones of a table."""
    return ([SYNTHETIC_NOTE] if any(e.get("synthetic") for e in backbones.values()) else []) + (
        [RELEASED_NOTE] if any(e.get("evaluate_only") for e in backbones.values()) else [])


def bm25_label(report_cfg: dict) -> str:
    """How the BM25 reference row is named: its analyzer and parameters (report.bm25_settings)."""
    settings = report_cfg["bm25_settings"]
    analyzer = {"anserini": "Anserini", "bm25s": "bm25s, unstemmed"}[settings["analyzer"]]
    return f"BM25 ({analyzer}, k1={settings['k1']:g}, b={settings['b']:g})"


def bm25_notes(report_cfg: dict) -> list[str]:
    """The note on BM25's row where the evaluated data are pooled (``bm25_pool_depth``, set from
    ``evaluation.pool_depth`` by :func:`lsrbench.report.config_record.report_settings`): the pool
    is chosen by BM25, and which way that can move the SPLADE runs' numbers."""
    depth = report_cfg.get("bm25_pool_depth")
    if not depth:
        return []
    return [f"BM25's row: every run is evaluated on a pooled subset, the judged documents and each query's "
            f"top-{depth} BM25 documents of the full collection (evaluation.pool_depth). The pool is chosen by "
            "BM25: its unjudged documents are BM25's own best candidates, and those only a SPLADE run would rank "
            "high are absent. That does not give BM25 its lead: a SPLADE run's scores do not depend on the "
            "collection, and removing unjudged documents can only raise its nDCG, RR and recall, so on the full "
            "collection it would score at most what it scores here."]


def flops_datasets(metrics: pd.DataFrame, report_cfg: dict) -> list[str]:
    """The metrics.csv datasets FLOPs and active dims are read from: the pooled rows
    (:data:`lsrbench.names.POOLED`, SparseNanoBEIREvaluator's pooling) when ``flops_datasets`` names
    several datasets, else that one dataset (default: the mean over every dataset)."""
    names = report_cfg.get("flops_datasets") or sorted(set(metrics["dataset"].unique()) - {POOLED})
    return [POOLED] if len(report_cfg.get("flops_datasets") or []) > 1 else list(names)


def run_table(metrics: pd.DataFrame, report_cfg: dict, backbones: dict) -> pd.DataFrame:
    """One row per (backbone, k): each configured column is the mean of its measure over its
    datasets; FLOPs and active dims come from :func:`flops_datasets`."""
    _one_row_per_run(metrics)
    rows = []
    flops_ds = flops_datasets(metrics, report_cfg)
    order = {name: i for i, name in enumerate(backbones)}
    for (run, k), grp in metrics.groupby([RUN_COLUMN, "k"], sort=False):
        row = {RUN_COLUMN: run, "k": k}
        for col in report_cfg["columns"]:
            sel = grp[(grp["measure"] == col["measure"]) & grp["dataset"].isin(col["datasets"])]
            row[col["name"]] = sel["value"].mean() if len(sel) == len(col["datasets"]) else np.nan
        for measure, name in ((FLOPS, "FLOPs"), (QUERY_DIMS, "q dims"), (DOC_DIMS, "d dims")):
            sel = grp[(grp["measure"] == measure) & grp["dataset"].isin(flops_ds)]
            row[name] = sel["value"].mean() if len(sel) else np.nan
        row["collapsed"] = bool((grp.loc[grp["measure"] == COLLAPSED, "value"] > 0).any())
        rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table["_order"] = [-1 if run == BM25 else order.get(split_run_name(run)[0], len(order))
                       + (0.5 if split_run_name(run)[1] != DEFAULT_MODE else 0) for run in table[RUN_COLUMN]]
    table["_k"] = table["k"].map(k_order)
    return table.sort_values(["_order", "_k"], kind="stable").drop(columns=["_order", "_k"]).reset_index(drop=True)


def collapsed_runs(metrics: pd.DataFrame) -> set[tuple[str, str]]:
    """(run, k) of every run whose ``collapsed`` row is set on some dataset."""
    flags = metrics[(metrics["measure"] == COLLAPSED) & (metrics["value"] > 0)]
    return set(zip(flags[RUN_COLUMN], flags["k"]))


def mean_score(metrics: pd.DataFrame, run: str, k: str, measure: str, datasets: list[str]) -> float | None:
    """Mean of ``measure`` over ``datasets`` for one run (the macro mean a table column shows);
    None unless every dataset has its row."""
    _one_row_per_run(metrics)
    sel = metrics[(metrics[RUN_COLUMN] == run) & (metrics["k"] == k) & (metrics["measure"] == measure)
                  & metrics["dataset"].isin(datasets)]
    if len(sel) != len(datasets):
        return None
    return float(sel["value"].mean())


def best_k(metrics: pd.DataFrame, run: str, measure: str, datasets: list[str]) -> str | None:
    """The best rescale factor of one run: the numeric k (``auto`` is not a candidate) with the highest
    :func:`mean_score`, collapsed runs excluded, the smallest k on ties; None when no k qualifies."""
    collapsed = collapsed_runs(metrics)
    scored = []
    for k in metrics.loc[metrics[RUN_COLUMN] == run, "k"].unique():
        if k_value(k) is None or (run, k) in collapsed:
            continue
        score = mean_score(metrics, run, k, measure, datasets)
        if score is not None and not np.isnan(score):
            scored.append((score, -k_value(k), k))
    return max(scored)[2] if scored else None


def swept_ks(metrics: pd.DataFrame, run: str) -> list[str]:
    """The numeric ks a run was trained at, collapsed ones included: with one alone (an ``untie``
    run at a single k, a released checkpoint) its best k was compared with nothing, so Table 1
    marks no best for it."""
    return [k for k in metrics.loc[metrics[RUN_COLUMN] == run, "k"].unique() if k_value(k) is not None]


def best_ks(metrics: pd.DataFrame, measure: str, datasets: list[str]) -> dict[str, str]:
    """:func:`best_k` of every run of ``metrics`` that has one (BM25 has none)."""
    out = {}
    for run in metrics.loc[metrics[RUN_COLUMN] != BM25, RUN_COLUMN].unique():
        k = best_k(metrics, run, measure, datasets)
        if k is not None:
            out[run] = k
    return out


def pareto_front(points: list[tuple[str, float, float]]) -> list[str]:
    """Names of the points not dominated by another (lower cost and higher score, one strictly)."""
    front = []
    for name, cost, score in points:
        dominated = any(c <= cost and s >= score and (c < cost or s > score) for n2, c, s in points if n2 != name)
        if not dominated:
            front.append(name)
    return front
