"""The report's figures: effectiveness against FLOPs with the Pareto frontier (the paper's
NanoBEIR nDCG@10-vs-FLOPs plot), training loss curves, and head norms with the best k."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from lsrbench.atomic import atomic_path
from lsrbench.model.train_log import log_losses, read_train_log
from lsrbench.names import BM25, COLLAPSED, FLOPS, POOLED, k_order, split_run_name
from lsrbench.report.results import best_ks, flops_datasets, pareto_front, read_metrics, run_label

__all__ = ["tradeoff_points", "plot_tradeoff", "plot_loss_curves", "plot_norms"]


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, outputs: list[str]) -> None:
    for out in outputs:
        with atomic_path(out) as tmp:
            fig.savefig(tmp, format=Path(out).suffix.lstrip("."), metadata={"Software": None, "CreationDate": None} if out.endswith(".pdf") else {"Software": None})


def tradeoff_points(metrics: pd.DataFrame, report_cfg: dict) -> pd.DataFrame:
    """One point per finished, non-collapsed run: the tradeoff measure averaged over
    ``flops_datasets``, FLOPs from :func:`flops_datasets` (pooled when there are several)."""
    measure = report_cfg["tradeoff_measure"]
    datasets = report_cfg.get("flops_datasets") or sorted(set(metrics["dataset"].unique()) - {POOLED})
    runs = metrics[metrics["backbone"] != BM25]
    sel = runs[runs["dataset"].isin(datasets) & (runs["measure"] != FLOPS)]
    sel = pd.concat([sel, runs[runs["dataset"].isin(flops_datasets(metrics, report_cfg)) & (runs["measure"] == FLOPS)]])
    pivot = sel.pivot_table(index=["backbone", "k"], columns="measure", values="value", aggfunc="mean")
    if measure not in pivot.columns or FLOPS not in pivot.columns:
        return pd.DataFrame(columns=["backbone", "k", "flops", "score"])
    pts = pivot.reset_index()
    if COLLAPSED in pts.columns:
        pts = pts[~(pts[COLLAPSED] > 0)]
    return pd.DataFrame({"backbone": pts["backbone"], "k": pts["k"], "flops": pts[FLOPS], "score": pts[measure]}).dropna()


def plot_tradeoff(metrics_csv: str, report_cfg: dict, backbones: dict, out_png: str, out_pdf: str | None = None) -> None:
    """FLOPs (x, log scale) against the tradeoff measure, one marker per run coloured by backbone,
    k annotated, the Pareto frontier (lower FLOPs, higher score) drawn."""
    plt = _plt()
    metrics = read_metrics(metrics_csv)
    measure = report_cfg["tradeoff_measure"]
    datasets = report_cfg.get("flops_datasets") or sorted(set(metrics["dataset"].unique()) - {POOLED})
    pts = tradeoff_points(metrics, report_cfg)
    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=150)
    markers = "osD^vP*Xh<>"
    names = list(dict.fromkeys(pts["backbone"]))
    for i, name in enumerate(names):
        mine = pts[pts["backbone"] == name].assign(_k=lambda d: d["k"].map(k_order)).sort_values("_k")
        ax.scatter(mine["flops"], mine["score"], marker=markers[i % len(markers)], s=36, label=run_label(name, backbones), zorder=3)
        for _, p in mine.iterrows():
            ax.annotate(f"k={p['k']}", (p["flops"], p["score"]), textcoords="offset points", xytext=(4, 4), fontsize=7)
    if len(pts):
        keys = [f"{b}|{k}" for b, k in zip(pts["backbone"], pts["k"])]
        front = set(pareto_front(list(zip(keys, pts["flops"], pts["score"]))))
        fp = pts[[key in front for key in keys]].sort_values("flops")
        ax.step(fp["flops"], fp["score"], where="post", color="grey", linestyle="--", linewidth=1, label="Pareto frontier", zorder=2)
    bm25 = metrics[(metrics["backbone"] == BM25) & (metrics["measure"] == measure) & metrics["dataset"].isin(datasets)]
    if len(bm25):
        ax.axhline(bm25["value"].mean(), color="black", linewidth=0.8, linestyle=":", label="BM25 (bm25s)")
    if len(pts) and (pts["flops"] > 0).all():
        from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
    pooled = flops_datasets(metrics, report_cfg) == [POOLED]
    ax.set_xlabel("FLOPs per query-document pair (" + ("pooled over " if pooled else "") + ", ".join(datasets) + ")")
    ax.set_ylabel(f"{measure} (mean over {', '.join(datasets)})")
    ax.set_title("Effectiveness vs. efficiency per (backbone, k)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    _save(fig, [out_png] + ([out_pdf] if out_pdf else []))
    plt.close(fig)


def plot_loss_curves(log_files: dict[str, str], backbones: dict, out_png: str, key: str = "ranking_loss") -> None:
    """Training loss per step, one panel per run name, one line per k (log y where positive)."""
    plt = _plt()
    runs: dict[str, dict[str, list]] = {}
    for run_k, path in log_files.items():
        run, k = run_k.rsplit("|", 1)
        runs.setdefault(run, {})[k] = log_losses(read_train_log(path), key)
    def order(run: str):
        base = split_run_name(run)[0]
        return (list(backbones).index(base) if base in backbones else 99, run)

    # released (evaluate-only) runs have no training log: no panel
    names = sorted((r for r in runs if any(runs[r].values())), key=order)
    fig, axes = plt.subplots(1, max(1, len(names)), figsize=(4.2 * max(1, len(names)), 3.4), dpi=130, squeeze=False)
    for ax, name in zip(axes[0], names):
        positive = True
        for k in sorted(runs[name], key=k_order):
            pts = runs[name][k]
            if pts:
                steps, vals = zip(*pts)
                positive &= all(v > 0 for v in vals)
                ax.plot(steps, vals, label=f"k={k}", linewidth=1)
        if positive and any(runs[name].values()):
            ax.set_yscale("log")
        ax.set_title(run_label(name, backbones), fontsize=8)
        ax.set_xlabel("step")
        ax.set_ylabel(key.replace("_", " "))
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    _save(fig, [out_png])
    plt.close(fig)


def plot_norms(norm_files: dict[str, str], metrics_csv: str, report_cfg: dict, backbones: dict, out_png: str) -> None:
    """Head Frobenius norm per backbone (log scale), annotated with the best k found."""
    plt = _plt()
    first_col = report_cfg["columns"][0]
    best = best_ks(read_metrics(metrics_csv), first_col["measure"], first_col["datasets"])
    names = list(norm_files)
    values = [json.loads(Path(norm_files[n]).read_text())["frobenius_norm"] for n in names]
    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(names) + 2), 3.6), dpi=130)
    bars = ax.bar(range(len(names)), values, color="tab:blue")
    for bar, name in zip(bars, names):
        ax.annotate(f"best k = {best.get(name, '–')}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center", va="bottom", fontsize=7, textcoords="offset points", xytext=(0, 2))
    ax.set_xticks(range(len(names)), [run_label(n, backbones) for n in names], rotation=20, ha="right", fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("‖W_head‖_F (as loaded)")
    ax.set_title("MLM head norm and the best rescale factor k")
    fig.tight_layout()
    _save(fig, [out_png])
    plt.close(fig)
