"""Tables, claims and plots from fixed synthetic metric rows (exact assertions); the statistics
themselves are tested in test_stats.py, the claim types in test_claims.py."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from lsrbench.config.schema import with_defaults
from lsrbench.names import FLOPS, METRIC_COLUMNS, POOLED
from lsrbench.report import results
from lsrbench.report.figures import plots
from lsrbench.report.tables import beir as beir_table, norms as norms_table, table1
from lsrbench.report.claims.engine import Evidence, evaluate_claims
from lsrbench.report.results import pareto_front
from lsrbench.report.figures.tradeoff import tradeoff_points

BACKBONES = with_defaults("backbones", {
                               "small": {"model": "x", "label": "Small"},
                               "large": {"model": "y", "label": "Large", "synthetic": True},
                           })
REPORT = with_defaults("report", {
                            "columns": [{"name": "D nDCG@10", "datasets": ["d1", "d2"], "measure": "nDCG@10"}],
                            "flops_datasets": ["d1", "d2"],
                            "tradeoff_measure": "nDCG@10",
                            "beir_measure": "nDCG@10",
                        })
# (run, k) -> (nDCG@10 on d1, on d2, FLOPs)
RUNS = {
    ("small", "1"): (0.50, 0.40, 3.0),
    ("small", "4"): (0.45, 0.35, 2.0),
    ("small", "16"): (0.05, 0.01, 40.0),
    ("large", "1"): (0.20, 0.10, 20.0),
    ("large", "4"): (0.52, 0.42, 2.5),
    ("large", "16"): (0.48, 0.40, 1.0),
    ("small+untie", "16"): (0.30, 0.20, 5.0),
}
N_QUERIES = 8


def per_query(run, k, ds):
    """Deterministic per-query scores whose mean is the run's value on ``ds``."""
    mean = RUNS[(run, k)][0 if ds == "d1" else 1]
    offsets = np.array([-0.04, -0.03, -0.02, -0.01, 0.01, 0.02, 0.03, 0.04])
    return mean + offsets


@pytest.fixture()
def metrics() -> pd.DataFrame:
    rows = []
    for (run, k), (d1, d2, fl) in RUNS.items():
        for ds, v in (("d1", d1), ("d2", d2)):
            rows += [(run, k, ds, "nDCG@10", v), (run, k, ds, "FLOPs", fl), (run, k, ds, "query_active_dims", 10.0),
                     (run, k, ds, "doc_active_dims", 50.0), (run, k, ds, "collapsed", 1.0 if (run, k) == ("small", "16") else 0.0)]
    rows += [("BM25", "-", "d1", "nDCG@10", 0.3), ("BM25", "-", "d2", "nDCG@10", 0.2)]
    return pd.DataFrame(rows, columns=METRIC_COLUMNS)


@pytest.fixture()
def evidence(metrics) -> Evidence:
    pq = {}
    for run, k in RUNS:
        for ds in ("d1", "d2"):
            pq[(run, k, ds)] = pd.DataFrame({"query_id": [f"q{i}" for i in range(N_QUERIES)], "measure": "nDCG@10",
                                             "value": per_query(run, k, ds)})
    norms = {"small": {"frobenius_norm": 100.0}, "large": {"frobenius_norm": 1000.0}}
    logs = {("large", "1"): [{"step": s, "ranking_loss": 2.0 - 0.01 * s} for s in range(1, 21)],
            ("large", "4"): [{"step": s, "ranking_loss": 0.5 - 0.01 * s} for s in range(1, 21)]}
    pooled = pd.DataFrame([(run, k, POOLED, FLOPS, fl) for (run, k), (_, _, fl) in RUNS.items()], columns=METRIC_COLUMNS)
    return Evidence(pd.concat([metrics, pooled], ignore_index=True), pq, norms, logs, BACKBONES, REPORT)


