"""The figures as a reader sees them: measured on the drawn matplotlib figures (label boxes in
display space, axis limits and scales, legend positions, colours), not on pixels."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from lsrbench.config.schema import with_defaults
from lsrbench.names import METRIC_COLUMNS
from lsrbench.report.figures import plots
from lsrbench.report.figures.labels import overlapping_pairs

BACKBONES = with_defaults("backbones", {"orig": {"model": "m", "label": "Original"},
                                        "twin": {"model": "m", "label": "Twin x10", "synthetic": True,
                                                 "head_scale": 10}})
REPORT = with_defaults("report", {"columns": [{"name": "D nDCG@10", "datasets": ["d"], "measure": "nDCG@10"}],
                                  "flops_datasets": ["d"], "tradeoff_measure": "nDCG@10"})
# (run, k) -> (nDCG@10, FLOPs): the tiny default's shape (two competitive clusters, a coincident
# pair, runs near 0 and one far right)
RUNS = {("orig", "1"): (0.394, 3.2), ("orig", "4"): (0.010, 11.9), ("orig", "16"): (0.003, 52.6),
        ("orig+untie", "16"): (0.282, 280.2), ("twin", "1"): (0.388, 8.7), ("twin", "4"): (0.3941, 5.9),
        ("twin", "16"): (0.3942, 6.4), ("twin", "auto"): (0.394, 3.2)}


@pytest.fixture()
def metrics() -> pd.DataFrame:
    rows = [(r, k, "d", m, v) for (r, k), (score, flops) in RUNS.items()
            for m, v in (("nDCG@10", score), ("FLOPs", flops), ("collapsed", 0.0))]
    rows += [("BM25", "-", "d", "nDCG@10", 0.383)]
    return pd.DataFrame(rows, columns=METRIC_COLUMNS)


def test_tradeoff_labels_never_overlap_and_name_every_run(metrics):
    fig, axes, labels = plots.tradeoff_figure(metrics, REPORT, BACKBONES)
    renderer = fig.canvas.get_renderer()
    assert overlapping_pairs(labels, renderer) == []
    assert sorted(t.get_text() for t in labels) == sorted(f"k={k}" for _, k in RUNS)
    for label in labels:  # inside the panel it labels
        box, panel = label.get_window_extent(renderer), label.axes.get_window_extent(renderer)
        assert panel.x0 <= box.x0 and box.x1 <= panel.x1 and panel.y0 <= box.y0 and box.y1 <= panel.y1


def test_tradeoff_breaks_the_y_axis_instead_of_starting_at_0(metrics):
    fig, axes, labels = plots.tradeoff_figure(metrics, REPORT, BACKBONES)
    upper, lower = axes
    lo, hi = upper.get_ylim()
    # every competitive run (and BM25) in the upper panel, which does not reach down to 0
    assert lo > 0.35 and lo <= 0.383 and hi >= 0.3942 and hi - lo < 0.05
    assert lower.get_ylim()[0] <= 0.003 and lower.get_ylim()[1] >= 0.282
    assert upper.get_xscale() == lower.get_xscale() == "log"
    one = {k: v for k, v in RUNS.items() if v[0] > 0.3}  # no run far below: one panel
    sub = metrics[[(r, k) in one or r == "BM25" for r, k in zip(metrics["backbone"], metrics["k"])]]
    assert len(plots.tradeoff_figure(sub, REPORT, BACKBONES)[1]) == 1


def test_tradeoff_coincident_runs_stay_visible(metrics):
    """orig k=1 and twin auto are the same point: drawn concentric, the first larger."""
    fig, axes, _ = plots.tradeoff_figure(metrics, REPORT, BACKBONES)
    spot = np.array([3.2, 0.394])
    sizes = [c.get_sizes()[i] for c in axes[0].collections for i, xy in enumerate(c.get_offsets())
             if np.allclose(xy, spot)]
    assert len(sizes) == 2 and sizes[0] > sizes[1]


def test_tradeoff_coincident_runs_are_told_apart(metrics):
    """Before: a filled blue circle with a filled green diamond 1.5x smaller inside it, hard to tell
    apart. Now the outer marker is an unfilled ring in its backbone's colour, its radius at least
    1.8x the filled inner one's, so both shapes and colours show."""
    import matplotlib.colors as mcolors

    fig, axes, _ = plots.tradeoff_figure(metrics, REPORT, BACKBONES)
    def colour_at(xy):  # the face colour of the (filled) marker at xy, on any panel
        return next(mcolors.to_hex(c.get_facecolors()[k]) for a in axes for c in a.collections
                    for k, p in enumerate(c.get_offsets()) if np.allclose(p, xy))

    colors = {"orig": colour_at([11.9, 0.010]), "twin": colour_at([8.7, 0.388])}
    assert colors["orig"] != colors["twin"]
    spot = np.array([3.2, 0.394])
    found = [(c, i) for c in axes[0].collections for i, xy in enumerate(c.get_offsets()) if np.allclose(xy, spot)]
    (outer, i), (inner, j) = found
    assert outer.get_sizes()[i] >= 1.8 ** 2 * inner.get_sizes()[j]  # areas: radius ratio >= 1.8
    assert outer.get_facecolors()[i][3] == 0  # a ring: nothing inside it hides the inner marker
    assert mcolors.to_hex(outer.get_edgecolors()[i]) == colors["orig"]
    assert mcolors.to_hex(inner.get_facecolors()[j]) == colors["twin"] and inner.get_facecolors()[j][3] == 1
    alone = [(c, k) for c in axes[0].collections for k, xy in enumerate(c.get_offsets())
             if np.allclose(xy, [8.7, 0.388])]  # a run at a spot of its own: filled, as before
    ((c, k),) = alone
    assert c.get_facecolors()[k][3] == 1 and c.get_sizes()[k] == inner.get_sizes()[j]


