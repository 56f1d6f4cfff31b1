"""Paired significance tests over per-query scores (scipy.stats does the resampling)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats


@dataclass
class PairedTest:
    n: int
    mean_a: float
    mean_b: float
    mean_diff: float
    p_value: float
    cohens_dz: float
    ci_low: float
    ci_high: float
    test: str

    def as_dict(self) -> dict:
        return asdict(self)


def _mean_diff(x, y, axis=-1):
    return np.mean(x - y, axis=axis)


def paired_randomization_test(a, b, resamples: int = 10000, seed: int = 0, confidence: float = 0.95) -> PairedTest:
    """Two-sided paired randomization (sign-flip) test of mean(a - b), with Cohen's d_z and a
    bootstrap confidence interval of the mean difference. Exact when 2**n <= resamples."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("paired samples must be 1-D arrays of equal length")
    n = len(a)
    diff = a - b
    mean_diff = float(diff.mean()) if n else float("nan")
    if n == 0:
        return PairedTest(0, float("nan"), float("nan"), float("nan"), float("nan"), float("nan"), float("nan"), float("nan"), "none")
    if np.all(diff == 0):
        p = 1.0
        ci = (0.0, 0.0)
    else:
        res = stats.permutation_test((a, b), _mean_diff, permutation_type="samples", vectorized=True,
                                     n_resamples=resamples, alternative="two-sided", rng=np.random.default_rng(seed))
        p = float(res.pvalue)
        if n > 1 and np.ptp(diff) > 0:
            boot = stats.bootstrap((diff,), np.mean, n_resamples=resamples, confidence_level=confidence,
                                   method="percentile", rng=np.random.default_rng(seed))
            ci = (float(boot.confidence_interval.low), float(boot.confidence_interval.high))
        else:
            ci = (mean_diff, mean_diff)
    sd = float(diff.std(ddof=1)) if n > 1 else float("nan")
    dz = mean_diff / sd if sd and np.isfinite(sd) and sd > 0 else float("nan")
    return PairedTest(n, float(a.mean()), float(b.mean()), mean_diff, p, dz, ci[0], ci[1],
                      f"paired randomization (sign-flip), {'exact' if 2 ** min(n, 60) <= resamples else f'{resamples} resamples'}")


def spearman(x, y) -> tuple[float, float]:
    """Spearman rank correlation and its p-value (nan when undefined, e.g. n < 3 for the p-value)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan"), float("nan")
    res = stats.spearmanr(x, y)
    p = float(res.pvalue) if len(x) >= 3 else float("nan")
    return float(res.statistic), p
