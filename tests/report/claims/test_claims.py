"""Claims on hand-made evidence: three-valued verdicts after Holm, non-inferiority with a margin, best k
chosen on select_on and tested elsewhere, by-construction twins (from the config only), correlation
needing three distinct checkpoints, the paper's best k (ours must be it), the frontier as Pareto
dominance on pooled FLOPs, the descriptive loss claim, claims.json carrying what claims.md shows
(means equal to the table's numbers), and the registry of claim types the validator, the claims
rule's inputs and the docs follow."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from lsrbench.config.schema import with_defaults
from lsrbench.names import COLLAPSED, FLOPS, POOLED
from lsrbench.report.claims.engine import CLAIM_TYPES, evaluate_claims, perquery_datasets
from lsrbench.report.claims.evidence import VERDICTS, Evidence, Verdict
from lsrbench.report.claims.output import claims_markdown, write_claims
from lsrbench.report.results import mean_score

N = 60
BACKBONES = with_defaults("backbones", {"orig": {"model": "ckpt"},
                                        "twin": {"model": "ckpt", "head_scale": 10, "synthetic": True},
                                        "other": {"model": "other-ckpt"}, "third": {"model": "third-ckpt"}})


def _scores(base: float, spread: float, seed: int, n: int = N) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(base + spread * (rng.random(n) - 0.5), 0, 1)


def evidence(runs: dict[tuple[str, str, str], np.ndarray], flops: dict | None = None, collapsed=(), **extra) -> Evidence:
    """Per-query nDCG@10 arrays per (run, k, dataset) -> metrics.csv rows (their means) and perquery
    frames; ``collapsed``: the (run, k) whose ``collapsed`` row is set."""
    rows, perquery = [], {}
    for (run, k, ds), values in runs.items():
        rows.append((run, k, ds, "nDCG@10", float(np.mean(values))))
        perquery[(run, k, ds)] = pd.DataFrame({"query_id": [f"q{i}" for i in range(len(values))],
                                               "measure": "nDCG@10", "value": values})
    for (run, k, ds), value in (flops or {}).items():
        rows.append((run, k, ds, FLOPS, value))
    for run, k in {(r, k) for r, k, _ in runs}:
        rows.append((run, k, "d1", COLLAPSED, float((run, k) in collapsed)))
    metrics = pd.DataFrame(rows, columns=["backbone", "k", "dataset", "measure", "value"])
    return Evidence(metrics, perquery, backbones=BACKBONES, **extra)


def claims(*specs, **settings) -> dict:
    """A claims block; without run-level (training-seed) noise unless given: these tests check the
    query-level tests' exact values (tests/report/claims/test_run_noise.py checks the seed term)."""
    return with_defaults("claims", {"datasets": ["d1"], "list": list(specs), "seed_sd": 0.0, "seed_flops_cv": 0.0,
                                    **settings})


def compare(cid, a, b, expect):
    def k(value):
        return value if value in ("best", "max") else float(value)

    return {"id": cid, "text": cid, "type": "compare", "a": {"backbone": a[0], "k": k(a[1])},
            "b": {"backbone": b[0], "k": k(b[1])}, "expect": expect}


def test_not_significant_is_inconclusive_and_significant_holds_or_fails():
    base = _scores(0.4, 0.6, 0)
    ev = evidence({("other", "1", "d1"): base, ("other", "4", "d1"): base + np.random.default_rng(12).normal(0, 0.1, N),
                   ("orig", "1", "d1"): np.clip(base + 0.2, 0, 1)})
    out = evaluate_claims(ev, claims(compare("tiny", ("other", "4"), ("other", "1"), "greater"),
                                     compare("big", ("orig", "1"), ("other", "1"), "greater"),
                                     compare("against", ("orig", "1"), ("other", "1"), "less")))
    verdicts = {v.id: v for v in out}
    assert verdicts["tiny"].verdict == "inconclusive" and verdicts["tiny"].p_value > 0.05
    assert verdicts["big"].verdict == "holds" and verdicts["against"].verdict == "fails"
    # Holm over the three tested claims: the smallest p-value is multiplied by 3
    smallest = min(out, key=lambda v: v.p_value)
    assert smallest.p_adjusted == pytest.approx(min(1.0, 3 * smallest.p_value))


