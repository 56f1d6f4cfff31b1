"""The report's figures: effectiveness against FLOPs with the Pareto frontier (the paper's
NanoBEIR nDCG@10-vs-FLOPs plot), training loss curves, and head norms with the best k."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from lsrbench.atomic import atomic_path
from lsrbench.model.auto_k import REPORTED_HEAD_STATISTICS
from lsrbench.model.train_log import log_losses
from lsrbench.names import RUN_COLUMN, k_order, k_value, split_run_name
from lsrbench.report.figures.data import loss_data, norms_data, tradeoff_data
from lsrbench.report.render import MISSING
from lsrbench.report.results import label_notes, read_mean_metrics, run_label

__all__ = ["pyplot", "save_figure", "panel_heights", "tradeoff_figure", "plot_tradeoff", "k_colors", "rolling_mean", "loss_figure",
           "loss_runs", "plot_loss_curves", "norms_figure", "plot_norms"]


def pyplot():
    """matplotlib's pyplot on the non-interactive Agg backend (every report figure is a file)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, outputs: list[str]) -> None:
    """Write ``fig`` to every path of ``outputs`` (format from the suffix) atomically, without
    time stamps or software versions in the file (the same figure gives the same bytes)."""
    for out in outputs:
        with atomic_path(out) as tmp:
            fig.savefig(tmp, format=Path(out).suffix.lstrip("."), metadata={"Software": None, "CreationDate": None} if out.endswith(".pdf") else {"Software": None})


# The tradeoff plot's upper panel shows the runs within this share of the best score; runs below
# go to a lower panel (a broken y axis) instead of squeezing the competitive runs together.
BAND = 0.75


# Light colours fade in print: the yellow of matplotlib's colour-blind-safe cycle (Okabe and Ito's) left out.
FADES_IN_PRINT = ("#F0E442",)


def colour_cycle() -> list[str]:
    """Matplotlib's colour-blind-safe colour cycle (seaborn-v0_8-colorblind) without its light yellow."""
    import matplotlib

    cycle = matplotlib.style.library["seaborn-v0_8-colorblind"]["axes.prop_cycle"].by_key()["color"]
    return [c for c in map(str.upper, cycle) if c not in FADES_IN_PRINT]


def _palette(names: list[str]) -> dict[str, str]:
    colours = colour_cycle()
    return {name: colours[i % len(colours)] for i, name in enumerate(names)}


def _coincident_sizes(pts: pd.DataFrame, base: float) -> tuple[list[float], list[bool]]:
    """Marker area per point, and whether it is drawn as a ring: points at the same spot get decreasing sizes, each
    outer one an unfilled ring, so that every marker of the spot stays visible."""
    keys = [(f"{f:.4g}", round(s, 4)) for f, s in zip(pts["flops"], pts["score"])]
    counts = {key: keys.count(key) for key in keys}
    seen: dict = {}
    sizes, rings = [], []
    for key in keys:
        i = seen.get(key, 0)
        seen[key] = i + 1
        outer = counts[key] - 1 - i  # how many of the spot's markers lie inside this one
        sizes.append(base * 3.3 ** outer)
        rings.append(outer > 0)
    return sizes, rings


# A panel of the broken y axis gets at least this share of the height, however narrow its range.
MIN_PANEL = 0.22


def _score_ranges(scores: list[float], bm25: float | None,
                  chance: float | None = None) -> tuple[tuple[float, float], tuple[float, float] | None]:
    values = [*scores, *([bm25] if bm25 is not None else [])]
    if not values:
        return (0.0, 1.0), None

    def padded(lo, hi, share=0.12):
        pad = max(hi - lo, 0.01) * share
        return lo - pad, hi + pad

    floor = BAND * max(values)
    upper = [v for v in values if v >= floor]
    lower = [v for v in scores if v < floor]
    if not lower or not any(v >= floor for v in scores):
        return padded(max(0.0, min(values)) if lower else min(values), max(values)), None
    bottom = min(lower) if chance is None else min(min(lower), chance)
    return padded(min(upper), max(upper)), padded(max(0.0, bottom), max(lower), 0.25)


