"""Training-seed noise in the claims' tests: each trained model is one draw of its training seed, so two runs
differ by a run-level offset that resampling queries does not see (Bouthillier et al., "Accounting for variance
in machine learning benchmarks", MLSys 2021)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lsrbench.names import FLOPS, RUN_COLUMN, k_value, split_run_name
from lsrbench.report.claims.evidence import Evidence, Settings
from lsrbench.report.results import collapsed_runs

__all__ = ["RunNoise", "ESTIMATED_FROM", "trained", "seed_noise", "difference_sd", "noise_text"]

# The fewest training seeds a run's own seed sd is estimated from; fewer: the declared value.
ESTIMATED_FROM = 3


@dataclass(frozen=True)
class RunNoise:
    """One trained model's run-level sd (units of the measure, or of log FLOPs), its degrees of
    freedom (None: declared, taken as known) and where it comes from."""

    sd: float
    df: float | None
    source: str


def trained(ev: Evidence, run: str) -> bool:
    """Whether a run is a trained model (a draw of its seed): not BM25, not a released checkpoint."""
    entry = ev.backbones.get(split_run_name(run)[0])
    return entry is not None and not entry.get("evaluate_only")


def _seed_values(ev: Evidence, run: str, k: str, measure: str, datasets: list[str], log: bool) -> list[float]:
    out = []
    for frame in ev.seed_metrics.values():
        sel = frame[(frame[RUN_COLUMN] == run) & (frame["k"] == k) & (frame["measure"] == measure)
                    & frame["dataset"].isin(datasets)]
        if len(sel) != len(datasets) or (log and (sel["value"] <= 0).any()):
            return []
        out.append(float((np.log(sel["value"]) if log else sel["value"]).mean()))
    return out


def _estimated(ev: Evidence, measure: str, datasets: list[str], log: bool) -> RunNoise | None:
    collapsed = collapsed_runs(ev.metrics)
    models = {(r, k) for r, k in zip(ev.metrics[RUN_COLUMN], ev.metrics["k"])
              if trained(ev, r) and k_value(k) is not None and (r, k) not in collapsed}
    squares, df = 0.0, 0
    for run, k in sorted(models):
        values = _seed_values(ev, run, k, measure, datasets, log)
        if len(values) >= 2:
            squares += float(np.sum((np.array(values) - np.mean(values)) ** 2))
            df += len(values) - 1
    if not df:
        return None
    what = "log FLOPs" if log else measure
    return RunNoise(math.sqrt(squares / df), df, f"estimated from this run's {len(ev.seed_metrics)} training seeds: "
                    f"{what} sd pooled within the trained, non-collapsed runs ({df} df)")


def seed_noise(ev: Evidence, s: Settings, measure: str, datasets: list[str], log: bool = False) -> RunNoise:
    """One trained model's run-level noise on ``measure`` over ``datasets`` (``log``: log FLOPs)."""
    key = (measure, tuple(datasets), log)
    if key not in ev._noise:
        found = _estimated(ev, measure, datasets, log) if len(ev.seed_metrics) >= ESTIMATED_FROM else None
        if found is None:
            field, sd = ("claims.seed_flops_cv", s.seed_flops_cv) if log else ("claims.seed_sd", s.seed_sd)
            found = RunNoise(sd, None, f"declared {field} = {sd:.4g} per model ({s.seed_sd_source})")
        ev._noise[key] = found
    return ev._noise[key]


def difference_sd(ev: Evidence, s: Settings, a: tuple[str, str], b: tuple[str, str], measure: str,
                  datasets: list[str], log: bool = False) -> tuple[float, float | None]:
    """The sd (and df) of the run-level term of ``a``'s value minus ``b``'s."""
    noise = seed_noise(ev, s, measure, datasets, log)
    seeds = max(1, len(ev.seed_metrics))
    share = sum(1.0 / seeds for run, _ in (a, b) if trained(ev, run))
    return noise.sd * math.sqrt(share), noise.df


def _brief(noise: RunNoise, what: str) -> str:
    return (f"declared sd {noise.sd:.3g}{what}" if noise.df is None
            else f"sd {noise.sd:.3g}{what} from this run's seeds, {noise.df:g} df")


def noise_text(ev: Evidence, s: Settings, measure: str, datasets: list[str],
               flops_datasets: list[str] | None = None) -> str:
    """What noise a comparison's test accounts for, in one line (claims.md, claims.json)."""
    text = f"queries, training seeds ({_brief(seed_noise(ev, s, measure, datasets), '')})"
    if flops_datasets:
        text += (f"; FLOPs: datasets, training seeds "
                 f"({_brief(seed_noise(ev, s, FLOPS, flops_datasets, True), ' of log FLOPs')})")
    return text