def test_loss_curves_one_scale_one_colour_per_k_legend_below(tmp_path):
    runs = {"orig": {"1": [(s, 0.5 + 0.1 * np.sin(s)) for s in range(1, 51)],
                     "16": [(s, 3.4 + 0.01 * s) for s in range(1, 51)]},
            "twin": {"1": [(s, 12.0 if s == 29 else 2.0) for s in range(1, 51)],
                     "16": [(s, 0.0 if s % 7 == 0 else 0.4) for s in range(1, 51)],
                     "auto": [(s, 0.3) for s in range(1, 51)]}}
    fig, axes, window = plots.loss_figure(runs, BACKBONES)
    fig.canvas.draw()
    assert {ax.get_yscale() for ax in axes} == {"linear"}  # a loss of exactly 0: linear for all
    assert len({ax.get_ylim() for ax in axes}) == 1 and axes[0].get_ylim()[0] == 0
    assert axes[0].get_ylim()[1] < 12.0  # a one-step spike does not set the scale
    colours = {}
    for ax in axes:
        for line in ax.get_lines():
            if line.get_label().startswith("k = "):
                colours.setdefault(line.get_label(), set()).add(line.get_color())
    assert all(len(c) == 1 for c in colours.values()) and len(colours) == 3
    assert colours["k = 1"] != colours["k = 16"]
    renderer = fig.canvas.get_renderer()
    legend = fig.legends[0].get_window_extent(renderer)
    assert legend.y1 <= min(ax.get_window_extent(renderer).y0 for ax in axes)
    assert window == 5
    assert plots.rolling_mean([1, 2, 3, 4, 5], 3).tolist() == [1.5, 2.0, 3.0, 4.0, 4.5]
    # the twin's panel title carries a dagger: the legend's title says what it means
    assert "Twin x10 †" in [ax.get_title() for ax in axes]
    assert fig.legends[0].get_title().get_text().endswith(
        "\n† synthetic backbone: a real checkpoint with its head scaled at load (see config).")


def test_norms_linear_bars_readable_labels():
    """Three panels (issue 18, item 7): Frobenius norm with best and auto k, mean row norm, the
    probe's max logit at k = 1 (– for a backbone not probed); linear scales, nothing clipped."""
    norms = {"orig": {"frobenius_norm": 119.9, "mean_row_norm": 0.69, "max_logit": 7.39},
             "twin": {"frobenius_norm": 1199.2, "mean_row_norm": 6.9}}
    fig, axes = plots.norms_figure(norms, {"orig": "1", "twin": "16"}, {"orig": 1.0, "twin": 10.0}, BACKBONES)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    figure_box = fig.bbox
    for ax in axes:
        assert ax.get_xscale() == "linear" and ax.get_xlim()[0] == 0
        for text in [ax.title, *ax.get_yticklabels(), *ax.texts]:
            box = text.get_window_extent(renderer)
            assert figure_box.x0 <= box.x0 and box.x1 <= figure_box.x1, text.get_text()  # nothing clipped
        panel = ax.get_window_extent(renderer)
        assert all(panel.x0 <= t.get_window_extent(renderer).x0 and t.get_window_extent(renderer).x1 <= panel.x1
                   for t in ax.texts)  # the notes stay inside the axes
    assert "‖" not in axes[0].title.get_text() and r"\Vert" in axes[0].title.get_text()  # mathtext, not a literal
    assert sorted(t.get_text() for t in axes[0].texts) == ["119.9:  best k = 1,  auto k = 1", "1199:  best k = 16,  auto k = 10"]
    assert sorted(t.get_text() for t in axes[1].texts) == ["0.69", "6.9"]
    assert sorted(t.get_text() for t in axes[2].texts) == ["7.39", "–"]


