"""The claims' statistics: the macro-mean randomization test (hand-enumerated p-values, agreement with
scipy's own permutation test, the table's statistic rather than the pooled mean), its memory bound at
BEIR-13's 33k queries, Holm's adjustment and Spearman's exact p-value, all against hand-computed values."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from scipy import stats

from lsrbench.report.stats import holm, macro_paired_test, sign_flip_p_value, spearman_exact


def test_statistic_is_the_difference_of_macro_means_not_of_pooled_means():
    # one query on dataset A (+3), nine on dataset B (-0.5 each): the table's macro mean says +1.25,
    # pooling all ten queries would say -0.15 (the other sign)
    a = [np.array([3.0]), np.full(9, 0.0)]
    b = [np.array([0.0]), np.full(9, 0.5)]
    t = macro_paired_test(a, b, ["A", "B"], resamples=1000)
    assert t.diff == pytest.approx(1.25) and t.mean_a == pytest.approx(1.5) and t.mean_b == pytest.approx(0.25)
    assert np.mean(np.concatenate(a) - np.concatenate(b)) == pytest.approx(-0.15)
    assert t.n_queries == {"A": 1, "B": 9}


def test_exact_p_value_enumerated_by_hand():
    # A: one query, diff 2 (weight 1/2); B: two queries, diff 1 each (weight 1/4). Observed 1.5.
    # The 8 sign vectors give 1.5, 1, 1, 0.5, -0.5, -1, -1, -1.5: |x| >= 1.5 twice -> p = 2/8.
    t = macro_paired_test([np.array([2.0]), np.array([1.0, 1.0])], [np.zeros(1), np.zeros(2)], ["A", "B"],
                          resamples=10000)
    assert t.p_value == 0.25 and "exact (8 sign vectors)" in t.method
    assert t.diff == pytest.approx(1.5)


def test_monte_carlo_p_value_agrees_with_scipy_on_one_dataset():
    rng = np.random.default_rng(3)
    a, b = rng.random(40), rng.random(40) - 0.15
    ours = macro_paired_test([a], [b], ["only"], resamples=20000, seed=1)
    ref = stats.permutation_test((a, b), lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples",
                                 vectorized=True, n_resamples=20000, rng=np.random.default_rng(2))
    assert ours.diff == pytest.approx(np.mean(a - b))
    assert abs(ours.p_value - ref.pvalue) < 0.01


def test_non_inferiority_shift():
    # identical runs: the difference (0) is 0.02 above -margin on every query -> the shifted test
    # rejects H0 "difference = -margin" (exactly: all 2**10 sign vectors, only the all-plus and
    # all-minus reach it)
    x = np.linspace(0, 1, 10)
    t = macro_paired_test([x], [x], ["d"], shift=-0.02, resamples=2000)
    assert t.diff == 0 and t.p_value == pytest.approx(2 / 1024)
    assert macro_paired_test([x], [x], ["d"], resamples=2000).p_value == 1.0


def test_sign_flip_monte_carlo_is_reproducible_and_bounded_below():
    w = np.full(100, 0.01)
    p1, method = sign_flip_p_value(w, 999, seed=5)
    assert p1 == pytest.approx(1 / 1000) and "999 random" in method
    assert sign_flip_p_value(w, 999, seed=5)[0] == p1


def test_kept_sign_vectors_give_the_p_values_drawn_fresh(monkeypatch):
    """Tests alternating between query counts and seeds (the frontier's score and FLOPs tests) reuse
    the kept sign vectors of each: every p equals the one drawn with nothing kept (CACHED_SIGNS 0;
    3,001 resamples: no other test's vectors are kept)."""
    from lsrbench.report import stats as report_stats

    rng = np.random.default_rng(3)
    calls = [(rng.normal(size=n), seed) for n, seed in ((40, 11), (13, 11), (40, 12), (13, 11), (25, 11), (40, 11))]

    def p_values():
        return [sign_flip_p_value(w, 3001, seed, run_sd=0.1 * (i % 2))[0] for i, (w, seed) in enumerate(calls)]

    with monkeypatch.context() as m:
        m.setattr(report_stats, "CACHED_SIGNS", 0)
        fresh = p_values()
    assert p_values() == fresh and p_values() == fresh and all(0 < p < 1 for p in fresh)


def test_holm_by_hand():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, float("nan"), 0.01]) == pytest.approx([0.5, float("nan"), 0.02], nan_ok=True)
    assert holm([0.9, 0.8]) == [1.0, 1.0]