def panel_heights(values: list[float], upper: tuple[float, float]) -> list[float]:
    """Height ratios of the two panels of a broken y axis, sized by what each holds: its share of
    the markers and lines (``values``: the runs' scores and BM25's), at least MIN_PANEL each."""
    above = sum(1 for v in values if v >= upper[0])
    shares = [max(MIN_PANEL, n / len(values)) for n in (above, len(values) - above)]
    return [share / sum(shares) for share in shares]


def _break_marks(upper, lower) -> None:
    upper.spines["bottom"].set_visible(False)
    lower.spines["top"].set_visible(False)
    upper.tick_params(axis="x", which="both", bottom=False)
    kw = {"marker": [(-1, -0.6), (1, 0.6)], "markersize": 9, "linestyle": "none", "color": "k", "mec": "k",
          "mew": 1, "clip_on": False}
    upper.plot([0, 1], [0, 0], transform=upper.transAxes, **kw)
    lower.plot([0, 1], [1, 1], transform=lower.transAxes, **kw)


def _draw_runs(axes, pts: pd.DataFrame, names: list[str], colors: dict, backbones: dict, bm25: dict | None,
               chance: dict | None = None):
    plt = pyplot()
    ax = axes[0]
    sizes, rings = _coincident_sizes(pts, 34.0)
    markers = "osD^vP*Xh<>"
    handles = []
    for i, name in enumerate(names):
        mine = pts[RUN_COLUMN] == name
        for a in axes:
            ring = [rings[j] for j in pts.index[mine]]
            a.scatter(pts.loc[mine, "flops"], pts.loc[mine, "score"], s=[sizes[j] for j in pts.index[mine]],
                      marker=markers[i % len(markers)], facecolors=["none" if r else colors[name] for r in ring],
                      edgecolors=[colors[name] if r else "white" for r in ring],
                      linewidths=[1.6 if r else 0.6 for r in ring], zorder=3)
        handles.append(plt.Line2D([], [], marker=markers[i % len(markers)], color=colors[name], linestyle="none",
                                  markersize=6, label=run_label(name, backbones)))
    frontier = {}
    if len(pts):
        fp = pts[pts["frontier"]].sort_values("flops")
        for a in axes:
            (frontier[a],) = a.step(fp["flops"], fp["score"], where="post", color="grey", linestyle="--",
                                    linewidth=1, label="Pareto frontier", zorder=2)
        handles.append(frontier[ax])
    if bm25 is not None:
        for a in axes:
            line = a.axhline(bm25["score"], color="black", linewidth=0.8, linestyle=":", label=bm25["label"])
        handles.append(line)
    if chance is not None:
        for a in axes:
            line = a.axhline(chance["score"], color="0.35", linewidth=1.0, linestyle="-.",
                             label=f"{chance['label']}: {chance['score']:.3f}")
        handles.append(line)
    return handles, frontier