def test_plot_files_are_written(metrics, tmp_path):
    csv = tmp_path / "metrics.csv"
    metrics.to_csv(csv, index=False)
    plots.plot_tradeoff(str(csv), REPORT, BACKBONES, str(tmp_path / "t.png"), str(tmp_path / "t.pdf"))
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG" and (tmp_path / "t.pdf").read_bytes()[:4] == b"%PDF"
    paths = {}
    for name, value in (("orig", 119.9), ("twin", 1199.2)):
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps({"frobenius_norm": value}))
    plots.plot_norms({n: str(p) for n, p in paths.items()}, str(csv), REPORT, BACKBONES, str(tmp_path / "n.png"),
                     {"reference": "orig", "statistic": "frobenius_norm"})
    assert (tmp_path / "n.png").stat().st_size > 1000


def test_loss_curves_show_the_chance_level_in_every_panel():
    """The ranking loss of a model scoring every candidate alike: ln(2 x batch size) (the positive
    and hard negative of every triplet of the batch), dotted in each panel and named in the legend."""
    import math

    from lsrbench.report.figures.data import loss_data

    runs = {"orig": {"1": [(s, 1.0) for s in range(1, 11)]}, "twin": {"1": [(s, 2.5) for s in range(1, 11)]}}
    data = loss_data(runs, BACKBONES, batch_size=4)
    assert data["candidates_per_query"] == 8 and data["chance_level"] == math.log(8)
    fig, axes, _ = plots.loss_figure(runs, BACKBONES, chance=data)
    for ax in axes:
        dotted = [line for line in ax.get_lines() if line.get_linestyle() == ":"]
        assert [tuple(line.get_ydata()) for line in dotted] == [(math.log(8), math.log(8))]
    assert "chance level: ln 8 = 2.08 (every candidate scored alike)" in [t.get_text() for t in fig.legends[0].texts]
    assert loss_data(runs, BACKBONES, batch_size=None)["chance_level"] is None


def _panel_heights(fig, axes) -> list[float]:
    renderer = fig.canvas.get_renderer()
    return [a.get_window_extent(renderer).height for a in axes]


def test_tradeoff_without_a_run_near_the_best_is_one_axis():
    """The tiny default's shape: every run far below BM25. Before, a broken axis gave 3/4 of the
    height to a panel holding BM25's line alone (ticks 0.4755-0.4775) and squeezed the runs into the
    rest; now one axis holds the line and every run."""
    tiny = {("orig", "1"): (0.237, 155.1), ("orig", "16"): (0.012, 141.4), ("orig+untie", "16"): (0.137, 558.8),
            ("twin", "1"): (0.072, 78.7), ("twin", "16"): (0.249, 195.4)}
    rows = [(r, k, "d", m, v) for (r, k), (score, flops) in tiny.items()
            for m, v in (("nDCG@10", score), ("FLOPs", flops), ("collapsed", 0.0))] + [("BM25", "-", "d", "nDCG@10", 0.477)]
    fig, axes, labels = plots.tradeoff_figure(pd.DataFrame(rows, columns=METRIC_COLUMNS), REPORT, BACKBONES)
    (ax,) = axes
    lo, hi = ax.get_ylim()
    assert lo <= 0.012 and hi >= 0.477
    runs_span = (0.249 - 0.012) / (hi - lo)
    assert runs_span > 0.4  # the runs take almost half the height, not a strip
    assert sorted(t.get_text() for t in labels) == sorted(f"k={k}" for _, k in tiny)


def test_tradeoff_break_is_sized_by_what_each_panel_holds(metrics):
    """The fixture: 5 runs and BM25 near the best, 3 runs far below: the panels' heights are 6:3."""
    fig, axes, _ = plots.tradeoff_figure(metrics, REPORT, BACKBONES)
    upper, lower = _panel_heights(fig, axes)
    assert upper / (upper + lower) == pytest.approx(2 / 3, abs=0.01)
    assert plots.panel_heights([0.5, 0.01, 0.02, 0.03, 0.04, 0.05], (0.45, 0.55)) == pytest.approx(
        [plots.MIN_PANEL / (plots.MIN_PANEL + 5 / 6), (5 / 6) / (plots.MIN_PANEL + 5 / 6)])  # never under MIN_PANEL


