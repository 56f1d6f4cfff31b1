"""``results/probe.png``: each of the probe's statistics against the rescale factor k of
``W_head <- W_head / k`` ("Rescaling MLM-Head for Neural Sparse Retrieval", arXiv 2606.18811) on a
log axis, one line per backbone (and mode), and the reference backbone's value at k = 1 as a
horizontal line, so a reader sees where each curve crosses it: the k at which that backbone starts
training at the reference's scale (the probe's recommendation, marked on its statistic's panel)."""

from __future__ import annotations

import numpy as np

from lsrbench.model.probe_names import DEFAULT_PROBE_STATISTIC
from lsrbench.report.figures.plots import pyplot, save_figure
from lsrbench.report.probe.report import recommend_k, reference_value
from lsrbench.report.results import run_label

__all__ = ["PROBE_PANELS", "probe_figure", "plot_probe"]

# The statistics probe.png shows, one panel each: (result key, axis label).
PROBE_PANELS = (
    ("score_scale", "in-batch score scale (std of a query's scores)"),
    ("ranking_loss", "ranking loss at step 0"),
    ("flops_loss", "FLOPS loss at step 0 (full lambda)"),
    ("flops_to_ranking_grad", "‖∇W FLOPS‖ / ‖∇W ranking‖"),
    ("document_active_terms", "active terms per document"),
    ("max_logit", "max logit per document"),
)


def _series(results: list[dict], run: str, key: str) -> tuple[list[float], list[float]]:
    pts = sorted({float(r["k_value"]): r[key] for r in results if r["backbone"] == run
                  and isinstance(r.get(key), (int, float))}.items())
    return [k for k, _ in pts], [v for _, v in pts]


def _panel(ax, results: list[dict], runs: list[str], key: str, label: str, reference: str, colors: dict,
           recommended: dict) -> None:
    values = []
    for run in runs:
        ks, vs = _series(results, run, key)
        values += vs
        ax.plot(ks, vs, marker="o", markersize=3.5, linewidth=1.4, color=colors[run])
        if run in recommended and recommended[run] is not None:
            ax.axvline(recommended[run], color=colors[run], linestyle=":", linewidth=1.0)
    target = reference_value(results, reference, key)
    if target is not None:
        ax.axhline(target, color="black", linestyle="--", linewidth=0.9)
    from matplotlib.ticker import FixedLocator, NullFormatter, ScalarFormatter

    ax.set_xscale("log", base=2)
    ks = sorted({float(r["k_value"]) for r in results})
    ax.xaxis.set_major_locator(FixedLocator(ks))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    if values and min(values + ([target] if target is not None else [])) > 0:
        ax.set_yscale("log")
    ax.set_title(label, fontsize=8.5)
    ax.set_xlabel("k (log scale)", fontsize=8)
    ax.grid(True, alpha=0.3, which="both")


def probe_figure(results: list[dict], backbones: dict, reference: str | None, statistic: str = DEFAULT_PROBE_STATISTIC):
    """The probe figure (see :func:`plot_probe`); returns ``(figure, axes)``."""
    import matplotlib

    plt = pyplot()
    runs = list(dict.fromkeys(r["backbone"] for r in results))
    cmap = matplotlib.colormaps["tab10"]
    colors = {run: matplotlib.colors.to_hex(cmap(i % 10)) for i, run in enumerate(runs)}
    recommended = {run: rec["k"] for run, rec in recommend_k(results, reference, statistic).items()}
    panels = [(key, label) for key, label in PROBE_PANELS if any(isinstance(r.get(key), (int, float)) for r in results)]
    ncols = min(3, max(1, len(panels)))
    nrows = -(-max(1, len(panels)) // ncols)
    fig = plt.figure(figsize=(3.7 * ncols + 0.4, 2.9 * nrows + 1.0), dpi=140, layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
    for ax, (key, label) in zip(axes, panels):
        _panel(ax, results, runs, key, label, reference, colors, recommended if key == statistic else {})
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    handles = [plt.Line2D([], [], color=colors[r], marker="o", markersize=3.5, label=run_label(r, backbones)) for r in runs]
    if reference is not None:  # without auto_k.reference: no reference line, nothing recommended
        handles.append(plt.Line2D([], [], color="black", linestyle="--", linewidth=0.9,
                                  label=f"reference {run_label(reference, backbones)} at k = 1"))
        handles.append(plt.Line2D([], [], color="grey", linestyle=":", label=f"recommended k ({statistic} panel)"))
    fig.legend(handles=handles, loc="outside lower center", ncol=min(3, len(handles)), fontsize=7.5, frameon=False)
    fig.suptitle("The probe: each statistic at step 0 against the rescale factor k (W_head / k)", fontsize=10)
    return fig, axes[:len(panels)]


def plot_probe(results: list[dict], backbones: dict, reference: str | None, out_png: str,
               statistic: str = DEFAULT_PROBE_STATISTIC) -> None:
    """Write :func:`probe_figure` to ``out_png``."""
    plt = pyplot()
    fig, _ = probe_figure(results, backbones, reference, statistic)
    save_figure(fig, [out_png])
    plt.close(fig)
