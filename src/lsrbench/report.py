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
COLLAPSED = "collapsed"
BM25 = "BM25"
NO_K = "-"  # the k of runs that have none (BM25)


def k_order(k: str) -> float:
    """Sort key for k: BM25's '-' first, numbers ascending, 'auto' last."""
    if k == NO_K:
        return -1.0
    try:
        return float(k)
    except ValueError:
        return float("inf")


def collect_metrics(files: list[str], out_csv: str) -> pd.DataFrame:
    """Concatenate per-run tidy metric files into ``results/metrics.csv`` (deterministic order)."""
    frames = [pd.read_csv(f, sep="\t", dtype={"backbone": str, "k": str, "dataset": str, "measure": str}) for f in files]
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=METRIC_COLUMNS)
    df = df[METRIC_COLUMNS]
    df["_bm25"] = df["backbone"] != BM25
    df["_k"] = df["k"].map(k_order)
    df = df.sort_values(["_bm25", "backbone", "_k", "dataset", "measure"], kind="stable").drop(columns=["_k", "_bm25"])
    with atomic_open(out_csv, "w", encoding="utf-8", newline="") as fh:
        df.to_csv(fh, index=False, float_format="%.6g")
    return df


def read_metrics(path: str) -> pd.DataFrame:
    return pd.read_csv(path, dtype={"backbone": str, "k": str, "dataset": str, "measure": str})


def _label(name: str, backbones: dict) -> str:
    from .config import split_run_name

    base, mode = split_run_name(name)
    entry = backbones.get(base, {})
    label = entry.get("label", base)
    if mode != "shared":
        label = f"{label} [{mode}]"
    return f"{label} †" if entry.get("synthetic") else label


def flops_datasets(metrics: pd.DataFrame, report_cfg: dict) -> list[str]:
    """The metrics.csv datasets FLOPs and active dims are read from: the pooled rows
    (:data:`lsrbench.dag.POOLED`, SparseNanoBEIREvaluator's pooling) when ``flops_datasets`` names
    several datasets, else that one dataset (default: the mean over every dataset)."""
    from .dag import POOLED

    names = report_cfg.get("flops_datasets") or sorted(set(metrics["dataset"].unique()) - {POOLED})
    return [POOLED] if len(report_cfg.get("flops_datasets") or []) > 1 else list(names)


def run_table(metrics: pd.DataFrame, report_cfg: dict, backbones: dict) -> pd.DataFrame:
    """One row per (backbone, k): each configured column is the mean of its measure over its
    datasets; FLOPs and active dims come from :func:`flops_datasets`."""
    rows = []
    flops_ds = flops_datasets(metrics, report_cfg)
    order = {name: i for i, name in enumerate(backbones)}
    for (backbone, k), grp in metrics.groupby(["backbone", "k"], sort=False):
        row = {"backbone": backbone, "k": k}
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
    from .config import split_run_name

    table["_order"] = [-1 if b == BM25 else order.get(split_run_name(b)[0], len(order)) + (0.5 if "+" in b else 0)
                       for b in table["backbone"]]
    table["_k"] = table["k"].map(k_order)
    return table.sort_values(["_order", "_k"], kind="stable").drop(columns=["_order", "_k"]).reset_index(drop=True)


def best_k(table: pd.DataFrame, column: str) -> dict[str, str]:
    """The numeric k with the highest ``column`` value per run name (smallest k on ties; collapsed
    runs and ``auto`` are not candidates)."""
    best = {}
    for backbone, grp in table.groupby("backbone", sort=False):
        grp = grp[grp["k"].map(lambda k: np.isfinite(k_order(k)) and k != NO_K) & ~grp.get("collapsed", False)]
        vals = grp[column]
        if vals.notna().any():
            top = vals.max()
            best[backbone] = min(grp.loc[vals == top, "k"], key=k_order)
    return best