def test_table1_best_k_collapsed_bm25_and_reference(metrics, tmp_path):
    ref = tmp_path / "ref.yaml"
    ref.write_text("values:\n  large:\n    4: {D nDCG@10: 0.405}\n")
    md = table1.table1_markdown(metrics, {**REPORT, "reference": str(ref)}, BACKBONES)
    lines = {tuple(c.strip() for c in line.strip("|").split("|")[:2]): line for line in md.splitlines() if line.startswith("|")}
    # mean over d1, d2: large k=4 is 0.47, its best; small's best is k=1 (0.45)
    assert "**0.470** (paper 0.405)" in lines[("Large †", "4")]
    assert "**0.450**" in lines[("Small", "1")]
    assert "collapsed" in lines[("Small", "16")] and "0.030" not in lines[("Small", "16")]
    assert "0.250" in lines[("BM25 (Anserini, k1=0.9, b=0.4)", "-")]
    assert "Small [untie]" in md
    # one bold per backbone swept over k (small, large); small+untie ran at k = 16 alone: nothing to be best among
    assert md.count("**") == 2 * 2
    assert "**" not in lines[("Small [untie]", "16")] and "0.250" in lines[("Small [untie]", "16")]
    order = [key for key in lines if key[0] not in ("Backbone",) and not key[0].startswith(":")]
    assert order[0] == ("BM25 (Anserini, k1=0.9, b=0.4)", "-")
    assert order.index(("Small", "1")) < order.index(("Small", "4")) < order.index(("Small", "16"))


def test_best_k_skips_collapsed_and_ties_take_smallest_k(metrics):
    assert results.best_ks(metrics, "nDCG@10", ["d1", "d2"]) == {"small": "1", "large": "4", "small+untie": "16"}
    tie = metrics.copy()
    tie.loc[(tie["backbone"] == "large") & (tie["k"] == "16") & (tie["measure"] == "nDCG@10"), "value"] = [0.52, 0.42]
    assert results.best_ks(tie, "nDCG@10", ["d1", "d2"])["large"] == "4"


def test_pareto_front_hand_example():
    pts = [("a", 1.0, 0.40), ("b", 2.0, 0.50), ("c", 3.0, 0.45), ("d", 2.0, 0.30), ("e", 0.5, 0.10)]
    # c is dominated by b (cheaper, better); d by b (same cost, worse) and a
    assert sorted(pareto_front(pts)) == ["a", "b", "e"]


CLAIMS = {
    "measure": "nDCG@10", "datasets": ["d1", "d2"], "alpha": 0.05, "resamples": 10000, "seed": 0,
    # the query-level tests' exact numbers (the training-seed term: tests/report/claims/test_run_noise.py)
    "seed_sd": 0.0, "seed_flops_cv": 0.0,
    "list": [
        {"id": "c1", "text": "large < small at k=1", "type": "compare", "a": {"backbone": "large", "k": 1},
         "b": {"backbone": "small", "k": 1}, "expect": "less"},
        {"id": "c2", "text": "large best k > 1", "type": "best_k_above", "backbones": ["large"], "above": 1},
        {"id": "c3", "text": "large best >= small k=1", "type": "compare", "a": {"backbone": "large", "k": "best"},
         "b": {"backbone": "small", "k": 1}, "expect": "not_less"},
        {"id": "c4", "text": "k grows with norm", "type": "norm_best_k_correlation", "backbones": ["small", "large"]},
        {"id": "c5", "text": "over-rescaling hurts small", "type": "compare", "a": {"backbone": "small", "k": "max"},
         "b": {"backbone": "small", "k": 1}, "expect": "less"},
        {"id": "c6", "text": "frontier", "type": "frontier", "backbones": ["large"]},
        {"id": "c7", "text": "loss lower", "type": "loss", "backbone": "large", "a_k": "best", "b_k": 1},
        {"id": "c8", "text": "untie vs shared", "type": "compare", "a": {"backbone": "small+untie", "k": 16},
         "b": {"backbone": "small", "k": 16}, "expect": "greater"},
        {"id": "c9", "text": "absent run", "type": "compare", "a": {"backbone": "nope", "k": 1},
         "b": {"backbone": "small", "k": 1}, "expect": "less"},
        {"id": "c10", "text": "small best k > 1 (fails)", "type": "best_k_above", "backbones": ["small"], "above": 1},
    ],
}