def tradeoff_figure(metrics: pd.DataFrame, report_cfg: dict, backbones: dict, chance: dict | None = None):
    """The tradeoff figure (see :func:`plot_tradeoff`); returns ``(figure, axes, labels)``."""
    from lsrbench.report.figures.labels import place_labels

    plt = pyplot()
    data = tradeoff_data(metrics, report_cfg, backbones, chance)
    measure, datasets, bm25 = data["measure"], data["datasets"], data["bm25"]
    pts = pd.DataFrame([{RUN_COLUMN: p["run"], "k": p["k"], "flops": p["flops"], "score": p["score"],
                         "frontier": p["frontier"]} for p in data["points"]],
                       columns=[RUN_COLUMN, "k", "flops", "score", "frontier"])
    names = list(dict.fromkeys(pts[RUN_COLUMN]))
    colors = _palette(names)
    chance = data.get("chance")
    upper_range, lower_range = _score_ranges(list(pts["score"]), bm25["score"] if bm25 else None,
                                             chance["score"] if chance else None)
    fig = plt.figure(figsize=(7.2, 5.4 if lower_range else 4.8), dpi=150, layout="constrained")
    if lower_range:
        ax, low = fig.subplots(2, 1, sharex=True, gridspec_kw={
            "height_ratios": panel_heights([*pts["score"], *([bm25["score"]] if bm25 else [])], upper_range)})
        axes = [ax, low]
    else:
        ax = fig.subplots()
        axes = [ax]
    handles, frontier = _draw_runs(axes, pts, names, colors, backbones, bm25, chance)
    if chance is not None and chance["score"] < (lower_range or upper_range)[0]:
        handles[-1].set_label(handles[-1].get_label() + " (below the y axis)")
    ax.set_ylim(*upper_range)
    if lower_range:
        low.set_ylim(*lower_range)
        _break_marks(ax, low)
    bottom = axes[-1]
    if len(pts) and (pts["flops"] > 0).all():
        from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

        bottom.set_xscale("log")
        bottom.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        bottom.xaxis.set_major_formatter(ScalarFormatter())
        bottom.xaxis.set_minor_formatter(NullFormatter())
    bottom.set_xlabel("FLOPs per query–document pair, log scale (" + ("pooled over " if data["flops_pooled"] else "")
                      + ", ".join(datasets) + ")")
    fig.supylabel(f"{measure} (mean over {', '.join(datasets)})", fontsize=10)
    fig.suptitle(f"{measure} against FLOPs, one marker per (backbone, k)", fontsize=11)
    for a in axes:
        a.grid(True, alpha=0.3)
    # the legend's title explains the marks (dagger, double dagger) of its labels
    fig.legend(handles=handles, loc="outside lower center", ncol=2, fontsize=7.5, frameon=False,
               title="\n".join(data.get("notes") or []) or None, title_fontsize=7.5)
    fig.canvas.draw()  # the layout is final before labels are placed in display space
    labels = []
    for a in axes:
        lo, hi = a.get_ylim()
        inside = [{"x": f, "y": sc, "text": f"k={k}", "color": colors[b]}
                  for b, k, f, sc in zip(pts[RUN_COLUMN], pts["k"], pts["flops"], pts["score"]) if lo <= sc <= hi]
        labels += place_labels(a, inside, lines=[frontier[a]] if a in frontier else [])
    fig.set_layout_engine("none")  # keep the axes where the labels were placed
    return fig, axes, labels


def plot_tradeoff(metrics_csv: str, report_cfg: dict, backbones: dict, out_png: str, out_pdf: str | None = None,
                  chance_json: str | None = None) -> dict:
    """FLOPs (x, log scale) against the tradeoff measure, one marker per run coloured by backbone, each labelled
    with its k where no other label is, coincident runs drawn concentric, the Pareto frontier dashed and BM25
    dotted."""
    from lsrbench.report.tables.chance import read_chance

    plt = pyplot()
    metrics, chance = read_mean_metrics(metrics_csv), read_chance(chance_json)
    fig, _, _ = tradeoff_figure(metrics, report_cfg, backbones, chance)
    save_figure(fig, [out_png] + ([out_pdf] if out_pdf else []))
    plt.close(fig)
    return tradeoff_data(metrics, report_cfg, backbones, chance)


def k_colors(ks) -> dict[str, str]:
    """One colour per k, the same in every panel: numeric k in increasing order along
    :func:`colour_cycle` (colour-blind safe, none light), auto in black."""
    colours = colour_cycle()
    numeric = sorted({k for k in ks if k_value(k) is not None}, key=k_order)
    out = {k: colours[i % len(colours)] for i, k in enumerate(numeric)}
    out.update({k: "#000000" for k in ks if k_value(k) is None})
    return out


def rolling_mean(values: list[float], window: int) -> np.ndarray:
    """Centred moving average (shorter windows at the ends): what the thick loss lines show."""
    values = np.asarray(values, dtype=float)
    half = window // 2
    return np.array([values[max(0, i - half): i + half + 1].mean() for i in range(len(values))])