def test_holm_turns_two_marginal_claims_inconclusive():
    # two claims each with exact p = 2/2**5 = 0.0625 / ... built to sit just under 0.05 raw
    a = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
    b = a - 0.1  # every query +0.1: exact p = 2/64 = 0.03125
    ev = evidence({("other", "1", "d1"): a, ("other", "4", "d1"): b, ("third", "1", "d1"): a, ("third", "4", "d1"): b})
    out = evaluate_claims(ev, claims(compare("c1", ("other", "1"), ("other", "4"), "greater"),
                                     compare("c2", ("third", "1"), ("third", "4"), "greater")))
    assert [v.p_value for v in out] == [pytest.approx(2 / 64)] * 2
    assert [v.p_adjusted for v in out] == [pytest.approx(4 / 64)] * 2
    assert [v.verdict for v in out] == ["inconclusive", "inconclusive"]
    single = evaluate_claims(ev, claims(compare("c1", ("other", "1"), ("other", "4"), "greater")))
    assert single[0].verdict == "holds"


def test_matches_or_beats_is_non_inferiority_with_the_margin():
    base = _scores(0.5, 0.4, 1, n=200)
    ev = evidence({("other", "1", "d1"): base, ("orig", "1", "d1"): base - 0.001, ("third", "1", "d1"): base - 0.05})
    spec_ok = compare("ni", ("orig", "1"), ("other", "1"), "not_less")
    spec_bad = compare("worse", ("third", "1"), ("other", "1"), "not_less")
    out = {v.id: v for v in evaluate_claims(ev, claims(spec_ok, spec_bad, margin=1.0))}
    assert out["ni"].verdict == "holds" and out["ni"].margin == pytest.approx(0.01)
    assert out["ni"].diff == pytest.approx(-0.001, abs=1e-12)
    assert out["worse"].verdict == "fails"  # 5 points worse, beyond the 1-point margin
    tight = {v.id: v for v in evaluate_claims(ev, claims(spec_ok, margin=0.0))}
    assert tight["ni"].verdict == "fails"  # no margin: a constant -0.001 is significantly below 0


def test_equivalent_is_two_one_sided_tests_within_the_margin():
    """TOST: equal within the margin holds only when both one-sided tests say so; a difference
    significantly outside it fails; a noisy difference near 0 is inconclusive, never "equal"."""
    base = _scores(0.5, 0.4, 1, n=200)
    noise = np.random.default_rng(7).normal(0, 0.25, 200)
    ev = evidence({("other", "1", "d1"): base, ("orig", "1", "d1"): base - 0.001, ("third", "1", "d1"): base - 0.05,
                   ("twin", "4", "d1"): np.clip(base + noise, 0, 1)})
    specs = [compare("same", ("orig", "1"), ("other", "1"), "equivalent"),
             compare("far", ("third", "1"), ("other", "1"), "equivalent"),
             compare("noisy", ("twin", "4"), ("other", "1"), "equivalent")]
    out = {v.id: v for v in evaluate_claims(ev, claims(*specs, margin=1.0))}
    assert out["same"].verdict == "holds" and out["same"].margin == pytest.approx(0.01)
    assert out["same"].diff == pytest.approx(-0.001, abs=1e-12)
    assert "above -margin: p = " in out["same"].details and "below +margin: p = " in out["same"].details
    assert out["far"].verdict == "fails"  # 5 points below: significantly outside the 1-point margin
    assert abs(out["noisy"].diff) < 0.05 and out["noisy"].verdict == "inconclusive", out["noisy"].details
    # no margin: nothing can be shown equal (a constant -0.001 is significantly below +0 and -0)
    assert {v.id: v.verdict for v in evaluate_claims(ev, claims(specs[0], margin=0.0))}["same"] == "fails"


def test_best_k_selected_on_select_on_and_tested_on_the_datasets():
    # on the selection set k=4 is best; on the test set k=16 would be: the claim tests k=4
    ev = evidence({("other", "1", "sel"): _scores(0.3, 0.1, 2), ("other", "4", "sel"): _scores(0.6, 0.1, 3),
                   ("other", "16", "sel"): _scores(0.5, 0.1, 4),
                   ("other", "1", "d1"): _scores(0.3, 0.1, 5), ("other", "4", "d1"): _scores(0.5, 0.1, 6),
                   ("other", "16", "d1"): _scores(0.7, 0.1, 7)})
    spec = compare("best", ("other", "best"), ("other", "1"), "greater")
    v = evaluate_claims(ev, claims(spec, select_on={"datasets": ["sel"]}))[0]
    assert v.runs[0] == ["other", "4"] and v.verdict == "holds"
    assert not any("same queries" in n for n in v.notes)
    v = evaluate_claims(ev, claims(spec))[0]
    assert v.runs[0] == ["other", "16"] and v.verdict == "holds"
    # tested over every k the choice could be: no note on the choice; claims.md's notes say where it was chosen
    assert not v.notes and "best k chosen on the test queries themselves" in claims_markdown([v], claims(spec))


