"""Training-seed noise inside the claims' tests (issue 48): the run-level term's p-value against a brute
force convolution, a one-seed difference that the queries alone call significant but a model's seed
offset explains (inconclusive with the declared seed sd), the sd estimated from 3 seeds by hand, runs
that are not trained adding no term, and the Noise line of every verdict in claims.md and claims.json."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from lsrbench.config.schema import with_defaults
from lsrbench.names import COLLAPSED
from lsrbench.report.claims.engine import evaluate_claims
from lsrbench.report.claims.evidence import Evidence, Settings
from lsrbench.report.claims.output import claims_markdown, claims_record
from lsrbench.report.claims.run_noise import difference_sd, seed_noise
from lsrbench.report.stats import macro_paired_test, sign_flip_p_value

BACKBONES = with_defaults("backbones", {"a": {"model": "ckpt-a"}, "b": {"model": "ckpt-b"},
                                        "released": {"model": "ckpt-r", "evaluate_only": True}})


def brute_force(weighted: np.ndarray, sd: float, df: float | None) -> float:
    """P(|T + E| >= |observed|) over every sign vector T of ``weighted`` and E ~ sd x N(0,1) or t(df)."""
    term = stats.norm(scale=sd) if df is None else stats.t(df, scale=sd)
    observed = abs(weighted.sum())
    return float(np.mean([term.sf(observed - t) + term.cdf(-observed - t)
                          for t in (np.array(s) @ weighted for s in itertools.product([1, -1], repeat=len(weighted)))]))


@pytest.mark.parametrize("df", [None, 4])
def test_the_run_level_term_is_convolved_with_the_sign_flips_exactly(df):
    w = np.array([0.1, -0.05, 0.2, 0.03, 0.07])
    p, method = sign_flip_p_value(w, 100, 0, run_sd=0.08, run_df=df)
    assert p == pytest.approx(brute_force(w, 0.08, df), rel=1e-9) and method == "exact (32 sign vectors)"
    flips = np.abs([np.array(s) @ w for s in itertools.product([1, -1], repeat=len(w))])
    beyond, at = np.mean(flips > abs(w.sum()) + 1e-12), np.mean(np.isclose(flips, abs(w.sum())))
    assert sign_flip_p_value(w, 100, 0)[0] == pytest.approx(beyond + at)  # no term: the query-only exact test
    # a term far wider than the queries' spread: p near 1; a negligible one: the exact test, its atoms at
    # the observed value halved (the term puts half of each on either side)
    assert sign_flip_p_value(w, 100, 0, run_sd=10.0)[0] > 0.97
    assert sign_flip_p_value(w, 100, 0, run_sd=1e-6)[0] == pytest.approx(beyond + at / 2, abs=1e-6)


def evidence(scores: dict, seeds: dict | None = None) -> Evidence:
    """Per-query scores per (run, k) on dataset d1 (one seed), or per (run, k, seed) when ``seeds`` (the
    evidence then holds their per-query mean and each seed's metrics, as read_evidence builds it)."""
    rows, perquery, seed_metrics = [], {}, {}
    by_model: dict = {}
    for key, values in scores.items():
        by_model.setdefault(key[:2], []).append(values)
        if seeds:
            seed_metrics.setdefault(key[2], []).append((key[0], key[1], "d1", "nDCG@10", float(np.mean(values))))
    for (run, k), arrays in by_model.items():
        mean = np.mean(arrays, axis=0)
        rows += [(run, k, "d1", "nDCG@10", float(mean.mean())), (run, k, "d1", COLLAPSED, 0.0)]
        perquery[(run, k, "d1")] = pd.DataFrame({"query_id": [f"q{i:05d}" for i in range(len(mean))],
                                                 "measure": "nDCG@10", "value": mean})
    columns = ["backbone", "k", "dataset", "measure", "value"]
    return Evidence(pd.DataFrame(rows, columns=columns), perquery, backbones=BACKBONES,
                    seed_metrics={s: pd.DataFrame(r, columns=columns) for s, r in seed_metrics.items()})


def claims_cfg(**settings) -> dict:
    spec = {"id": "a_beats_b", "text": "a beats b", "type": "compare", "a": {"backbone": "a", "k": 1},
            "b": {"backbone": "b", "k": 1}, "expect": "greater"}
    return with_defaults("claims", {"datasets": ["d1"], "list": [spec], "resamples": 2000, **settings})


def one_seed_pair(offset: float, n: int = 1000) -> Evidence:
    rng = np.random.default_rng(7)
    base = np.clip(0.4 + rng.normal(0, 0.2, n), 0, 1)
    return evidence({("a", "1"): np.clip(base + offset + rng.normal(0, 0.05, n), 0, 1),
                     ("b", "1"): np.clip(base + rng.normal(0, 0.05, n), 0, 1)})


def test_a_seed_offset_the_queries_call_significant_is_inconclusive_with_the_declared_seed_sd():
    """+0.02 over 1,000 queries: the query-only test says p < 1e-3 (holds); one seed offset of a model
    is about 0.013 (the tiny default's six seeds), so a difference of two models of sd 0.018 explains it."""
    ev = one_seed_pair(0.02)
    query_only = evaluate_claims(ev, claims_cfg(seed_sd=0.0))[0]
    with_seeds = evaluate_claims(one_seed_pair(0.02), claims_cfg())[0]
    assert query_only.verdict == "holds" and query_only.p_value < 1e-3
    assert with_seeds.verdict == "inconclusive"
    se = math.hypot(0.013 * math.sqrt(2), 0.05 * math.sqrt(2) / math.sqrt(1000))  # seeds and queries, roughly
    assert with_seeds.p_value == pytest.approx(2 * stats.norm.sf(with_seeds.diff / se), rel=0.1)
    big = evaluate_claims(one_seed_pair(0.1), claims_cfg())[0]  # 0.1: about 5 sd of the difference: still holds
    assert big.verdict == "holds"
    assert with_seeds.noise == "queries, training seeds (declared sd 0.013)"


def test_three_seeds_estimate_the_seed_sd_from_the_runs_themselves():
    """Seeds 1-3 of a and b, each seed's model shifted by its own offset: the pooled sd is computed by hand
    (within each run, 2 df each: 4 df), the term is sd x sqrt(1/3 + 1/3), t with 4 df."""
    rng = np.random.default_rng(3)
    base = np.clip(0.4 + rng.normal(0, 0.2, 500), 0, 1)
    offsets = {("a", "1"): 0.03, ("a", "2"): 0.05, ("a", "3"): 0.01, ("b", "1"): 0.0, ("b", "2"): 0.02,
               ("b", "3"): -0.02}
    scores = {(run, "1", seed): base + off for (run, seed), off in offsets.items()}
    ev = evidence(scores, seeds=True)
    s = Settings.from_config(claims_cfg())
    means = {key: float(np.mean(v)) for key, v in scores.items()}
    squares = sum((means[(r, "1", x)] - np.mean([means[(r, "1", y)] for y in "123"])) ** 2 for r in "ab" for x in "123")
    noise = seed_noise(ev, s, "nDCG@10", ["d1"])
    assert noise.sd == pytest.approx(math.sqrt(squares / 4)) and noise.df == 4
    assert "estimated from this run's 3 training seeds" in noise.source
    sd, df = difference_sd(ev, s, ("a", "1"), ("b", "1"), "nDCG@10", ["d1"])
    assert sd == pytest.approx(noise.sd * math.sqrt(2 / 3)) and df == 4
    v = evaluate_claims(ev, claims_cfg(seed_sd=0.0))[0]  # the declared value is not used with 3 seeds
    test = macro_paired_test([ev.scores("a", "1", "d1", "nDCG@10").to_numpy()],
                             [ev.scores("b", "1", "d1", "nDCG@10").to_numpy()], ["d1"], resamples=2000, seed=0,
                             run_sd=sd, run_df=4)
    assert v.p_value == pytest.approx(test.p_value) and v.verdict == "inconclusive"  # +0.03 against sd 0.02, 4 df


def test_a_run_that_is_not_trained_adds_no_seed_term():
    ev = evidence({("a", "1"): np.full(10, 0.5), ("released", "1"): np.full(10, 0.4)})
    s = Settings.from_config(claims_cfg())
    assert difference_sd(ev, s, ("a", "1"), ("released", "1"), "nDCG@10", ["d1"])[0] == pytest.approx(0.013)
    assert difference_sd(ev, s, ("a", "1"), ("b", "1"), "nDCG@10", ["d1"])[0] == pytest.approx(0.013 * math.sqrt(2))


def test_every_verdict_line_says_which_noise_it_accounts_for():
    ev = one_seed_pair(0.02)
    cfg = claims_cfg()
    cfg["list"].append({"id": "curves", "text": "curves", "type": "loss", "backbone": "a", "a_k": 1, "b_k": 1})
    verdicts = evaluate_claims(ev, cfg)
    md, record = claims_markdown(verdicts, cfg), claims_record(verdicts, cfg)
    assert md.count("Noise: ") == 2 and "Noise: none: no test." in md
    assert "Noise: queries, training seeds (declared sd 0.013)." in md
    assert [c["noise"] for c in record["claims"]] == ["queries, training seeds (declared sd 0.013)", "none: no test"]
    assert record["seed_sd"] == pytest.approx(0.013) and "tiny_default_seeds-metrics.csv" in record["seed_sd_source"]
    json.dumps(record)