def load_reference(path: str | None) -> dict:
    """The paper's reported values: {backbone: {k: {column name: value}}} (config/paper_reference.yaml)."""
    if not path:
        return {}
    import yaml

    data = yaml.safe_load(Path(path).read_text()) or {}
    return {str(b): {str(k): v for k, v in ks.items()} for b, ks in data.get("values", {}).items()}


def auto_k_values(norms: dict[str, dict], auto_cfg: dict | None) -> dict[str, float]:
    """k: auto for every backbone with head norms: its norm over the reference backbone's."""
    if not auto_cfg or auto_cfg.get("reference") not in norms:
        return {}
    stat = auto_cfg.get("statistic", "frobenius_norm")
    ref = norms[auto_cfg["reference"]][stat]
    return {b: n[stat] / ref for b, n in norms.items()}


def render_cell(cell: dict) -> str:
    """The text of one table1.md cell from its record (see :func:`table1_cells`)."""
    if cell.get("collapsed"):
        return "collapsed"
    if "numbers" not in cell:
        return cell["text"]
    texts = [n["text"] for n in cell["numbers"]]
    body = "–" if all(t is None for t in texts) else cell.get("sep", "").join("–" if t is None else t for t in texts)
    if cell.get("bold"):
        body = f"**{body}**"
    if cell.get("template"):
        body = cell["template"].format(body)
    if cell.get("reference"):
        body += f" (paper {cell['reference']['text']})"
    return body


def _number(run: pd.DataFrame, measure: str, datasets: list[str], fmt: str, require_all: bool) -> dict:
    """A mean of metric rows, as shown in a cell, with the metrics.csv rows it averages."""
    sel = run[(run["measure"] == measure) & run["dataset"].isin(datasets)]
    complete = len(sel) == len(datasets) if require_all else len(sel) > 0
    value = sel["value"].mean() if complete else np.nan
    return {"measure": measure, "datasets": list(datasets), "require_all": require_all, "format": fmt,
            # metrics.csv line of each source row: the frame is metrics.csv as read (header = line 1)
            "sources": [{"line": int(i) + 2, "dataset": d, "value": float(v)}
                        for i, d, v in zip(sel.index, sel["dataset"], sel["value"])],
            "value": None if pd.isna(value) else float(value),
            "text": None if pd.isna(value) else format(value, fmt)}