def test_twins_of_one_checkpoint_are_by_construction():
    x = _scores(0.4, 0.5, 8)
    ev = evidence({("orig", "1", "d1"): x, ("orig", "2", "d1"): x - 0.2, ("twin", "10", "d1"): x,
                   ("twin", "20", "d1"): x - 0.001},
                  norms={"orig": {"frobenius_norm": 100.0}, "twin": {"frobenius_norm": 1000.0}})
    out = evaluate_claims(ev, claims(compare("same", ("twin", "10"), ("orig", "1"), "not_less"),
                                     {"id": "corr", "text": "corr", "type": "norm_best_k_correlation"}))
    assert [v.verdict for v in out] == ["by construction", "by construction"]
    assert out[0].p_adjusted is None and out[0].diff is None


def test_twins_on_a_grid_not_closed_under_their_scale_are_not_by_construction():
    """{1, 16} for the original and its x10 twin: 0.1 and 1.6 against 1 and 16 are other models, so the
    best ks can come out either way (the reference best at 16, the twin at 1): descriptive, never `by
    construction`, and twins of one checkpoint are no test of the norm."""
    x = _scores(0.4, 0.3, 9)
    ev = evidence({("orig", "1", "d1"): x - 0.1, ("orig", "16", "d1"): x, ("twin", "1", "d1"): x,
                   ("twin", "16", "d1"): x - 0.1},
                  norms={"orig": {"frobenius_norm": 100.0}, "twin": {"frobenius_norm": 1000.0}})
    v = evaluate_claims(ev, claims({"id": "corr", "text": "corr", "type": "norm_best_k_correlation"}))[0]
    assert v.verdict == "descriptive" and v.p_value is None
    assert "nor by construction" in v.details and "k / head scale differs" in v.details
    assert "does not grow" in v.details


def test_correlation_needs_three_distinct_checkpoints_and_has_an_exact_p_value():
    ks = {"orig": "1", "other": "4", "third": "16"}
    runs = {}
    for run, best in ks.items():
        for k in ("1", "4", "16"):
            runs[(run, k, "d1")] = _scores(0.6 if k == best else 0.3, 0.1, hash((run, k)) % 100)
    norms = {"orig": {"frobenius_norm": 1.0}, "other": {"frobenius_norm": 2.0}, "third": {"frobenius_norm": 3.0},
             "twin": {"frobenius_norm": 10.0}}
    spec = {"id": "corr", "text": "corr", "type": "norm_best_k_correlation"}
    v = evaluate_claims(evidence(runs, norms=norms), claims(spec))[0]
    assert v.diff == pytest.approx(1.0) and v.p_value == pytest.approx(2 / 6) and v.verdict == "inconclusive"
    two = {key: val for key, val in runs.items() if key[0] != "third"}
    v = evaluate_claims(evidence(two, norms=norms), claims(spec))[0]
    assert v.verdict == "not measured" and "three distinct checkpoints" in v.details


def test_best_k_matches_the_paper_reference():
    runs = {("other", k, "d1"): _scores(m, 0.05, i) for i, (k, m) in enumerate({"1": 0.3, "2": 0.6, "4": 0.4}.items())}
    ev = evidence(runs, reference={"optimal_k": {"other": 2}})
    spec = {"id": "k2", "text": "k2", "type": "best_k_matches_paper", "backbones": ["other"]}
    v = evaluate_claims(ev, claims(spec))[0]
    assert v.verdict == "holds" and v.paper == "other: k=2" and v.runs == [["other", "2"]]
    ev = evidence(runs, reference={"optimal_k": {"other": 4}})
    v = evaluate_claims(ev, claims(spec))[0]
    assert v.verdict == "fails" and "our best k = 2, the paper's k = 4" in v.details


