"""The probe's report (issue 19): the recommended k against hand-computed crossings, the trained
outcomes and the rank correlation with its exact permutation p, probe.md/probe.json/probe.png, and
the step-0 loss claim 3 falls back to when a run has no training log."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from lsrbench.config.schema import with_defaults
from lsrbench.report.probe.plots import probe_figure
from lsrbench.report.probe.report import (MIN_CORRELATION_RUNS, probe_markdown, probe_outcomes, probe_record,
                                          recommend_k, start_loss)

BACKBONES = with_defaults("backbones", {"ref": {"model": "r", "label": "Reference"},
                                        "big": {"model": "b", "label": "Big", "synthetic": True},
                                        "odd": {"model": "o", "label": "Odd"}})
REPORT = with_defaults("report", {"columns": [{"name": "nDCG@10", "datasets": ["d"], "measure": "nDCG@10"}]})


def _run(backbone: str, k, scale: float, **more) -> dict:
    value = float(k) if k != "auto" else more.pop("k_value")
    return {"backbone": backbone, "k": str(k), "k_value": value, "mode": "shared", "score_scale": scale,
            "ranking_loss": scale / 10, "flops_loss": scale / 1000, "head": {"frobenius_norm": 100.0 / value},
            "triplets": 64, "batch_size": 16, "query_max_length": 64, "document_max_length": 64, **more}


RESULTS = [_run("ref", 1, 50.0), _run("ref", 4, 10.0), _run("big", 1, 100.0), _run("big", 4, 25.0),
           _run("big", 16, 2.0), _run("big", "auto", 50.0, k_value=2.0), _run("odd", 1, 400.0), _run("odd", 4, 300.0)]


def test_recommended_k_is_the_log_log_crossing_of_the_reference_value():
    recs = recommend_k(RESULTS, "ref")
    # big: 100 at k=1, 25 at k=4, target 50: ln 50 is halfway from ln 100 to ln 25, so k = 4 ** 0.5
    assert recs["big"]["k"] == pytest.approx(2.0) and recs["big"]["bracket"] == [1.0, 2.0]  # the auto run is a point
    assert recs["big"]["target"] == 50.0 and recs["big"]["probed_k"] == [1.0, 2.0, 4.0, 16.0]
    assert recs["ref"]["k"] == 1.0  # the reference matches itself at k = 1
    assert recs["odd"]["k"] is None and "above the reference's at every probed k (1 to 4): probe larger k" in recs["odd"]["note"]
    by_norm = recommend_k(RESULTS, "ref", statistic="frobenius_norm")  # any statistic, head ones included
    assert by_norm["big"]["k"] == pytest.approx(1.0)
    assert recommend_k(RESULTS, "missing")["big"]["note"] == "no score_scale of the reference missing at k = 1"


def _metrics(values: dict[tuple[str, str], float], collapsed=()) -> pd.DataFrame:
    rows = [(b, k, "d", "nDCG@10", v) for (b, k), v in values.items()]
    rows += [(b, k, "d", "collapsed", 1.0 if (b, k) in collapsed else 0.0) for (b, k) in values]
    return pd.DataFrame(rows, columns=["backbone", "k", "dataset", "measure", "value"])


def test_outcomes_and_the_exact_rank_correlation():
    """Five trained runs whose nDCG falls exactly as the probe's distance from the reference's scale
    grows: rho = 1, and exactly 2 of the 5! = 120 pairings reach |rho| = 1 (p = 1/60)."""
    # distances |ln(scale / 50)|: ref k=1 0, big k=1 ln 2, ref k=4 ln 5, odd k=1 ln 8, big k=16 ln 25
    trained = {("ref", "1"): 0.40, ("big", "1"): 0.30, ("ref", "4"): 0.20, ("odd", "1"): 0.10, ("big", "16"): 0.05}
    out = probe_outcomes(RESULTS, _metrics(trained, collapsed={("big", "16")}), REPORT, BACKBONES, "ref")
    assert out["n"] == 5 and out["rho"] == pytest.approx(1.0) and out["p_value"] == pytest.approx(2 / 120)
    assert out["method"] == "exact (120 permutations)"
    rows = {(r["backbone"], r["k"]): r for r in out["runs"]}
    assert rows[("big", "16")]["collapsed"] is True and rows[("big", "16")]["outcome"] == 0.05
    assert rows[("big", "1")]["prediction"] == pytest.approx(-math.log(2.0))
    assert rows[("odd", "4")]["outcome"] is None and rows[("odd", "4")]["collapsed"] is None  # not trained
    four = probe_outcomes(RESULTS, _metrics({k: v for k, v in list(trained.items())[:4]}), REPORT, BACKBONES, "ref")
    assert four["n"] == MIN_CORRELATION_RUNS - 1 and four["rho"] is not None and four["p_value"] is None


def test_probe_markdown_and_record(tmp_path):
    outcomes = probe_outcomes(RESULTS, _metrics({("ref", "1"): 0.4, ("big", "1"): 0.3}), REPORT, BACKBONES, "ref")
    md = probe_markdown(RESULTS, BACKBONES, "ref", outcomes=outcomes)
    table = [line for line in md.splitlines() if line.startswith("| ")]
    assert table[0].split("|")[1].strip() == "Backbone" and "score scale" in table[0] and "‖∇W FLOPS‖" in table[0]
    assert any(line.startswith("| Reference ★ ") for line in table) and any(line.startswith("| Big † ") for line in table)
    assert "on 64 training triplets in batches of 16 at lengths 64/64" in md and "nan" not in md.lower()
    assert "Spearman's rho: not measured (2 runs" in md and "## Recommended k (heuristic)" in md
    big = next(line for line in md.splitlines() if line.startswith("| Big † ") and "1, 2, 4, 16" in line)
    assert [c.strip() for c in big.strip("|").split("|")][2:4] == ["2", "1 – 2"]
    record = json.loads(json.dumps(probe_record(RESULTS, "ref", outcomes=outcomes)))
    assert record["recommendations"]["big"]["k"] == pytest.approx(2.0) and len(record["runs"]) == len(RESULTS)
    # before training (results/probe.md) there are no outcomes below: it points to probe_outcomes.md
    assert "The trained outcomes below test it." in md
    assert "The trained outcomes below" not in probe_markdown(RESULTS, BACKBONES, "ref")
    assert "probe_outcomes.md tests it" in probe_markdown(RESULTS, BACKBONES, "ref")


def test_probe_figure_draws_the_reference_value_and_the_crossing():
    fig, axes = probe_figure(RESULTS, BACKBONES, "ref")
    scale = next(ax for ax in axes if ax.get_title().startswith("in-batch score scale"))
    assert scale.get_xscale() == "log" and scale.get_yscale() == "log"
    horizontal = [line for line in scale.lines if list(line.get_ydata()) == [50.0, 50.0]]
    vertical = [line for line in scale.lines if list(line.get_xdata()) == [pytest.approx(2.0)] * 2]
    assert len(horizontal) == 1 and len(vertical) == 1
    curves = [line for line in scale.lines if len(line.get_xdata()) > 2]
    assert sorted(len(line.get_xdata()) for line in curves) == [4]  # big: k = 1, 2 (auto), 4, 16
    assert len(axes) == 3  # only the statistics the results have: score scale, ranking loss, FLOPS loss


def test_without_a_reference_backbone_nothing_is_marked_or_recommended():
    """A config without auto_k.reference (the micro runs): the probe still reports every run."""
    fig, axes = probe_figure(RESULTS, BACKBONES, None)
    assert all(list(line.get_xdata()) != [pytest.approx(2.0)] * 2 for ax in axes for line in ax.lines)
    assert not any("reference" in text.get_text() for legend in fig.legends for text in legend.get_texts())
    md = probe_markdown(RESULTS, BACKBONES, None)
    assert "No reference backbone (auto_k.reference)" in md and "★" not in md and "None" not in md


def test_start_loss_uses_the_training_log_else_the_probe():
    logs = {("big", "1"): [{"step": 1, "ranking_loss": 9.0}, {"step": 2, "ranking_loss": 7.0}], ("big", "4"): []}
    assert start_loss("big", "1", logs, RESULTS, window=2) == {"value": 8.0, "source": "training log",
                                                               "detail": "mean of the first 2 logged steps"}
    probe = start_loss("big", "4", logs, RESULTS)
    assert probe["source"] == "probe" and probe["value"] == pytest.approx(2.5)
    assert start_loss("big", "64", logs, RESULTS)["value"] is None


def test_norms_markdown_shows_three_statistics_and_how_they_rank(tmp_path):
    """Issue 18 item 7: a 50k-row head with smaller rows has the larger Frobenius norm (sqrt(V)
    grows) but the smaller mean row norm and logits; norms.md shows all three and says the
    rankings differ. norms.json files are read, never written."""
    from lsrbench.report.tables.norms import norms_markdown

    files = {}
    for name, frob, row, vocab in (("ref", 100.0, 0.60, 30522), ("big", 120.0, 0.55, 50368)):
        files[name] = tmp_path / f"{name}.json"
        files[name].write_text(json.dumps({"frobenius_norm": frob, "mean_row_norm": row, "max_row_norm": 1.0,
                                           "bias_norm": 0.0, "vocab_size": vocab, "hidden_size": 768, "tied": True}))
    before = {n: p.read_bytes() for n, p in files.items()}
    probes = [_run("ref", 1, 50.0, max_logit=9.0, mean_activation=0.7), _run("big", 1, 30.0, max_logit=6.0)]
    md = norms_markdown({n: str(p) for n, p in files.items()}, BACKBONES, probes)
    big = next(line for line in md.splitlines() if line.startswith("| Big †"))
    assert [c.strip() for c in big.strip("|").split("|")][1:6] == ["120.000", "0.550", "1.000", "6.000", "–"]
    assert "- by ‖W‖_F: Big † > Reference" in md and "- by mean ‖w_j‖: Reference > Big †" in md
    assert "- by max logit: Reference > Big †" in md and "rank the backbones in different orders." in md
    assert {n: p.read_bytes() for n, p in files.items()} == before