def loss_figure(runs: dict[str, dict[str, list]], backbones: dict, key: str = "ranking_loss",
                chance: dict | None = None, seeds: int = 1):
    """The loss-curves figure (see :func:`plot_loss_curves`); returns ``(figure, axes, window)``.
    ``chance``: ``{"candidates_per_query", "chance_level"}`` (:func:`lsrbench.report.figures.data.loss_data`),
    drawn in every panel."""
    import textwrap

    plt = pyplot()
    order = {name: i for i, name in enumerate(backbones)}
    # released (evaluate-only) runs have no training log: no panel
    names = sorted((r for r in runs if any(runs[r].values())), key=lambda r: (order.get(split_run_name(r)[0], len(order)), r))
    colors = k_colors([k for r in runs.values() for k in r])
    values = [v for r in runs.values() for pts in r.values() for _, v in pts]
    steps = max((len(pts) for r in runs.values() for pts in r.values()), default=1)
    window = max(1, steps // 10) | 1  # odd, about a tenth of the run
    ncols = min(3, max(1, len(names)))
    nrows = -(-max(1, len(names)) // ncols)
    fig = plt.figure(figsize=(3.6 * ncols + 0.6, 2.9 * nrows + 0.9), dpi=140, layout="constrained")
    axes = fig.subplots(nrows, ncols, sharey=True, squeeze=False).ravel()
    # log scale only when every value is positive (a float32 loss of exactly 0 happens); else linear
    # from 0 up to the highest smoothed value, so single-step spikes of the raw curves do not set it
    log_y = bool(values) and min(values) > 0
    top = 0.0
    for ax, name in zip(axes, names):
        for k in sorted(runs[name], key=k_order):
            pts = runs[name][k]
            if not pts:
                continue
            x, y = zip(*pts)
            smooth = rolling_mean(list(y), window)
            top = max(top, float(smooth.max()))
            ax.plot(x, y, color=colors[k], linewidth=0.6, alpha=0.3)
            ax.plot(x, smooth, color=colors[k], linewidth=1.8, label=f"k = {k}")
        if chance and chance.get("chance_level") is not None:
            ax.axhline(chance["chance_level"], color="black", linewidth=0.9, linestyle=":", zorder=1)
            top = max(top, chance["chance_level"])
        # wrapped to the panel's width (about 45 characters at this size), so no title runs past its frame
        ax.set_title(textwrap.fill(run_label(name, backbones), 45), fontsize=8.5)
        ax.set_xlabel("training step")
        ax.grid(True, alpha=0.3)
    for ax in axes[len(names):]:
        ax.set_visible(False)
    if log_y:
        axes[0].set_yscale("log")
    elif top > 0:
        axes[0].set_ylim(0, top * 1.15)
    for ax in axes[::ncols]:
        ax.set_ylabel(key.replace("_", " ") + (" (log scale)" if log_y else ""))
    handles = {f"k = {k}": plt.Line2D([], [], color=c, linewidth=1.8) for k, c in
               sorted(colors.items(), key=lambda kc: k_order(kc[0]))}
    if chance and chance.get("chance_level") is not None:
        name = (f"chance level: ln {chance['candidates_per_query']} = {chance['chance_level']:.2f} "
                "(every candidate scored alike)")
        handles[name] = plt.Line2D([], [], color="black", linewidth=0.9, linestyle=":")
    fig.legend(handles.values(), handles.keys(), loc="outside lower center", ncol=min(8, len(handles)),
               fontsize=8, frameon=False, title=(f"mean over {seeds} training seeds; " if seeds > 1 else "")
               + f"thin: every step{'' if log_y else ' (cut at the top of the axis)'}; thick: moving average over {window} steps"
               + "".join("\n" + note for note in label_notes({split_run_name(n)[0]: backbones.get(split_run_name(n)[0], {})
                                                             for n in names})),
               title_fontsize=7.5)
    return fig, list(axes[:len(names)]), window


def loss_runs(logs: dict[tuple[str, str], list[dict]], key: str = "ranking_loss") -> dict[str, dict[str, list]]:
    """run -> k -> ``[(step, value), ...]`` of training logs' rows (``{(run, k): rows}``; with several
    training seeds their mean step by step, :func:`lsrbench.report.seeds.read_mean_train_logs`)."""
    runs: dict[str, dict[str, list]] = {}
    for (run, k), rows in logs.items():
        runs.setdefault(run, {})[k] = log_losses(rows, key)
    return runs


def plot_loss_curves(logs: dict[tuple[str, str], list[dict]], backbones: dict, out_png: str,
                     key: str = "ranking_loss", batch_size: int | None = None, seeds: int = 1) -> dict:
    """Training loss per step, one panel per run name, one colour per k (the same in every panel), one shared y
    axis (log when every value is positive), each curve raw (thin) and smoothed (thick), the chance level dotted
    (``batch_size``: the recipe's), the legend below the panels (``seeds`` > 1: each curve the mean over that
    many training seeds)."""
    plt = pyplot()
    runs = loss_runs(logs, key)
    data = loss_data(runs, backbones, batch_size, key)
    fig, _, _ = loss_figure(runs, backbones, key, chance=data, seeds=seeds)
    save_figure(fig, [out_png])
    plt.close(fig)
    return data


# norms.png's panels, one per reported head statistic (lsrbench.model.auto_k.head_statistics joins
# norms.json's and the probe's).
NORM_PANELS = tuple(zip(REPORTED_HEAD_STATISTICS, (r"Frobenius norm $\Vert W_\mathrm{head} \Vert_F$",
                                           r"mean row norm $\Vert w_j \Vert$", "max logit per text at k = 1 (probe)")))


def norms_figure(norms: dict[str, dict], best: dict[str, str], autos: dict[str, float], backbones: dict):
    """The head-statistics figure (see :func:`plot_norms`); returns ``(figure, axes)``."""
    import textwrap

    plt = pyplot()
    names = list(norms)
    # a statistic no backbone has (the probe's, when it did not run) gets no panel, but a note
    panels = [(i, key, title) for i, (key, title) in enumerate(NORM_PANELS)
              if any(_finite(norms[n].get(key)) for n in names) or i == 0]
    left_out = [title for key, title in NORM_PANELS if key not in {k for _, k, _ in panels}]
    ratios = [1.7] + [1] * (len(panels) - 1)
    fig = plt.figure(figsize=(2.4 + 9.6 * sum(ratios) / 3.7, 1.3 + 0.55 * max(1, len(names)) + 0.25 * bool(left_out)),
                     dpi=140, layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(panels), sharey=True, gridspec_kw={"width_ratios": ratios}))
    y = np.arange(len(names))[::-1]
    for ax, (i, key, title) in zip(axes, panels):
        values = [norms[n].get(key) for n in names]
        shown = [v if _finite(v) else 0.0 for v in values]
        bars = ax.barh(y, shown, color=("#3182bd", "#31a354", "#e6550d")[i], height=0.6)
        for bar, name, value in zip(bars, names, values):
            note = MISSING if value is None else f"{value:.4g}"
            if i == 0:
                note += f":  best k = {best.get(name, MISSING)}" + (f",  auto k = {autos[name]:.3g}" if name in autos else "")
            ax.annotate(note, (bar.get_width(), bar.get_y() + bar.get_height() / 2), xytext=(4, 0),
                        textcoords="offset points", va="center", fontsize=7.5)
        ax.set_xlim(0, max(shown, default=1.0) * (2.0 if i == 0 else 1.5) or 1.0)  # room for the notes
        ax.set_title(title, fontsize=9)
        ax.grid(True, axis="x", alpha=0.3)
    axes[0].set_yticks(y, [textwrap.fill(run_label(n, backbones), 30) for n in names], fontsize=8)
    fig.suptitle("MLM head statistics as loaded (before dividing by k) and the best rescale factor k per backbone",
                 fontsize=10)
    if left_out:
        fig.supxlabel("Not measured here, so not shown: " + "; ".join(left_out)
                      + " (the step-0 probe did not run: lsrbench probe)", fontsize=7.5, color="0.35")
    return fig, list(axes)


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and bool(np.isfinite(value))


def plot_norms(norm_files: dict[str, str], metrics_csv: str, report_cfg: dict, backbones: dict, out_png: str,
               auto_cfg: dict | None = None, probes: list[dict] | None = None) -> dict:
    """The head statistics per backbone as horizontal bars on linear scales:
    the Frobenius norm (with the best k found by the sweep and, with ``auto_k`` configured, the k
    it would choose), the mean row norm, and the largest logit per text at k = 1 from the probe's
    results (``probes``; ``–`` where a backbone was not probed; no panel, but a note, where none was)."""
    from lsrbench.model.auto_k import head_statistics, probe_at_k1
    from lsrbench.report.tables.table1 import auto_k_values

    plt = pyplot()
    norms = {n: head_statistics(json.loads(Path(p).read_text()), probe_at_k1(probes or [], n))
             for n, p in norm_files.items()}
    data = norms_data(norms, read_mean_metrics(metrics_csv), report_cfg, auto_k_values(norms, auto_cfg))
    best = {row["backbone"]: row["best_k"] for row in data["backbones"] if row["best_k"] is not None}
    autos = {row["backbone"]: row["auto_k"] for row in data["backbones"] if row["auto_k"] is not None}
    fig, _ = norms_figure(norms, best, autos, backbones)
    save_figure(fig, [out_png])
    plt.close(fig)
    return data