def test_frontier_uses_pooled_flops_and_the_tradeoff_datasets():
    x = _scores(0.5, 0.3, 9, n=100)
    datasets = [f"n{i}" for i in range(8)]
    runs = {("other", k, ds): x + (0.001 if k == "4" else 0) for k in ("1", "4") for ds in datasets}
    # every dataset's FLOPs say k=4 is cheaper, the pooled FLOPs (what the plot draws) say it is not
    flops = {**{("other", "1", ds): 1.0 for ds in datasets}, **{("other", "4", ds): 0.5 for ds in datasets},
             ("other", "1", POOLED): 1.0, ("other", "4", POOLED): 1.2}
    report = {"tradeoff_measure": "nDCG@10", "flops_datasets": datasets, "columns": []}
    spec = {"id": "front", "text": "front", "type": "frontier", "backbones": ["other"]}
    v = evaluate_claims(evidence(runs, flops, report=report), claims(spec))[0]
    assert v.verdict == "inconclusive" and "FLOPs 1.2 vs 1" in v.details and v.datasets == datasets
    flops[("other", "4", POOLED)] = 0.5
    v = evaluate_claims(evidence(runs, flops, report=report), claims(spec))[0]
    assert v.verdict == "holds" and v.runs == [["other", "4"], ["other", "1"]]
    assert "exact (256 sign vectors)" in v.details  # 8 datasets' FLOPs: 2**8 sign vectors, p = 2/256


def test_frontier_flops_on_one_dataset_cannot_decide():
    """One dataset's FLOPs are one number per run: no test, so a FLOPs difference (either way) leaves
    the claim inconclusive, never `fails` on it (the tiny default: k=16 196 FLOPs vs 81 at k=1)."""
    x = _scores(0.5, 0.3, 9, n=100)
    runs = {("other", "1", "d1"): x, ("other", "16", "d1"): x + 0.1}
    report = {"tradeoff_measure": "nDCG@10", "flops_datasets": ["d1"], "columns": []}
    spec = {"id": "front", "text": "front", "type": "frontier", "backbones": ["other"]}
    for cheaper in (0.5, 2.0):
        flops = {("other", "1", "d1"): 1.0, ("other", "16", "d1"): cheaper}
        v = evaluate_claims(evidence(runs, flops, report=report), claims(spec))[0]
        assert v.verdict == "inconclusive" and v.p_value == 1.0 and "exact (2 sign vectors)" in v.details


def test_claims_json_and_markdown_carry_the_table_numbers(tmp_path):
    a, b = _scores(0.55, 0.4, 10), _scores(0.35, 0.4, 11)
    ev = evidence({("other", "1", "d1"): a, ("orig", "1", "d1"): b, ("other", "1", "d2"): b[:20], ("orig", "1", "d2"): a[:20]},
                  reference={"values": {"other": {1: {"T": 0.5}}, "orig": {1: {"T": 0.4}}}},
                  report={"columns": [{"name": "T", "datasets": ["d1", "d2"], "measure": "nDCG@10"}]})
    cfg = claims(compare("c", ("other", "1"), ("orig", "1"), "greater"), datasets=["d1", "d2"])
    verdicts = evaluate_claims(ev, cfg)
    write_claims(verdicts, cfg, str(tmp_path / "claims.md"), str(tmp_path / "claims.json"))
    record = json.loads((tmp_path / "claims.json").read_text())
    c = record["claims"][0]
    assert set(c) >= {"id", "verdict", "statistic", "difference", "interval", "p_value", "p_adjusted", "margin",
                      "runs", "datasets", "paper"}
    table_a = mean_score(ev.metrics, "other", "1", "nDCG@10", ["d1", "d2"])
    table_b = mean_score(ev.metrics, "orig", "1", "nDCG@10", ["d1", "d2"])
    assert c["difference"] == pytest.approx(table_a - table_b, abs=1e-12)
    assert c["paper"] == "other k=1 0.500 vs orig k=1 0.400: +0.100" and record["correction"] == "holm"
    assert f"other k=1 = {table_a:.4f} vs orig k=1 = {table_b:.4f}" in c["details"] and c["test"] == "other k=1 > orig k=1"
    md = (tmp_path / "claims.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| c "))  # the paper's number beside ours
    assert "other k=1 0.500 vs orig k=1 0.400: +0.100" in row and f"{c['difference']:+.4f}" in row
    assert "Test: other k=1 > orig k=1." in md


