"""Significance tests for the claims, on the statistic the tables print: the paired sign-flip test on the macro
mean (each query's difference weighted ``1 / (D * n_d)``), training-seed noise added as a run-level term
(``run_sd``). Written here rather than through ``scipy.stats.permutation_test`` because scipy materialises all
resamples at once without ``batch=`` (~0.7 MB per query at 10k resamples: 23 GB for BEIR-13): resamples are
drawn in batches (:data:`BATCH`), so memory is O(batch x queries), and the weighted statistic is a matrix
product."""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass

import numpy as np

__all__ = ["MacroTest", "macro_paired_test", "sign_flip_p_value", "stratified_bootstrap_ci", "holm",
           "spearman_exact", "BATCH", "MIN_INTERVAL_QUERIES"]

# Resamples per batch: the sign matrix is BATCH x queries float64 (~70 MB at BEIR-13's 33k queries).
BATCH = 256
# The fewest queries of a dataset the percentile bootstrap interval is computed with: below 10 its coverage falls
# well short of 95 % (with 3 it excludes 0 where the exact test gives p = 0.085). Fewer: no interval.
MIN_INTERVAL_QUERIES = 10


@dataclass
class MacroTest:
    """A paired test of the macro-mean difference ``mean_a - mean_b`` (``shift`` moved to 0 for a
    non-inferiority margin): ``p_value`` two-sided, ``ci_low``/``ci_high`` the bootstrap interval
    of the difference (None where it cannot be computed: ``ci_note`` says why)."""

    n_queries: dict[str, int]
    mean_a: float
    mean_b: float
    diff: float
    shift: float
    p_value: float
    ci_low: float | None
    ci_high: float | None
    method: str
    ci_note: str = ""
    run_sd: float = 0.0  # the run-level (training-seed) sd of the difference in the test: 0, query noise only

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def ci(self) -> tuple[float, float] | None:
        return None if self.ci_low is None else (self.ci_low, self.ci_high)

    def interval_text(self) -> str:
        """``[low, high]`` as claims.md prints it, or why there is none."""
        return f"[{self.ci_low:+.4f}, {self.ci_high:+.4f}]" if self.ci else f"[no interval: {self.ci_note}]"


def _weights(diffs: list[np.ndarray]) -> np.ndarray:
    return np.concatenate([np.full(len(d), 1.0 / (len(diffs) * len(d))) for d in diffs])


def _run_cdf(x: np.ndarray, run_sd: float, run_df: float | None) -> np.ndarray:
    from scipy.special import ndtr, stdtr

    z = x / run_sd
    return ndtr(z) if run_df is None else stdtr(run_df, z)


def _tail_hits(statistics: np.ndarray, observed: float, tol: float, run_sd: float, run_df: float | None) -> float:
    if run_sd <= 0:
        return float((np.abs(statistics) >= observed - tol).sum())
    reach = observed - tol
    return float((_run_cdf(statistics - reach, run_sd, run_df) + _run_cdf(-reach - statistics, run_sd, run_df)).sum())


def sign_flip_p_value(weighted: np.ndarray, resamples: int, seed: int, run_sd: float = 0.0,
                      run_df: float | None = None) -> tuple[float, str]:
    """Two-sided p-value of ``sum(weighted)`` under independent sign flips of its terms, plus an
    independent run-level term ``run_sd`` x N(0, 1) (x t(run_df) where given): exact over sign
    vectors when ``2**n <= resamples``, else Monte Carlo ``(1 + hits) / (1 + resamples)`` (Phipson
    and Smyth 2010), in batches of :data:`BATCH` resamples."""
    n = len(weighted)
    observed = abs(float(weighted.sum()))
    tol = 1e-12 * max(1.0, float(np.abs(weighted).sum()))  # float summation order, not a difference
    if n == 0 or not np.any(weighted):
        return 1.0, "no non-zero difference"
    if 2**n <= resamples:
        hits = 0.0
        for start in range(0, 2**n, BATCH):
            codes = np.arange(start, min(2**n, start + BATCH), dtype=np.int64)
            signs = 1.0 - 2.0 * ((codes[:, None] >> np.arange(n)) & 1)
            hits += _tail_hits(signs @ weighted, observed, tol, run_sd, run_df)
        return min(1.0, hits / 2**n), f"exact ({2**n} sign vectors)"
    hits = 0.0
    for signs in _sign_batches(n, resamples, seed):
        hits += _tail_hits(signs @ weighted, observed, tol, run_sd, run_df)
    return min(1.0, (1 + hits) / (1 + resamples)), f"{resamples} random sign vectors"


# Sign matrices of at most this many entries in all are kept (float64: 32 MB): every test of a claims
# file on one set of datasets draws the same ones (one claims.seed, one query count), so only the first
# pays for them; several sets are kept, since the frontier alternates its score and FLOPs tests.
CACHED_SIGNS = 4_000_000
_SIGNS: dict[tuple[int, int, int], list[np.ndarray]] = {}


def _sign_batches(n: int, resamples: int, seed: int):
    key = (n, resamples, seed)
    if key in _SIGNS:
        yield from _SIGNS[key]
        return
    rng, kept = np.random.default_rng(seed), []
    for start in range(0, resamples, BATCH):
        size = min(BATCH, resamples - start)
        signs = rng.integers(0, 2, size=(size, n), dtype=np.int8).astype(np.float64) * 2.0 - 1.0
        if n * resamples <= CACHED_SIGNS:
            kept.append(signs)
        yield signs
    if kept:
        while _SIGNS and sum(b.size for v in _SIGNS.values() for b in v) + n * resamples > CACHED_SIGNS:
            del _SIGNS[next(iter(_SIGNS))]  # the oldest first
        _SIGNS[key] = kept


