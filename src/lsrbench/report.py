"""The report stage: tidy metrics, the paper-shaped table, head norms, the FLOPs/effectiveness plot."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from .atomic import atomic_open, atomic_path

METRIC_COLUMNS = ["backbone", "k", "dataset", "measure", "value"]
FLOPS = "FLOPs"
QUERY_DIMS = "query_active_dims"
DOC_DIMS = "doc_active_dims"


def collect_metrics(files: list[str], out_csv: str) -> pd.DataFrame:
    """Concatenate per-run tidy metric files into ``results/metrics.csv`` (deterministic order)."""
    frames = [pd.read_csv(f, sep="\t", dtype={"backbone": str, "k": str, "dataset": str, "measure": str}) for f in files]
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=METRIC_COLUMNS)
    df = df[METRIC_COLUMNS]
    df["_k"] = df["k"].astype(float)
    df = df.sort_values(["backbone", "_k", "dataset", "measure"], kind="stable").drop(columns="_k")
    with atomic_open(out_csv, "w", encoding="utf-8", newline="") as fh:
        df.to_csv(fh, index=False, float_format="%.6g")
    return df


def read_metrics(path: str) -> pd.DataFrame:
    return pd.read_csv(path, dtype={"backbone": str, "k": str, "dataset": str, "measure": str})


def _label(name: str, backbones: dict) -> str:
    entry = backbones.get(name, {})
    label = entry.get("label", name)
    return f"{label} †" if entry.get("synthetic") else label


def run_table(metrics: pd.DataFrame, report_cfg: dict, backbones: dict) -> pd.DataFrame:
    """One row per (backbone, k): each configured column is the mean of its measure over its
    datasets; FLOPs and active dims are averaged over ``flops_datasets``."""
    rows = []
    flops_ds = report_cfg.get("flops_datasets") or sorted(metrics["dataset"].unique())
    order = {name: i for i, name in enumerate(backbones)}
    for (backbone, k), grp in metrics.groupby(["backbone", "k"], sort=False):
        row = {"backbone": backbone, "k": k}
        for col in report_cfg["columns"]:
            sel = grp[(grp["measure"] == col["measure"]) & grp["dataset"].isin(col["datasets"])]
            row[col["name"]] = sel["value"].mean() if len(sel) == len(col["datasets"]) else np.nan
        for measure, name in ((FLOPS, "FLOPs"), (QUERY_DIMS, "q dims"), (DOC_DIMS, "d dims")):
            sel = grp[(grp["measure"] == measure) & grp["dataset"].isin(flops_ds)]
            row[name] = sel["value"].mean() if len(sel) else np.nan
        rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table["_order"] = table["backbone"].map(order).fillna(len(order))
    table["_k"] = table["k"].astype(float)
    return table.sort_values(["_order", "_k"]).drop(columns=["_order", "_k"]).reset_index(drop=True)


def best_k(table: pd.DataFrame, column: str) -> dict[str, str]:
    """The k with the highest ``column`` value per backbone (first k on ties)."""
    best = {}
    for backbone, grp in table.groupby("backbone", sort=False):
        vals = grp[column]
        if vals.notna().any():
            best[backbone] = grp.loc[vals.idxmax(), "k"]
    return best


def table1_markdown(metrics: pd.DataFrame, report_cfg: dict, backbones: dict) -> str:
    """The paper's Table 1 shape, as Markdown: best k per backbone in bold on the first column."""
    table = run_table(metrics, report_cfg, backbones)
    if table.empty:
        return "No finished runs.\n"
    first = report_cfg["columns"][0]["name"]
    best = best_k(table, first)
    shown = pd.DataFrame({"Backbone": [_label(b, backbones) for b in table["backbone"]], "k": table["k"]})
    for col in [c["name"] for c in report_cfg["columns"]]:
        vals = []
        for b, k, v in zip(table["backbone"], table["k"], table[col]):
            text = "–" if pd.isna(v) else f"{v:.3f}"
            vals.append(f"**{text}**" if col == first and best.get(b) == k else text)
        shown[col] = vals
    shown["FLOPs"] = [("–" if pd.isna(v) else f"{v:.2f}") for v in table["FLOPs"]]
    shown["q / d dims"] = [
        "–" if pd.isna(q) else f"{q:.1f} / {d:.1f}" for q, d in zip(table["q dims"], table["d dims"])
    ]
    lines = ["# Table 1: effectiveness and efficiency per backbone and rescale factor k", ""]
    if report_cfg.get("caption"):
        lines += [report_cfg["caption"].strip(), ""]
    lines.append(shown.to_markdown(index=False, colalign=["left"] + ["right"] * (shown.shape[1] - 1)))
    lines += [
        "",
        f"k: the MLM head weight is divided by k before training (W_head <- W_head / k). "
        f"Bold: best k per backbone on {first}. FLOPs: sum_j p_q(j) p_d(j), the expected number of "
        "multiplications per query-document pair; q / d dims: mean non-zero terms per query / document.",
    ]
    if any(e.get("synthetic") for e in backbones.values()):
        lines.append("† synthetic backbone: a real checkpoint with its head scaled at load (see config).")
    return "\n".join(lines) + "\n"