@pytest.mark.slow
def test_claims_rule_on_a_finished_run(micro_run, tmp_path):
    """As a user adds claims to a finished run: only report jobs run (every report, made again with
    the config that now states claims: one results folder holds one config's reports), and the
    claims job writes claims.md and claims.json (the forced collapse k=1e-30 is never a best k; one
    checkpoint: no correlation)."""
    import yaml

    from helpers.snakemake import COLLAPSE_K, copy_run, job_counts, run_snakemake

    work = copy_run(micro_run, tmp_path / "work")
    config = yaml.safe_load(micro_run["config"].read_text())
    config["claims"] = {"datasets": ["slice"], "resamples": 1000, "list": [
        compare("k1_beats_collapsed", ("rand-roberta", 1), ("rand-roberta", float(COLLAPSE_K)), "greater"),
        {"id": "best", "text": "best", "type": "compare", "a": {"backbone": "rand-roberta", "k": "best"},
         "b": {"backbone": "rand-roberta", "k": 1}, "expect": "not_less"},
        {"id": "corr", "text": "corr", "type": "norm_best_k_correlation"}]}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    out = run_snakemake("--cores", "1", "-d", str(work), "--configfile", str(path))
    # the snapshot of the config that now states claims (every report reads it) and every report,
    # the claims and their page among them; no job that computes a result
    jobs = {k for k in job_counts(out.stdout + out.stderr) if k != "total"}
    assert {"claims", "html_claims", "config_snapshot", "collect", "chance", "table1"} <= jobs, jobs
    assert not jobs & {"train", "index", "evaluate", "norm", "bm25", "dataset", "triplets"}, jobs
    record = json.loads((work / "results" / "claims.json").read_text())
    verdicts = {c["id"]: c for c in record["claims"]}
    # best k = 1 (the collapse is never a best k), the only k the choice can take and the other side's run:
    # nothing is left to test, so the claim is inconclusive, neither `by construction` nor tested on a 0
    assert verdicts["best"]["verdict"] == "inconclusive" and verdicts["best"]["runs"] == [["rand-roberta", "1"]] * 2
    assert "nothing is left to test" in verdicts["best"]["details"] and verdicts["best"]["p_value"] is None
    assert verdicts["corr"]["verdict"] == "not measured"
    assert verdicts["k1_beats_collapsed"]["p_value"] is not None and verdicts["k1_beats_collapsed"]["datasets"] == ["slice"]
    assert "| k1_beats_collapsed " in (work / "results" / "claims.md").read_text()


# ---------------------------------------------------------------------------------- issue 18, items 1-4
def test_a_best_side_is_tested_over_every_k_it_could_be():
    """RoBERTa's "k=16 hurts (vs its best k)" is "some other k beats k=16": when k=16 is clearly the best,
    every other k is significantly below it and the claim fails by that test; when k=16 leads by noise
    (1e-4) the claim is inconclusive, never `fails` because the choice made both sides one run."""
    ev = evidence({("other", "1", "d1"): _scores(0.3, 0.2, 20), ("other", "2", "d1"): _scores(0.4, 0.2, 21),
                   ("other", "16", "d1"): _scores(0.6, 0.2, 22)})
    v = evaluate_claims(ev, claims(compare("over", ("other", "max"), ("other", "best"), "less")))[0]
    assert v.verdict == "fails" and v.p_adjusted < 0.05 and v.runs == [["other", "16"], ["other", "16"]]
    assert "other's best k is 16" in v.details and "every k it could be (1, 2, 16)" in v.details
    assert "left out as one model on both sides: other k=16 vs other k=16" in v.details
    x, noise = _scores(0.5, 0.3, 23), np.random.default_rng(23).normal(0, 0.01, N)
    tie = evidence({("other", "2", "d1"): x, ("other", "16", "d1"): x + noise - noise.mean() + 1e-4})
    v = evaluate_claims(tie, claims(compare("over", ("other", "max"), ("other", "best"), "less")))[0]
    assert v.runs == [["other", "16"], ["other", "16"]] and v.verdict == "inconclusive"
    # a non-inferiority claim whose best side is the other side's run: the other ks are tested
    v = evaluate_claims(ev, claims(compare("ni", ("other", "best"), ("other", "16"), "not_less")))[0]
    assert v.verdict == "fails" and v.diff == 0 and "k=2 vs k=16" in v.details