def test_norms_figure_leaves_out_a_statistic_nobody_measured():
    """Before: a third panel 'max logit per text at k = 1 (probe)' with no bar, when the probe did
    not run. Now no empty panel: the figure says, below, what it leaves out and why."""
    norms = {"orig": {"frobenius_norm": 119.9, "mean_row_norm": 0.69},
             "twin": {"frobenius_norm": 1199.2, "mean_row_norm": 6.9}}
    fig, axes = plots.norms_figure(norms, {"orig": "1", "twin": "16"}, {}, BACKBONES)
    assert len(axes) == 2 and all(max(p.get_width() for p in ax.patches) > 0 for ax in axes)
    assert "max logit" in fig._supxlabel.get_text() and "probe did not run" in fig._supxlabel.get_text()  # noqa: SLF001
    probed = {**norms, "orig": {**norms["orig"], "max_logit": 7.4}}
    assert len(plots.norms_figure(probed, {}, {}, BACKBONES)[1]) == 3


def test_panel_titles_stay_inside_the_figure():
    """Before: the x10 twin's panel title ran past the right edge of loss_curves.png. Each title,
    however long its backbone's label, is inside the figure and does not reach the next title."""
    long = {"orig": {"model": "m", "label": "SPLADE-tiny MLM re-fit (BERT 2L, tied head)"},
            "twin": {"model": "m", "label": "SPLADE-tiny MLM re-fit x10 head (synthetic large-norm twin)",
                     "synthetic": True}}
    runs = {name: {"1": [(s, 2.0 / s) for s in range(1, 21)]} for name in ("orig", "orig+untie", "twin")}
    fig, axes, _ = plots.loss_figure(runs, long)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [ax.title.get_window_extent(renderer) for ax in axes]
    for box in boxes:
        assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 and box.y1 <= fig.bbox.y1
    assert all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:]))


# results/chance.json's shape: a random ranking's expected nDCG@10 on dataset d
CHANCE = {"datasets": {"d": {"measures": {"nDCG@10": {"expected": 0.0021, "sd": 0.0004}}}}}


def test_tradeoff_chance_line_and_every_mark_explained(metrics):
    fig, axes, _ = plots.tradeoff_figure(metrics, REPORT, BACKBONES, CHANCE)
    upper, lower = axes
    assert lower.get_ylim()[0] <= 0.0021 < lower.get_ylim()[1]  # the lower panel reaches down to chance
    chance_lines = [line for line in lower.get_lines() if line.get_linestyle() == "-." and
                    list(line.get_ydata()) == [0.0021, 0.0021]]
    assert len(chance_lines) == 1
    legend = fig.legends[0]
    texts = [t.get_text() for t in legend.texts]
    assert "Random ranking (expected): 0.002" in texts
    assert "Twin x10 †" in texts  # the dagger on the label, and what it means in the legend's title
    assert legend.get_title().get_text() == ("† synthetic backbone: a real checkpoint with its head scaled at load "
                                             "(see config).")
    one = {k: v for k, v in RUNS.items() if v[0] > 0.3}  # one axis from 0.35: chance is below it, and said so
    sub = metrics[[(r, k) in one or r == "BM25" for r, k in zip(metrics["backbone"], metrics["k"])]]
    fig, axes, _ = plots.tradeoff_figure(sub, REPORT, BACKBONES, CHANCE)
    assert "Random ranking (expected): 0.002 (below the y axis)" in [t.get_text() for t in fig.legends[0].texts]
    assert plots.tradeoff_figure(metrics, REPORT, BACKBONES)[0].legends[0].texts[-1].get_text().startswith("BM25")


def test_figure_colours_print_and_are_told_apart(metrics):
    """No light colour (the viridis end, the olive and yellow of tab10, Okabe-Ito's yellow): each colour's
    relative luminance (WCAG) at most 0.45 of white's, every colour and marker of the tradeoff distinct."""
    import matplotlib.colors as mcolors

    def luminance(colour: str) -> float:
        lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in mcolors.to_rgb(colour)]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    ks = plots.k_colors(["1", "2", "4", "8", "16", "auto"])
    assert len(set(ks.values())) == 6 and max(map(luminance, ks.values())) <= 0.45
    assert luminance("#F0E442") > 0.45 and luminance("#bcbd22") > 0.45  # what it refuses: yellow, olive
    fig, axes, _ = plots.tradeoff_figure(metrics, REPORT, BACKBONES)
    runs = [h for h in fig.legends[0].legend_handles if h.get_marker() not in (None, "None", "")]
    assert len(runs) == 3 and len({h.get_marker() for h in runs}) == 3 and len({h.get_color() for h in runs}) == 3
    assert max(luminance(h.get_color()) for h in runs) <= 0.45