def write_table1(metrics_csv: str, report_cfg: dict, backbones: dict, out_md: str) -> None:
    with atomic_open(out_md, "w", encoding="utf-8") as fh:
        fh.write(table1_markdown(read_metrics(metrics_csv), report_cfg, backbones))


def norms_markdown(norm_files: dict[str, str], backbones: dict) -> str:
    """Head-norm table: one row per backbone, largest Frobenius norm first."""
    rows = []
    for name, path in norm_files.items():
        n = json.loads(Path(path).read_text())
        rows.append({
            "Backbone": _label(name, backbones),
            "‖W‖_F": n["frobenius_norm"],
            "mean ‖w_j‖": n["mean_row_norm"],
            "max ‖w_j‖": n["max_row_norm"],
            "‖b‖": n["bias_norm"],
            "vocab": n["vocab_size"],
            "hidden": n["hidden_size"],
            "tied": "yes" if n["tied"] else "no",
        })
    df = pd.DataFrame(rows).sort_values("‖W‖_F", ascending=False, kind="stable")
    body = df.to_markdown(index=False, floatfmt=".3f")
    return (
        "# MLM head norms\n\n"
        "Norms of the vocabulary projection W_head (rows w_j, one per vocabulary term) and its bias b, "
        "as loaded (before the rescale by k).\n\n" + body + "\n"
        + ("\n† synthetic backbone: a real checkpoint with its head scaled at load (see config).\n"
           if any(e.get("synthetic") for e in backbones.values()) else "")
    )


def write_norms_table(norm_files: dict[str, str], backbones: dict, out_md: str) -> None:
    with atomic_open(out_md, "w", encoding="utf-8") as fh:
        fh.write(norms_markdown(norm_files, backbones))


def plot_tradeoff(metrics_csv: str, report_cfg: dict, backbones: dict, out_png: str) -> None:
    """FLOPs (x, log scale) against the tradeoff measure, one marker per run, labelled with k."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = read_metrics(metrics_csv)
    measure = report_cfg.get("tradeoff_measure", "nDCG@10")
    datasets = report_cfg.get("flops_datasets") or sorted(metrics["dataset"].unique())
    sel = metrics[metrics["dataset"].isin(datasets)]
    pivot = sel.pivot_table(index=["backbone", "k"], columns="measure", values="value", aggfunc="mean")
    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=150)
    markers = "osD^vP*Xh<>"
    for i, name in enumerate(backbones):
        if name not in pivot.index.get_level_values(0) or measure not in pivot.columns:
            continue
        pts = pivot.loc[name].reset_index()
        pts = pts.assign(_k=pts["k"].astype(float)).sort_values("_k")
        ax.plot(pts[FLOPS], pts[measure], marker=markers[i % len(markers)], linestyle="-", alpha=0.85,
                label=_label(name, backbones))
        for _, p in pts.iterrows():
            ax.annotate(f"k={p['k']}", (p[FLOPS], p[measure]), textcoords="offset points", xytext=(4, 4), fontsize=7)
    if (pivot.get(FLOPS, pd.Series(dtype=float)) > 0).all():
        from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("FLOPs per query-document pair (" + ", ".join(datasets) + ")")
    ax.set_ylabel(f"{measure} (mean over {', '.join(datasets)})")
    ax.set_title("Effectiveness vs. efficiency per (backbone, k)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic_path(out_png) as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)