def test_one_test_is_counted_once_in_holms_family():
    """"Rescaling recovers" and "the best k beats k=1" of one backbone are one test: one member of Holm's
    family (3 distinct tests, not 4), the second says whose test it is."""
    ev = evidence({("other", "1", "d1"): _scores(0.3, 0.2, 24), ("other", "16", "d1"): _scores(0.5, 0.2, 25),
                   ("orig", "1", "d1"): _scores(0.45, 0.2, 26), ("orig", "16", "d1"): _scores(0.2, 0.2, 27)})
    out = evaluate_claims(ev, claims({"id": "rec", "text": "rec", "type": "best_k_above", "backbones": ["other"]},
                                     compare("beats", ("other", "best"), ("other", "1"), "greater"),
                                     compare("under", ("other", "1"), ("orig", "1"), "less"),
                                     compare("over", ("orig", "max"), ("orig", "1"), "less")))
    rec, beats, under, over = out
    assert rec.test_key == beats.test_key and beats.same_test_as == "rec" and rec.same_test_as is None
    assert rec.p_adjusted == beats.p_adjusted and rec.verdict == beats.verdict == "holds"
    # Holm over 3: the smallest raw p times 3, not 4
    raws = sorted({v.p_value for v in (rec, under, over)})
    assert min(v.p_adjusted for v in out) == pytest.approx(min(1.0, 3 * raws[0]))
    assert "counted once by Holm" in beats.notes[-1]
    assert "Holm over 3 tests (4 claims)" in claims_markdown(out, claims())


def test_best_k_matches_paper_cannot_hold_when_our_selected_k_is_another():
    """Selected on `sel`: our best k is 4, the paper's 2. On the test set k=2 beats k=4 (today's test:
    "holds"), but k=8 beats both: the claim fails; without k=8 it is inconclusive, never holds."""
    sel = {"1": 0.3, "2": 0.5, "4": 0.7, "8": 0.4}
    test = {"1": 0.3, "2": 0.6, "4": 0.4, "8": 0.8}
    runs = {("other", k, ds): _scores(m, 0.05, 30 + i + 10 * (ds == "d1"))
            for ds, means in (("sel", sel), ("d1", test)) for i, (k, m) in enumerate(means.items())}
    spec = {"id": "k2", "text": "k2", "type": "best_k_matches_paper", "backbones": ["other"]}
    cfg = claims(spec, select_on={"datasets": ["sel"]})
    v = evaluate_claims(evidence(runs, reference={"optimal_k": {"other": 2}}), cfg)[0]
    assert v.verdict == "fails" and v.runs == [["other", "4"]]
    assert "our best k = 4" in v.details and "paper's k = 2" in v.details and "k=8" in v.details
    for k in ("2", "4"):  # both ks with their numbers, on the selection and the test set
        assert f"k={k}: {np.mean(runs[('other', k, 'sel')]):.4f}" in v.details
        assert f"k={k}: {np.mean(runs[('other', k, 'd1')]):.4f}" in v.details
    without_8 = {key: val for key, val in runs.items() if key[1] != "8"}
    v = evaluate_claims(evidence(without_8, reference={"optimal_k": {"other": 2}}), cfg)[0]
    assert v.verdict == "inconclusive" and v.p_adjusted < 0.05  # k=2 is significantly best on d1, yet not selected


FRONTIER_DATASETS = [f"n{i}" for i in range(8)]


def _frontier(runs: dict[str, tuple[float, float]], collapsed=()):
    """One backbone's runs k -> (mean nDCG@10, FLOPs) on 8 tradeoff datasets (each dataset's FLOPs and
    the pooled ones alike, so the FLOPs test over datasets can reach p = 2/256)."""
    scores = {("other", k, ds): _scores(m, 0.2, 40 + i + 20 * j, n=100)
              for i, (k, (m, _)) in enumerate(runs.items()) for j, ds in enumerate(FRONTIER_DATASETS)}
    flops = {("other", k, ds): f * (1 + 0.01 * j) for k, (_, f) in runs.items()
             for j, ds in enumerate([*FRONTIER_DATASETS, POOLED])}
    report = {"tradeoff_measure": "nDCG@10", "flops_datasets": FRONTIER_DATASETS, "columns": []}
    spec = {"id": "front", "text": "front", "type": "frontier", "backbones": ["other"]}
    return evaluate_claims(evidence(scores, flops, collapsed={("other", k) for k in collapsed}, report=report),
                           claims(spec))[0]