def table1_cells(metrics: pd.DataFrame, report_cfg: dict, backbones: dict, norms: dict | None = None,
                 auto_cfg: dict | None = None) -> dict:
    """Every cell of table1.md with where its numbers come from.

    ``{"columns": [...], "rows": [{"backbone", "k", "collapsed", "collapsed_sources", "cells": [cell, ...]}]}``.
    A cell is ``{"column", "text"}`` plus, where it shows numbers, ``numbers`` (each the mean of
    ``sources``, metrics.csv rows of ``measure`` over ``datasets``; or, for ``k: auto``, a ratio of
    two head norms), and its decorations: ``bold`` (best k), ``collapsed``, ``reference`` (a value
    from the paper, read from ``report_cfg["reference"]``, not from any run). ``text`` is
    :func:`render_cell` of the rest. ``metrics`` must be metrics.csv as :func:`read_metrics` reads it.
    """
    table = run_table(metrics, report_cfg, backbones)
    columns = [c["name"] for c in report_cfg["columns"]]
    out = {"columns": ["Backbone", "k", *columns, "FLOPs", "q / d dims"], "rows": []}
    if table.empty:
        return out
    first = columns[0]
    best = best_k(table, first)
    reference = load_reference(report_cfg.get("reference"))
    autos = auto_k_values(norms or {}, auto_cfg)
    flops_ds = flops_datasets(metrics, report_cfg)
    from .config import split_run_name

    for b, k, collapsed in zip(table["backbone"], table["k"], table["collapsed"]):
        run = metrics[(metrics["backbone"] == b) & (metrics["k"] == k)]
        flags = run[run["measure"] == COLLAPSED]
        k_cell = {"column": "k", "text": k}
        base = split_run_name(b)[0]
        if k == "auto" and base in autos:
            stat = auto_cfg.get("statistic", "frobenius_norm")
            k_cell = {"column": "k", "template": "auto ({})", "numbers": [
                {"norms": {"backbone": base, "reference": auto_cfg["reference"], "statistic": stat},
                 "format": ".3g", "value": float(autos[base]), "text": format(autos[base], ".3g")}]}
        cells = [{"column": "Backbone", "text": _label(b, backbones) if b != BM25 else "BM25 (bm25s)"}, k_cell]
        for col in report_cfg["columns"]:
            name = col["name"]
            cell = {"column": name, "numbers": [_number(run, col["measure"], col["datasets"], ".3f", True)],
                    "collapsed": bool(collapsed)}
            cell["bold"] = name == first and best.get(b) == k
            ref = reference.get(b, {}).get(k, {}).get(name)
            if ref is not None:
                cell["reference"] = {"file": report_cfg["reference"], "backbone": b, "k": k, "column": name,
                                     "value": float(ref), "text": f"{ref:.3f}"}
            cells.append(cell)
        cells.append({"column": "FLOPs", "numbers": [_number(run, FLOPS, flops_ds, ".2f", False)],
                      "collapsed": bool(collapsed)})
        cells.append({"column": "q / d dims", "sep": " / ", "numbers": [_number(run, QUERY_DIMS, flops_ds, ".1f", False),
                                                                        _number(run, DOC_DIMS, flops_ds, ".1f", False)]})
        for cell in cells:
            cell["text"] = render_cell(cell)
        out["rows"].append({"backbone": b, "k": k, "collapsed": bool(collapsed),
                            "collapsed_sources": [{"line": int(i) + 2, "dataset": d, "value": float(v)}
                                                  for i, d, v in zip(flags.index, flags["dataset"], flags["value"])],
                            "cells": cells})
    return out


def table1_markdown(metrics: pd.DataFrame, report_cfg: dict, backbones: dict, norms: dict | None = None,
                    auto_cfg: dict | None = None, cells: dict | None = None) -> str:
    """The paper's Table 1 shape, as Markdown: one row per (backbone, k), best k per backbone in
    bold, collapsed runs shown as such, the paper's value beside ours where it reports one."""
    if cells is None:
        cells = table1_cells(metrics, report_cfg, backbones, norms, auto_cfg)
    if not cells["rows"]:
        return "No finished runs.\n"
    first = report_cfg["columns"][0]["name"]
    reference = report_cfg.get("reference")
    shown = pd.DataFrame([[c["text"] for c in row["cells"]] for row in cells["rows"]], columns=cells["columns"])
    lines = ["# Table 1: effectiveness and efficiency per backbone and rescale factor k", ""]
    if report_cfg.get("caption"):
        lines += [report_cfg["caption"].strip(), ""]
    # disable_numparse: a cell is shown as written ("2.50", not tabulate's "2.5")
    lines.append(shown.to_markdown(index=False, colalign=["left"] + ["right"] * (shown.shape[1] - 1),
                                   disable_numparse=True))
    lines += [
        "",
        f"k: the MLM head weight is divided by k before training (W_head <- W_head / k); auto: k = head norm / "
        f"head norm of the reference backbone. Bold: best k per backbone on {first}. [untie]: the head gets its own "
        "copy before the rescale (input embeddings unchanged); otherwise the tied matrix is scaled (the paper). "
        "FLOPs: sum_j p_q(j) p_d(j), the expected number of multiplications per query-document pair; q / d dims: "
        "mean non-zero terms per query / document. collapsed: the run's status says it collapsed (see its status.json).",
    ]
    if any(e.get("synthetic") for e in backbones.values()):
        lines.append("† synthetic backbone: a real checkpoint with its head scaled at load (see config).")
    if reference and load_reference(reference):
        lines.append(f"(paper x): the value reported in the paper, from {reference}.")
    return "\n".join(lines) + "\n"