def test_claim_verdicts_and_numbers(evidence):
    verdicts = {v.id: v for v in evaluate_claims(evidence, with_defaults("claims", CLAIMS))}
    assert {k: v.verdict for k, v in verdicts.items()} == {
        "c1": "holds", "c2": "holds", "c3": "holds", "c4": "not measured", "c5": "holds", "c6": "inconclusive",
        "c7": "descriptive", "c8": "holds", "c9": "not measured", "c10": "fails",
    }
    c1 = verdicts["c1"]
    # 16 paired queries (8 per dataset), every difference -0.3: the macro difference is -0.3 and only
    # the all-minus and all-plus sign vectors (2 of 2**16) reach it
    assert c1.diff == pytest.approx(-0.30, abs=1e-12) and c1.p_value <= 3 / 10001
    assert c1.p_value <= c1.p_adjusted <= 7 * c1.p_value  # Holm over the 7 tested claims
    assert verdicts["c3"].runs[0] == ["large", "4"] and verdicts["c3"].margin == pytest.approx(0.01)
    assert "three distinct checkpoints" in verdicts["c4"].details  # two backbones, no p-value: not evidence
    assert verdicts["c5"].runs[0] == ["small", "16"]
    assert verdicts["c6"].runs == [["large", "16"], ["large", "1"]] or verdicts["c6"].runs == [["large", "4"], ["large", "1"]]
    # FLOPs on two datasets: 4 sign vectors, p >= 0.5: a FLOPs difference cannot be told from noise
    assert "exact (4 sign vectors)" in verdicts["c6"].details
    assert verdicts["c7"].runs[0] == ["large", "4"]
    assert verdicts["c10"].runs == [["small", "4"], ["small", "1"]]  # collapsed k=16 never the best k


def test_report_files_render(metrics, evidence, tmp_path):
    csv = tmp_path / "metrics.csv"
    metrics.to_csv(csv, index=False)
    plots.plot_tradeoff(str(csv), REPORT, BACKBONES, str(tmp_path / "t.png"), str(tmp_path / "t.pdf"))
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG" and (tmp_path / "t.pdf").read_bytes()[:4] == b"%PDF"
    pts = tradeoff_points(metrics, REPORT)
    assert ("small", "16") not in set(zip(pts["backbone"], pts["k"]))  # collapsed runs are not plotted
    plots.plot_loss_curves(evidence.train_logs, BACKBONES, str(tmp_path / "loss.png"))
    norms = {}
    for name, n in evidence.norms.items():
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps({**n, "mean_row_norm": 1, "max_row_norm": 2, "bias_norm": 0, "vocab_size": 5,
                                 "hidden_size": 2, "tied": True}))
        norms[name] = str(p)
    plots.plot_norms(norms, str(csv), REPORT, BACKBONES, str(tmp_path / "norms.png"))
    assert (tmp_path / "loss.png").stat().st_size > 1000 and (tmp_path / "norms.png").stat().st_size > 1000
    beir = beir_table.beir_markdown(metrics, REPORT, BACKBONES)
    assert "mean (D nDCG@10)" in beir and "0.470" in beir


def test_auto_k_section(metrics):
    metrics = pd.concat([metrics, pd.DataFrame([("large", "auto", d, "nDCG@10", v) for d, v in (("d1", 0.44), ("d2", 0.40))],
                                               columns=METRIC_COLUMNS)])
    norms = {"small": {"frobenius_norm": 100.0}, "large": {"frobenius_norm": 1000.0}}
    md = norms_table.auto_k_markdown(metrics, REPORT, BACKBONES, norms, {"reference": "small", "statistic": "frobenius_norm"})
    row = [line for line in md.splitlines() if line.startswith("| Large")][0]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "10.000" and cells[2] == "4"
    assert cells[3] == "0.470" and cells[4] == "0.420" and cells[5] == "0.050"
    small = [line for line in md.splitlines() if line.startswith("| Small ")][0]
    cells = [c.strip() for c in small.strip("|").split("|")]
    assert cells[4] == cells[5] == "–"  # no k: auto run of small: "–", never "nan"
    assert "nan" not in md