def test_frontier_is_pareto_dominance_of_k1_by_some_rescaled_run():
    # k=4 is cheaper and better than k=1; a degenerate, even cheaper k=16 (near 0, not flagged collapsed) is
    # strongly worse: it must not make the claim fail
    v = _frontier({"1": (0.50, 1.0), "4": (0.60, 0.5), "16": (0.05, 0.1)})
    assert v.verdict == "holds" and v.runs == [["other", "4"], ["other", "1"]]
    assert "Bonferroni over 2" in v.details
    # a run with more FLOPs does not dominate and does not make it fail while another does
    v = _frontier({"1": (0.50, 1.0), "4": (0.70, 1.05), "16": (0.55, 0.8)})
    assert v.verdict == "holds" and v.runs == [["other", "16"], ["other", "1"]]
    # a collapsed k=1 (ModernBERT's likely case) is dominated by a run that scores significantly higher,
    # whatever its FLOPs (a collapsed run's are near 0); the flag alone decides nothing
    v = _frontier({"1": (0.01, 0.2), "4": (0.40, 3.0)}, collapsed=["1"])
    assert v.verdict == "holds" and "k=1 has 0.216 FLOPs" in v.details and "flagged collapsed" in v.details
    assert v.p_value is not None and v.p_value < 0.05
    v = _frontier({"1": (0.40, 0.2), "4": (0.40, 3.0)}, collapsed=["1"])  # flagged, but scores as k=4 does
    assert v.verdict == "inconclusive"
    # every rescaled run is significantly worse, or significantly costlier: fails
    v = _frontier({"1": (0.50, 1.0), "4": (0.30, 0.5), "16": (0.55, 2.0)})
    assert v.verdict == "fails"


def test_loss_claim_is_descriptive_start_end_at_one_step_and_roughness(tmp_path):
    steps = range(1, 41)
    wiggle = [0.3 * (-1) ** s for s in steps]
    k1 = [{"step": s, "ranking_loss": (6.0 - 0.05 * s + w) if s <= 30 else float("nan")} for s, w in zip(steps, wiggle)]
    k4 = [{"step": s, "ranking_loss": 1.0 - 0.01 * s} for s in steps]
    x = _scores(0.5, 0.4, 50)
    ev = evidence({("other", "1", "d1"): x, ("other", "4", "d1"): x + 0.1, ("orig", "1", "d1"): x},
                  train_logs={("other", "1"): k1, ("other", "4"): k4})
    spec = {"id": "loss", "text": "loss", "type": "loss", "backbone": "other", "a_k": "best", "b_k": 1}
    cfg = claims(spec, compare("c", ("other", 4), ("orig", 1), "greater"))
    v, c = evaluate_claims(ev, cfg)
    assert v.verdict == "descriptive" and v.p_value is None and v.p_adjusted is None
    assert c.p_adjusted == c.p_value  # descriptive claims are not in Holm's correction
    # the end is compared at step 30, k=1's last finite step, and the claim says so
    assert "step 30" in v.details and "last finite" in v.details
    end_k4 = np.mean([r["ranking_loss"] for r in k4 if 26 <= r["step"] <= 30])
    assert f"{end_k4:.4f}" in v.details
    rough_k1 = np.std(np.diff([r["ranking_loss"] for r in k1[:30]]))
    assert f"{rough_k1:.4f}" in v.details and "smoother" in v.details
    # the table's cell in words (before: "start -4.820, end -3.940, roughness ..."): which run minus which, and
    # the start by hand: k=4 0.97 (mean of its first 5 losses) vs k=1 5.79; the end at step 30: 0.72 vs 4.66
    rough_k4 = np.std(np.diff([r["ranking_loss"] for r in k4[:30]]))
    assert v.estimate == (f"k=4 minus k=1, loss at the start -4.820, at the end -3.940; jumpiness "
                          f"{rough_k4:.3f} vs {rough_k1:.3f}: 3 of 3 as the paper says")
    write_claims([v, c], cfg, str(tmp_path / "claims.md"), str(tmp_path / "claims.json"))
    assert json.loads((tmp_path / "claims.json").read_text())["claims"][0]["verdict"] == "descriptive"
    row = next(line for line in (tmp_path / "claims.md").read_text().splitlines() if line.startswith("| loss "))
    assert row.rstrip(" |").endswith("descriptive")



def test_loss_claim_without_training_logs_says_the_start_in_words():
    """Only the step-0 probes (no training log): the cell names which k minus which and which starts lower."""
    probes = [{"backbone": "other", "k": k, "mode": "shared", "ranking_loss": loss} for k, loss in (("1", 3.5), ("4", 0.9))]
    x = _scores(0.5, 0.4, 50)
    ev = evidence({("other", "1", "d1"): x, ("other", "4", "d1"): x + 0.1}, probes=probes)
    spec = {"id": "loss", "text": "loss", "type": "loss", "backbone": "other", "a_k": "best", "b_k": 1}
    (v,) = evaluate_claims(ev, claims(spec))
    assert v.verdict == "descriptive"
    assert v.estimate == "k=4 minus k=1, loss at the start: -2.600 (k=4 lower)"
    assert "end and roughness: not measured" in v.details