def table1_record(cells: dict, metrics_csv: str, report_cfg: dict, backbones: dict, norm_files: dict,
                  auto_cfg: dict | None, out_md: str, cells_json: str) -> dict:
    """The sidecar of table1.md (``table1.cells.json``): what the table was computed from (with
    SHA-256), the settings needed to compute it again, and every cell (see :func:`table1_cells`).
    ``lsrbench verify`` checks the table against it and recomputes every cell from metrics.csv."""
    from .verify import sha256_file

    def stamp(path):
        path = str(path)
        return {"path": path, "sha256": sha256_file(path), "bytes": Path(path).stat().st_size}

    ref = report_cfg.get("reference")
    return {
        "format": 1,
        "manifest": str(cells_json),  # its own path as written (finds the working directory again)
        "table": stamp(out_md),
        "metrics_csv": stamp(metrics_csv),
        "reference": ({**stamp(ref), "resolved": str(Path(ref).resolve())} if ref and Path(ref).is_file() else None),
        "norm_files": {b: str(p) for b, p in norm_files.items()},
        "settings": {"report": report_cfg, "auto_k": auto_cfg,
                     "backbones": {b: {key: e[key] for key in ("label", "synthetic") if key in e}
                                   for b, e in backbones.items()}},
        **cells,
    }


def write_table1(metrics_csv: str, report_cfg: dict, backbones: dict, out_md: str, norm_files: dict | None = None,
                 auto_cfg: dict | None = None, cells_json: str | None = None) -> None:
    norm_files = dict(norm_files or {})
    norms = {b: json.loads(Path(p).read_text()) for b, p in norm_files.items()}
    metrics = read_metrics(metrics_csv)
    cells = table1_cells(metrics, report_cfg, backbones, norms, auto_cfg)
    with atomic_open(out_md, "w", encoding="utf-8") as fh:
        fh.write(table1_markdown(metrics, report_cfg, backbones, cells=cells))
    if cells_json:
        record = table1_record(cells, metrics_csv, report_cfg, backbones, norm_files, auto_cfg, out_md, cells_json)
        with atomic_open(cells_json, "w", encoding="utf-8") as fh:
            json.dump(record, fh, indent=1, ensure_ascii=False)
            fh.write("\n")


def beir_markdown(metrics: pd.DataFrame, report_cfg: dict, backbones: dict) -> str:
    """Per-dataset effectiveness of every run (one column per dataset, then each group's mean)."""
    measure = report_cfg.get("beir_measure", "nDCG@10")
    sel = metrics[metrics["measure"] == measure]
    if sel.empty:
        return f"No {measure} values.\n"
    pivot = sel.pivot_table(index=["backbone", "k"], columns="dataset", values="value", aggfunc="first")
    datasets = [d for c in report_cfg["columns"] for d in c["datasets"]]
    datasets = list(dict.fromkeys(d for d in datasets if d in pivot.columns)) + [d for d in pivot.columns if d not in datasets]
    pivot = pivot[datasets]
    for col in report_cfg["columns"]:
        if col["measure"] == measure and len(col["datasets"]) > 1:
            pivot[f"mean ({col['name']})"] = pivot[col["datasets"]].mean(axis=1, skipna=False)
    rows = pivot.reset_index()
    rows["_k"] = rows["k"].map(k_order)
    rows["_b"] = rows["backbone"].map(lambda b: -1 if b == BM25 else list(backbones).index(b.split("+")[0]) if b.split("+")[0] in backbones else 99)
    rows = rows.sort_values(["_b", "backbone", "_k"]).drop(columns=["_k", "_b"])
    rows.insert(0, "Backbone", [("BM25 (bm25s)" if b == BM25 else _label(b, backbones)) for b in rows.pop("backbone")])
    return (f"# Per-dataset {measure}\n\nEvery run on every evaluated dataset.\n\n"
            + rows.to_markdown(index=False, floatfmt=".3f") + "\n")