def test_table1_bolds_every_k_tied_at_the_shown_precision(metrics):
    """large k=16 at 0.4698 shows as 0.470 like the best (k=4, 0.470): both bold, the caption says
    why; best_k (the other reports) stays the unrounded best."""
    metrics = metrics.copy()
    sel = (metrics["backbone"] == "large") & (metrics["k"] == "16") & (metrics["measure"] == "nDCG@10")
    metrics.loc[sel, "value"] = [0.5198, 0.4198]  # mean 0.4698
    cells = table1.table1_cells(metrics, REPORT, BACKBONES)
    shown = {(r["backbone"], r["k"]): r["cells"][2]["text"] for r in cells["rows"]}
    assert shown[("large", "4")] == shown[("large", "16")] == "**0.470**"
    assert shown[("large", "1")] == "0.150"
    assert results.best_k(metrics, "large", "nDCG@10", ["d1", "d2"]) == "4"
    assert "every k that ties with it at this precision in bold" in table1.table1_markdown(metrics, REPORT, BACKBONES)


def test_table1_names_the_synthetic_twin_at_its_scale_as_the_original_at_k1(metrics):
    backbones = with_defaults("backbones", {"small": {"model": "m", "label": "Small"},
                                            "large": {"model": "m", "label": "Large", "synthetic": True, "head_scale": 10}})
    auto = pd.DataFrame([("large", "auto", d, m, v) for d in ("d1", "d2") for m, v in (("nDCG@10", 0.45), ("FLOPs", 3.0))],
                        columns=METRIC_COLUMNS)
    norms = {"small": {"frobenius_norm": 100.0}, "large": {"frobenius_norm": 1000.0}}
    md = table1.table1_markdown(pd.concat([metrics, auto]), REPORT, backbones, norms,
                                {"reference": "small", "statistic": "frobenius_norm"})
    assert ("Large † at k = auto (10) divides its head, scaled x10 at load, back by 10: that run is Small at "
            "k = 1, the same model") in md
    # no run at k = 10 or at an auto k of 10: no such note
    assert "divides its head" not in table1.table1_markdown(metrics, REPORT, backbones)
    other = {**norms, "large": {"frobenius_norm": 700.0}}
    assert "divides its head" not in table1.table1_markdown(pd.concat([metrics, auto]), REPORT, backbones, other,
                                                            {"reference": "small", "statistic": "frobenius_norm"})


def test_norms_markdown_never_prints_nan(tmp_path):
    path = tmp_path / "n.json"
    path.write_text(json.dumps({"frobenius_norm": 1.5, "mean_row_norm": float("nan"), "max_row_norm": 2.0,
                                "bias_norm": None, "vocab_size": 5, "hidden_size": 2, "tied": True}))
    md = norms_table.norms_markdown({"small": str(path)}, BACKBONES)
    row = [line for line in md.splitlines() if line.startswith("| Small")][0]
    # not probed: the probe's two columns are left out (a note says so), not shown as all "–"
    assert [c.strip() for c in row.strip("|").split("|")] == ["Small", "1.500", "–", "2.000", "–", "5", "2", "yes"]
    assert "max logit" not in md.split("\n\n")[2] and "step-0 probe did not run" in md