# ---------------------------------------------------------------------------------- the registry (issue 20, finding 4)
def test_the_registry_is_the_schema_enum_and_the_docs_table():
    from pathlib import Path

    import yaml

    from lsrbench.config.schema import SCHEMA_DIR

    schema = yaml.safe_load((SCHEMA_DIR / "config.schema.yaml").read_text(encoding="utf-8"))
    item = schema["properties"]["claims"]["properties"]["list"]["items"]
    assert sorted(item["properties"]["type"]["enum"]) == sorted(CLAIM_TYPES)
    assert all(t.name == name for name, t in CLAIM_TYPES.items())
    docs = (Path(__file__).parents[3] / "docs" / "claims.md").read_text(encoding="utf-8")
    rows = {line.split("`")[1] for line in docs.splitlines() if line.startswith("| `")}
    assert rows == set(CLAIM_TYPES)


def test_every_verdict_word_is_listed_in_the_docs_the_readme_and_claims_md():
    from pathlib import Path

    root = Path(__file__).parents[3]
    docs = (root / "docs" / "claims.md").read_text(encoding="utf-8")
    section = docs.split("## Verdicts")[1].split("\n\n")[1]  # the bullet list: "- `holds` / `fails`: ..."
    listed = [w.strip() for line in section.splitlines() if line.startswith("- `")
              for w in line.split(":")[0].replace("`", "").lstrip("- ").split("/")]
    assert listed == list(VERDICTS)
    readme = next(line for line in (root / "README.md").read_text(encoding="utf-8").splitlines() if "`claims.md`, `claims.json`" in line)
    assert " / ".join(VERDICTS) in readme
    for word in VERDICTS[3:]:  # the verdicts no test decides: claims.md's notes say what the one given means
        assert f"`{word}`: " in claims_markdown([Verdict("c", "c", "loss", word)], claims())


def test_each_claim_type_names_its_runs_and_the_per_query_files_it_reads():
    loss = {"id": "l", "text": "l", "type": "loss", "backbone": "other", "b_k": 4}
    corr = {"id": "r", "text": "r", "type": "norm_best_k_correlation"}
    cmp_ = {**compare("c", ("other", "best"), ("orig", 1), "greater"), "datasets": ["d2"]}
    above = {"id": "a", "text": "a", "type": "best_k_above", "backbones": ["other", "orig"]}
    front = {"id": "f", "text": "f", "type": "frontier", "backbones": ["other"]}
    assert [tuple(r) for r in CLAIM_TYPES["loss"].runs(loss)] == [("backbone", "other", "a_k", "best"),
                                                                   ("backbone", "other", "b_k", 4)]
    assert [tuple(r) for r in CLAIM_TYPES["compare"].runs(cmp_)] == [("a.backbone", "other", "a.k", "best"),
                                                                      ("b.backbone", "orig", "b.k", 1.0)]
    assert [r.run_field for r in CLAIM_TYPES["best_k_above"].runs(above)] == ["backbones[0]", "backbones[1]"]
    config = {"evaluation": {"datasets": ["d1", "d2", "n1", "n2", "n3"]}, "report": {"flops_datasets": ["n1", "n2"]},
              "claims": {"datasets": ["d1"], "list": [loss, corr]}}
    assert perquery_datasets(config) == []  # training logs, norms and metrics.csv only
    config["claims"]["list"] += [cmp_, above, front]
    assert perquery_datasets(config) == ["d2", "d1", "n1", "n2"]
    config["report"]["flops_datasets"] = None  # the tradeoff plot then averages every evaluated dataset
    assert perquery_datasets(config) == ["d2", "d1", "n1", "n2", "n3"]


def test_only_absent_evidence_is_not_measured_other_errors_propagate():
    x = _scores(0.5, 0.3, 60)
    ev = evidence({("other", "1", "d1"): x, ("other", "4", "d1"): x + 0.1},
                  norms={"other": {"frobenius_norm": 1.0}, "orig": {"frobenius_norm": 2.0}})
    v = evaluate_claims(ev, claims(compare("c", ("other", 4), ("orig", 1), "greater")))[0]
    assert v.verdict == "not measured" and v.details == "no per-query scores of orig k=1 on d1"
    # a statistic norms.json does not have is a bug (the validator's or the norms stage's), not absent evidence
    spec = {"id": "r", "text": "r", "type": "norm_best_k_correlation", "statistic": "mean_row_norm"}
    with pytest.raises(KeyError, match="mean_row_norm"):
        evaluate_claims(ev, claims(spec))