def write_table_beir(metrics_csv: str, report_cfg: dict, backbones: dict, out_md: str) -> None:
    with atomic_open(out_md, "w", encoding="utf-8") as fh:
        fh.write(beir_markdown(read_metrics(metrics_csv), report_cfg, backbones))


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
    from .dag import POOLED

    measure = report_cfg.get("tradeoff_measure", "nDCG@10")
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
    from .claims import pareto_front

    plt = _plt()
    metrics = read_metrics(metrics_csv)
    measure = report_cfg.get("tradeoff_measure", "nDCG@10")
    from .dag import POOLED

    datasets = report_cfg.get("flops_datasets") or sorted(set(metrics["dataset"].unique()) - {POOLED})
    pts = tradeoff_points(metrics, report_cfg)
    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=150)
    markers = "osD^vP*Xh<>"
    names = list(dict.fromkeys(pts["backbone"]))
    for i, name in enumerate(names):
        mine = pts[pts["backbone"] == name].assign(_k=lambda d: d["k"].map(k_order)).sort_values("_k")
        ax.scatter(mine["flops"], mine["score"], marker=markers[i % len(markers)], s=36, label=_label(name, backbones), zorder=3)
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
    from .config import split_run_name

    plt = _plt()
    runs: dict[str, dict[str, list]] = {}
    for run_k, path in log_files.items():
        run, k = run_k.rsplit("|", 1)
        rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
        runs.setdefault(run, {})[k] = [(r["step"], r.get(key)) for r in rows if r.get(key) is not None]
    names = sorted(runs, key=lambda r: (list(backbones).index(split_run_name(r)[0]) if split_run_name(r)[0] in backbones else 99, r))
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
        ax.set_title(_label(name, backbones), fontsize=8)
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
    table = run_table(read_metrics(metrics_csv), report_cfg, backbones)
    best = best_k(table, report_cfg["columns"][0]["name"]) if not table.empty else {}
    names = list(norm_files)
    values = [json.loads(Path(norm_files[n]).read_text())["frobenius_norm"] for n in names]
    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(names) + 2), 3.6), dpi=130)
    bars = ax.bar(range(len(names)), values, color="tab:blue")
    for bar, name in zip(bars, names):
        ax.annotate(f"best k = {best.get(name, '–')}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center", va="bottom", fontsize=7, textcoords="offset points", xytext=(0, 2))
    ax.set_xticks(range(len(names)), [_label(n, backbones) for n in names], rotation=20, ha="right", fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("‖W_head‖_F (as loaded)")
    ax.set_title("MLM head norm and the best rescale factor k")
    fig.tight_layout()
    _save(fig, [out_png])
    plt.close(fig)


def auto_k_markdown(metrics: pd.DataFrame, report_cfg: dict, backbones: dict, norms: dict, auto_cfg: dict | None) -> str:
    """For every swept backbone: k: auto next to the empirically best k, and what auto k costs."""
    if not auto_cfg:
        return ""
    table = run_table(metrics, report_cfg, backbones)
    first = report_cfg["columns"][0]["name"]
    best = best_k(table, first)
    autos = auto_k_values(norms, auto_cfg)
    rows = []
    for name in backbones:
        if name not in best:
            continue
        mine = table[table["backbone"] == name].set_index("k")[first]
        auto_score = mine.get("auto", np.nan)
        rows.append({"Backbone": _label(name, backbones), "auto k": autos.get(name, np.nan), "best k": best[name],
                     f"{first} at best k": mine[best[name]], f"{first} at auto k": auto_score,
                     "lost by auto k": mine[best[name]] - auto_score if pd.notna(auto_score) else np.nan})
    if not rows:
        return ""
    stat = auto_cfg.get("statistic", "frobenius_norm")
    return ("\n## Choosing k without a sweep\n\n"
            f"auto k = {stat} of the backbone / {stat} of {auto_cfg['reference']}. 'lost by auto k' is measured "
            "only where the config also ran k: auto (otherwise –).\n\n"
            + pd.DataFrame(rows).to_markdown(index=False, floatfmt=".3f") + "\n")
