"""The ``loss`` claim as arXiv 2606.18811 states it: unrescaled large-norm models start with very high loss and
converge to poor minima, rescaled ones have smoother curves and lower final loss."""

from __future__ import annotations

import math

import numpy as np

from lsrbench.report.claims.claim_type import ClaimRun, ClaimType, selection_notes
from lsrbench.report.claims.evidence import DESCRIPTIVE, Evidence, NotMeasured, Settings, Verdict, resolve_k, run_text
from lsrbench.report.probe.report import start_loss

__all__ = ["Loss", "finite_curve", "roughness"]


def finite_curve(rows: list[dict], key: str) -> tuple[list[int], list[float]]:
    """(steps, values) of the log rows whose ``key`` is a finite number, up to the first that is not:
    a run whose loss turned NaN or infinite stops there (it collapsed)."""
    steps, values = [], []
    for row in rows:
        value = row.get(key)
        if value is None or not math.isfinite(value):
            break
        steps.append(row["step"])
        values.append(float(value))
    return steps, values


def roughness(values: list[float]) -> float:
    """The standard deviation of the step-to-step changes of a curve (NaN under three points)."""
    return float(np.std(np.diff(values))) if len(values) >= 3 else math.nan


class Loss(ClaimType):
    """Run a (best k by default) against run b (k=1) of one backbone: where it starts (the mean of the first
    ``window`` logged losses, or without a training log the step-0 probe's loss:
    :func:`lsrbench.report.probe.report.start_loss`, which says which), the mean of the last ``window`` up to
    the last step both runs have a finite loss at, and the roughness of both curves up to that step (these two
    need both training logs)."""

    name = "loss"

    def runs(self, spec: dict) -> list[ClaimRun]:
        return [ClaimRun("backbone", spec["backbone"], key, spec.get(key, default))
                for key, default in (("a_k", "best"), ("b_k", 1))]

    def perquery_datasets(self, spec: dict, config: dict) -> list[str]:
        return []  # training logs (or the probes) only

    def evaluate(self, ev: Evidence, spec: dict, s: Settings) -> Verdict:
        run = spec["backbone"]
        a, b = ((run, resolve_k(ev, s, run, spec.get(key, default))) for key, default in (("a_k", "best"), ("b_k", 1)))
        window, key = int(spec.get("window", 5)), spec.get("loss", "ranking_loss")
        if a[1] is None or b[1] is None:
            raise NotMeasured(f"{run}: no best k (every k collapsed or unfinished)")
        (sa, la), (sb, lb) = finite_curve(ev.train_logs.get(a) or [], key), finite_curve(ev.train_logs.get(b) or [], key)
        v = self.verdict(spec, verdict=DESCRIPTIVE, runs=[list(a), list(b)])
        if ev.seed_metrics:  # one seed's curves need no note (claims.md says every run has one seed)
            v.notes.append(f"the training losses averaged over {len(ev.seed_metrics)} seeds step by step")
        v.notes += selection_notes(ev, s, [run], spec.get("a_k", "best") == "best")
        for side, values in ((a, la), (b, lb)):
            if ev.train_logs.get(side) and not values:
                v.details = f"{key}: {run_text(*side)} has no finite loss from its first logged step"
                return v
        starts = [start_loss(*side, ev.train_logs, ev.probes, key, window) for side in (a, b)]
        missing = [run_text(*side) for side, start in zip((a, b), starts) if start["value"] is None]
        if missing:
            raise NotMeasured(f"no training log (or zero training steps) and no probe of {' and '.join(missing)}")
        start = (starts[0]["value"], starts[1]["value"])
        where = "; ".join(f"{run_text(*side)} from the {st['source']} ({st['detail']})" for side, st in zip((a, b), starts))
        if not la or not lb:
            v.estimate = (f"{_minus(a, b)}, loss at the start: {start[0] - start[1]:+.3f} "
                          f"(k={(a if start[0] < start[1] else b)[1]} lower)")
            v.details = (f"{key}, a = {run_text(*a)}, b = {run_text(*b)}: start {start[0]:.4f} vs {start[1]:.4f} "
                         f"({where}); the paper says the rescaled run starts lower: "
                         f"{'yes' if start[0] < start[1] else 'no'}; end and roughness: not measured (no training "
                         f"log of {' and '.join(run_text(*side) for side, c in ((a, la), (b, lb)) if not c)})")
            return v
        _curves(v, key, (a, b), (sa, sb), (la, lb), start, where, window, ev.train_logs)
        return v


def _minus(a, b) -> str:
    return f"k={a[1]} minus k={b[1]}"


def _curves(v: Verdict, key: str, sides, steps, losses, start, where: str, window: int, logs: dict) -> None:
    (a, b), (sa, sb), (la, lb) = sides, steps, losses
    last = min(sa[-1], sb[-1])
    ea, eb = [x for t, x in zip(sa, la) if t <= last], [x for t, x in zip(sb, lb) if t <= last]
    end = (float(np.mean(ea[-window:])), float(np.mean(eb[-window:])))
    rough = (roughness(ea), roughness(eb))
    shown = {"a lower start": start[0] < start[1], "a lower end": end[0] < end[1], "a smoother curve": rough[0] < rough[1]}
    v.estimate = (f"{_minus(a, b)}, loss at the start {start[0] - start[1]:+.3f}, at the end {end[0] - end[1]:+.3f}; "
                  f"jumpiness {rough[0]:.3f} vs {rough[1]:.3f}: "
                  f"{sum(shown.values())} of 3 as the paper says")
    v.details = (f"{key}, a = {run_text(*a)}, b = {run_text(*b)}: start {start[0]:.4f} vs {start[1]:.4f} ({where}); "
                 f"end at step {last} (mean of the last {window} logged steps up to "
                 f"it) {end[0]:.4f} vs {end[1]:.4f}; roughness (std of the step-to-step changes up to step {last}) "
                 f"{rough[0]:.4f} vs {rough[1]:.4f}; the paper says the rescaled run has a lower start, a lower end "
                 f"and is smoother: " + ", ".join(f"{what}: {'yes' if ok else 'no'}" for what, ok in shown.items()))
    for side, side_steps in ((a, sa), (b, sb)):
        if side_steps[-1] == last and logs[side][-1]["step"] > last:
            v.details += (f"; {run_text(*side)} has no finite loss after step {last} (its last finite step: it "
                          f"collapsed there), so both ends are compared at step {last}")