def test_spearman_exact_p_values():
    rho, p, method = spearman_exact([1, 2, 3], [1, 4, 16])
    assert rho == 1.0 and p == pytest.approx(2 / 6) and "exact (6 permutations)" in method
    rho, p, _ = spearman_exact(range(7), [1, 1, 2, 2, 4, 8, 16])
    assert rho > 0.95 and p < 0.01
    assert np.isnan(spearman_exact([1, 2], [1, 2])[1])


BEIR13_QUERIES = [50, 323, 3452, 7405, 648, 1406, 49, 400, 1000, 6666, 1535, 300, 10000]  # 33,234


def test_memory_bounded_at_beir13_scale(tmp_path):
    """10,000 resamples over BEIR-13's 33k queries stay under 2 GB (scipy without batch= needs ~23 GB)."""
    script = textwrap.dedent(f"""
        import json, resource, time
        import numpy as np

        def peak_mb():
            # this process's own high-water mark: ru_maxrss also counts the pytest process this one
            # was spawned from (Linux keeps the larger of the two across exec), GBs late in a suite
            try:
                with open("/proc/self/status") as fh:
                    return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) / 1024
            except (OSError, StopIteration):
                return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        from lsrbench.report.stats import macro_paired_test
        rng = np.random.default_rng(0)
        sizes = {BEIR13_QUERIES}
        a = [rng.random(n) for n in sizes]
        b = [x - 0.01 + 0.2 * (rng.random(len(x)) - 0.5) for x in a]
        start = time.time()
        t = macro_paired_test(a, b, [str(i) for i in range(len(sizes))], resamples=10000, seed=0)
        print(json.dumps({{"rss_mb": peak_mb(),
                          "seconds": time.time() - start, "p": t.p_value, "diff": t.diff, "n": sum(sizes)}}))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["n"] == 33234
    assert result["rss_mb"] < 2048, result
    assert result["diff"] == pytest.approx(0.01, abs=0.002) and result["p"] < 0.01


def test_the_interval_is_not_computed_from_too_few_queries_per_dataset():
    """One query per dataset made the bootstrap a point ([+0.0451, +0.0451] beside p = 0.31); three made it
    exclude 0 beside p = 0.085. Below MIN_INTERVAL_QUERIES in any dataset: no interval, and why."""
    from lsrbench.report.stats import MIN_INTERVAL_QUERIES

    rng = np.random.default_rng(4)
    few = [rng.random(3) for _ in range(13)], [rng.random(3) for _ in range(13)]
    t = macro_paired_test(*few, [str(i) for i in range(13)], resamples=2000)
    assert t.ci is None and t.ci_low is None and "3 queries in a dataset" in t.ci_note
    assert t.interval_text().startswith("[no interval: 3 queries")
    enough = [rng.random(MIN_INTERVAL_QUERIES)], [rng.random(MIN_INTERVAL_QUERIES)]
    t = macro_paired_test(*enough, ["d"], resamples=2000)
    assert t.ci is not None and t.ci_low < t.diff < t.ci_high and t.ci_note == ""
    # a constant difference has an exact interval whatever the number of queries
    t = macro_paired_test([np.ones(2)], [np.zeros(2)], ["d"], resamples=2000)
    assert t.ci == (1.0, 1.0)