def stratified_bootstrap_ci(diffs: list[np.ndarray], resamples: int, seed: int, confidence: float = 0.95,
                            run_sd: float = 0.0, run_df: float | None = None) -> tuple[float, float]:
    """Percentile interval of the macro mean of ``diffs`` (one array of paired differences per
    dataset), resampling queries with replacement within each dataset, in batches; each resample
    adds one draw of the run-level term (``run_sd``, ``run_df``: :func:`sign_flip_p_value`)."""
    rng = np.random.default_rng(seed)
    stats = np.empty(resamples)
    for start in range(0, resamples, BATCH):
        size = min(BATCH, resamples - start)
        total = np.zeros(size)
        for d in diffs:
            total += d[rng.integers(0, len(d), size=(size, len(d)))].mean(axis=1)
        stats[start:start + size] = total / len(diffs)
    if run_sd > 0:
        stats += run_sd * (rng.standard_normal(resamples) if run_df is None else rng.standard_t(run_df, resamples))
    alpha = 1.0 - confidence
    low, high = np.quantile(stats, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def macro_paired_test(a: list[np.ndarray], b: list[np.ndarray], names: list[str], shift: float = 0.0,
                      resamples: int = 10000, seed: int = 0, confidence: float = 0.95, run_sd: float = 0.0,
                      run_df: float | None = None, interval: bool = True) -> MacroTest:
    """Paired randomization test of the macro-mean difference of two runs."""
    if len(a) != len(b) or len(a) != len(names) or not a:
        raise ValueError("macro_paired_test: one pair of score arrays per dataset")
    a = [np.asarray(x, dtype=float) for x in a]
    b = [np.asarray(x, dtype=float) for x in b]
    if any(x.shape != y.shape or x.ndim != 1 or len(x) == 0 for x, y in zip(a, b)):
        raise ValueError("macro_paired_test: paired score arrays must be 1-D, non-empty and of equal length")
    diffs = [x - y for x, y in zip(a, b)]
    mean_a = float(np.mean([x.mean() for x in a]))
    mean_b = float(np.mean([y.mean() for y in b]))
    diff = float(np.mean([d.mean() for d in diffs]))
    weighted = _weights(diffs) * (np.concatenate(diffs) - shift)
    p, method = sign_flip_p_value(weighted, resamples, seed, run_sd, run_df)
    note, fewest = "", min(len(d) for d in diffs)
    if not interval:
        ci, note = (None, None), "not computed"
    elif all(np.ptp(d) == 0 for d in diffs) and run_sd <= 0:
        ci = (diff, diff)  # every resample gives the same difference: exact, whatever the sizes
    elif fewest < MIN_INTERVAL_QUERIES:
        ci, note = (None, None), (f"{fewest} quer{'y' if fewest == 1 else 'ies'} in a dataset, fewer than the "
                                  f"{MIN_INTERVAL_QUERIES} a bootstrap interval needs")
    else:
        ci = stratified_bootstrap_ci(diffs, resamples, seed, confidence, run_sd, run_df)
    run = "" if run_sd <= 0 else (f" plus a run-level term of sd {run_sd:.4g}"
                                  + (f" (t, {run_df:g} df)" if run_df is not None else " (normal)"))
    return MacroTest({n: len(x) for n, x in zip(names, a)}, mean_a, mean_b, diff, shift, p, ci[0], ci[1],
                     f"paired randomization of the macro mean over {len(a)} dataset(s), {method}{run}", note, run_sd)


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (same order as given; NaN entries are left out and stay NaN). Written
    here: scipy has no Holm, and statsmodels is not a dependency for six lines."""
    order = sorted((i for i in range(len(p_values)) if not math.isnan(p_values[i])), key=lambda i: p_values[i])
    m = len(order)
    adjusted = [float("nan")] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def spearman_exact(x, y, resamples: int = 10000, seed: int = 0) -> tuple[float, float, str]:
    """Spearman's rho and its two-sided permutation p-value: exact (every pairing) when
    ``n! <= max(resamples, 40320)``, else Monte Carlo. NaN when undefined (n < 3 or a constant)."""
    from scipy import stats

    x, y = np.asarray(x, float), np.asarray(y, float)
    n = len(x)
    if n < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan"), float("nan"), "undefined"
    rho = float(stats.spearmanr(x, y).statistic)
    if math.factorial(n) <= max(resamples, 40320):
        # Spearman's rho is Pearson's r of the (average) ranks: every pairing at once, not n! scipy calls
        rx, ry = stats.rankdata(x), stats.rankdata(y)
        rx, ry = rx - rx.mean(), ry - ry.mean()
        perms = np.array(list(itertools.permutations(range(n))))
        rhos = (ry[perms] @ rx) / math.sqrt(float(rx @ rx) * float(ry @ ry))
        hits = int((np.abs(rhos) >= abs(rho) - 1e-12).sum())
        return rho, hits / len(perms), f"exact ({len(perms)} permutations)"
    res = stats.permutation_test((y,), lambda v: stats.spearmanr(x, v).statistic, permutation_type="pairings",
                                 n_resamples=resamples, rng=np.random.default_rng(seed))
    return rho, float(res.pvalue), f"{resamples} random permutations"
