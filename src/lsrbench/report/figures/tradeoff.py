"""The effectiveness/FLOPs plane of the paper's tradeoff plot (NanoBEIR nDCG@10 against FLOPs, arXiv 2606.18811):
one point per run."""

from __future__ import annotations

import pandas as pd

from lsrbench.names import BM25, COLLAPSED, FLOPS, POOLED, RUN_COLUMN
from lsrbench.report.results import flops_datasets

__all__ = ["tradeoff_datasets", "tradeoff_points"]


def tradeoff_datasets(metrics: pd.DataFrame, report_cfg: dict) -> list[str]:
    """The datasets the plane's score is averaged over: ``report.flops_datasets``, else every
    evaluated dataset of ``metrics``."""
    return list(report_cfg.get("flops_datasets") or sorted(set(metrics["dataset"].unique()) - {POOLED}))


def tradeoff_points(metrics: pd.DataFrame, report_cfg: dict) -> pd.DataFrame:
    """One point per finished, non-collapsed run: ``report.tradeoff_measure`` averaged over
    :func:`tradeoff_datasets`, FLOPs from :func:`lsrbench.report.results.flops_datasets` (pooled
    when there are several). Columns: backbone, k, flops, score."""
    measure = report_cfg["tradeoff_measure"]
    runs = metrics[metrics[RUN_COLUMN] != BM25]
    sel = runs[runs["dataset"].isin(tradeoff_datasets(metrics, report_cfg)) & (runs["measure"] != FLOPS)]
    sel = pd.concat([sel, runs[runs["dataset"].isin(flops_datasets(metrics, report_cfg)) & (runs["measure"] == FLOPS)]])
    pivot = sel.pivot_table(index=[RUN_COLUMN, "k"], columns="measure", values="value", aggfunc="mean")
    if measure not in pivot.columns or FLOPS not in pivot.columns:
        return pd.DataFrame(columns=[RUN_COLUMN, "k", "flops", "score"])
    pts = pivot.reset_index()
    if COLLAPSED in pts.columns:
        pts = pts[~(pts[COLLAPSED] > 0)]
    return pd.DataFrame({RUN_COLUMN: pts[RUN_COLUMN], "k": pts["k"], "flops": pts[FLOPS], "score": pts[measure]}).dropna()