def test_released_run_is_labelled_and_has_no_k_sweep_to_correlate(metrics, evidence):
    """An evaluate_only backbone (a released checkpoint): one run at k = 1, marked with its own
    footnote in the tables, and left out of the "optimal k grows with the norm" correlation (one k
    is not a sweep), whose numbers stay those of the two swept backbones."""
    backbones = {**BACKBONES, **with_defaults("backbones", {"rel": {"model": "z", "label": "Released", "evaluate_only": True}})}
    rows = [("rel", "1", ds, m, v) for ds in ("d1", "d2")
            for m, v in (("nDCG@10", 0.9), ("FLOPs", 1.0), ("query_active_dims", 5.0), ("doc_active_dims", 9.0),
                         ("collapsed", 0.0))]
    metrics = pd.concat([metrics, pd.DataFrame(rows, columns=METRIC_COLUMNS)], ignore_index=True)
    md = table1.table1_markdown(metrics, REPORT, backbones)
    row = next(line for line in md.splitlines() if line.startswith("| Released ‡"))
    assert "0.900" in row and "**" not in row and results.RELEASED_NOTE in md and md.count("‡") == 2
    assert "Released ‡" in beir_table.beir_markdown(metrics, REPORT, backbones)
    spec = {"id": "c", "text": "k grows with norm", "type": "norm_best_k_correlation"}
    cfg = with_defaults("claims", {**CLAIMS, "list": [spec]})
    ev = Evidence(metrics, evidence.perquery, {**evidence.norms, "rel": {"frobenius_norm": 1.0}}, evidence.train_logs,
                  backbones, REPORT)
    verdict = evaluate_claims(ev, cfg)[0]
    without = evaluate_claims(evidence, cfg)[0]  # the same claim on the swept backbones alone
    assert (verdict.verdict, verdict.details, verdict.runs) == (without.verdict, without.details, without.runs)
    assert "rel" not in verdict.details and all(run != "rel" for run, _ in verdict.runs)


def test_bm25_row_is_named_by_its_settings(metrics):
    """The reference row says how BM25 was computed (report.bm25_settings), in every table."""
    from lsrbench.report.results import bm25_label

    settings = {**REPORT, "bm25_settings": {"analyzer": "bm25s", "k1": 1.2, "b": 0.75}}
    assert bm25_label(settings) == "BM25 (bm25s, unstemmed, k1=1.2, b=0.75)"
    assert bm25_label(REPORT) == "BM25 (Anserini, k1=0.9, b=0.4)"  # the schema's defaults
    assert "| BM25 (bm25s, unstemmed, k1=1.2, b=0.75) |" in table1.table1_markdown(metrics, settings, BACKBONES)
    assert "| BM25 (bm25s, unstemmed, k1=1.2, b=0.75) |" in beir_table.beir_markdown(metrics, settings, BACKBONES)


def test_bm25_row_on_a_pooled_dataset_gets_its_note(metrics):
    """Before: BM25 (0.455) above every SPLADE run on the tiny default's pool, without a word: with
    evaluation.pool_depth, Table 1 and table_beir say how the pool was made and what it can do."""
    from lsrbench.report.config_record import report_settings

    config = {"report": REPORT, "backbones": BACKBONES, "evaluation": {"pool_depth": 50}}
    pooled = report_settings(config)
    note = ("BM25's row: every run is evaluated on a pooled subset, the judged documents and each query's top-50 BM25 "
            "documents of the full collection (evaluation.pool_depth).")
    for text in (table1.table1_markdown(metrics, pooled["report_cfg"], BACKBONES),
                 beir_table.beir_markdown(metrics, pooled["report_cfg"], BACKBONES)):
        (paragraph,) = [p for p in text.split("\n\n") if p.startswith("BM25's row:")]
        assert paragraph.startswith(note) and "so on the full collection it would score at most what it scores here" \
            in paragraph
    full = report_settings({**config, "evaluation": {"pool_depth": None}})
    assert full["report_cfg"] == REPORT  # unpooled: the report block as configured
    no_bm25 = metrics[metrics["backbone"] != "BM25"]
    for text in (table1.table1_markdown(metrics, full["report_cfg"], BACKBONES),
                 table1.table1_markdown(no_bm25, pooled["report_cfg"], BACKBONES),
                 beir_table.beir_markdown(no_bm25, pooled["report_cfg"], BACKBONES)):
        assert "BM25's row" not in text
