"""The ``frontier`` claim (arXiv 2606.18811: rescaled runs reach the high-effectiveness, low-FLOPs
region of the NanoBEIR nDCG@10-vs-FLOPs plot): per backbone, some rescaled run Pareto-dominates k=1
on the plane the tradeoff plot draws (:mod:`lsrbench.report.figures.tradeoff`). docs/claims.md gives the test."""

from __future__ import annotations

import numpy as np

from lsrbench.names import FLOPS, RUN_COLUMN, k_order, k_value
from lsrbench.report.claims.claim_type import ClaimType, Outcome, all_of, any_of, pair_outcome, paired_test, set_outcome
from lsrbench.report.claims.evidence import FAILS, HOLDS, Evidence, NotMeasured, Settings, Verdict
from lsrbench.report.results import collapsed_runs, pareto_front
from lsrbench.report.stats import sign_flip_p_value
from lsrbench.report.figures.tradeoff import tradeoff_datasets, tradeoff_points

__all__ = ["Frontier", "flops_test"]


class Frontier(ClaimType):
    """Per backbone: a collapsed k=1 is dominated by any run that is not collapsed (a collapse flag:
    measured, no test). Otherwise each rescaled, non-collapsed run dominates k=1 when both its FLOPs
    are lower (tested over the datasets: :func:`flops_test`) and its score is non-inferior (H0:
    difference = -margin); the backbone's claim is that some run does (Bonferroni over them), and it
    fails when every run is significantly short on one of the two. Backbones combine as the other
    multi-backbone claims do (all must hold)."""

    name = "frontier"

    def perquery_datasets(self, spec: dict, config: dict) -> list[str]:
        return list(config["report"].get("flops_datasets") or config["evaluation"]["datasets"])

    def evaluate(self, ev: Evidence, spec: dict, s: Settings) -> Verdict:
        measure = ev.report["tradeoff_measure"]
        datasets = tradeoff_datasets(ev.metrics, ev.report)
        v = self.verdict(spec, datasets=datasets, margin=s.margin,
                         statistic="per rescaled run: FLOPs lower (sign-flip test over the datasets' FLOPs) and "
                                   "the score non-inferior (paired randomization of the macro mean), both; some run "
                                   "of the backbone: Bonferroni over them")
        pts = tradeoff_points(ev.metrics, ev.report)
        parts, texts, facts = [], [], []
        collapsed = collapsed_runs(ev.metrics)
        for run in spec["backbones"]:
            mine = pts[pts[RUN_COLUMN] == run]
            points = {k: (f, score) for k, f, score in zip(mine["k"], mine["flops"], mine["score"])}
            if (run, "1") in collapsed:
                facts.append(_collapsed_k1(v, run, points))
                texts.append(facts[-1][1])
                continue
            if "1" not in points:
                raise NotMeasured(f"{run}: no k=1 run with {measure} and FLOPs on {', '.join(datasets)}")
            rescaled = sorted((k for k in points if k != "1" and k_value(k) is not None), key=k_order)
            if not rescaled:
                facts.append((False, f"{run}: every rescaled run collapsed (or none finished): none dominates k=1"))
                texts.append(facts[-1][1])
                continue
            part, text = _dominance(ev, s, v, run, points, rescaled, measure, datasets)
            parts.append(part)
            texts.append(text)
        v.details = f"{measure} over {', '.join(datasets)}, FLOPs as in the tradeoff plot; " + "; ".join(texts)
        if not all(ok for ok, _ in facts):
            v.verdict = FAILS
        elif parts:
            set_outcome(v, all_of(parts))
        else:
            v.verdict = HOLDS  # every backbone's k=1 collapsed while a rescaled run did not: measured, not tested
        return v


def _collapsed_k1(v: Verdict, run: str, points: dict) -> tuple[bool, str]:
    rescaled = sorted((k for k in points if k != "1" and k_value(k) is not None), key=k_order)
    if not rescaled:
        return False, f"{run}: k=1 collapsed, and so did every rescaled run"
    v.runs += [[run, max(rescaled, key=lambda k: points[k][1])], [run, "1"]]
    return True, f"{run}: k=1 collapsed, dominated by every run that did not (k = {', '.join(rescaled)})"


def flops_test(ev: Evidence, run: str, k: str, datasets: list[str], shown: tuple[float, float],
               resamples: int, seed: int) -> tuple[Outcome, str]:
    """Whether run k has fewer FLOPs than k=1: the per-dataset FLOPs differences, each dataset a
    unit, under independent sign flips (exact up to ``resamples`` sign vectors): FLOPs are one
    number per run and dataset, so the datasets are the sample. Its direction is the plotted
    FLOPs' (``shown``: k's, k=1's) and the per-dataset mean's, both; one dataset cannot give
    p < 1 (the tiny default's Vaswani), six are the fewest that can give p < 0.05."""
    m = ev.metrics[(ev.metrics[RUN_COLUMN] == run) & (ev.metrics["measure"] == FLOPS)
                   & ev.metrics["dataset"].isin(datasets)]
    by_k = {kk: grp.set_index("dataset")["value"] for kk, grp in m.groupby("k")}
    common = [d for d in datasets if d in by_k.get(k, {}) and d in by_k.get("1", {})]
    if not common:
        raise NotMeasured(f"{run}: no FLOPs of k={k} and k=1 on one of {', '.join(datasets)}")
    diffs = np.array([by_k[k][d] - by_k["1"][d] for d in common], float)
    p, method = sign_flip_p_value(diffs / len(diffs), resamples, seed)
    ok = diffs.mean() < 0 and shown[0] < shown[1]
    if (diffs.mean() < 0) != (shown[0] < shown[1]):  # the datasets and the plot disagree: nothing to conclude
        p, method = 1.0, f"{method}; the plotted FLOPs go the other way: p = 1"
    key = ("flops", run, k, "1", tuple(common))
    text = (f"FLOPs {shown[0]:.3g} vs {shown[1]:.3g}, per dataset {diffs.mean():+.3g} on average over {len(common)}, "
            f"p = {p:.4g} ({method})")
    return Outcome(p, ok, key), text


def _dominance(ev: Evidence, s: Settings, v: Verdict, run: str, points: dict, rescaled: list[str], measure: str,
               datasets: list[str]) -> tuple[Outcome, str]:
    """Some rescaled run dominates k=1: per run both tests (all), over the runs some (any)."""
    flops1, score1 = points["1"]
    front = pareto_front([(k, f, score) for k, (f, score) in points.items()])
    head = (f"{run}: k=1 has {flops1:.3g} FLOPs, {measure} {score1:.4f}; Pareto front k in "
            f"{{{', '.join(sorted(front, key=k_order))}}}")
    runs, listing = [], []
    for k in rescaled:
        t = paired_test(ev, s, (run, k), (run, "1"), measure, datasets, -s.margin)
        flops, flops_text = flops_test(ev, run, k, datasets, (points[k][0], flops1), s.resamples, s.seed)
        runs.append((k, t, all_of([flops, pair_outcome(t, (run, k), (run, "1"), measure, datasets, +1)])))
        listing.append(f"k={k}: {flops_text}; {measure} {t.diff:+.4f} {t.interval_text()}, non-inferiority "
                       f"p = {t.p_value:.4g}")
    outcome = any_of(o for _, _, o in runs)
    k, t, _ = max(runs, key=lambda r: (r[2].ok, -r[2].p))  # the run that decides, to show
    v.runs += [[run, k], [run, "1"]]
    v.estimate += ("; " if v.estimate else "") + f"{run}: k={k} vs k=1 {t.diff:+.4f} {t.interval_text()}"
    how = (f"some run dominates: p = {outcome.p:.4g} (Bonferroni over {len(runs)})" if len(runs) > 1
           else f"p = {outcome.p:.4g} (the larger of its two tests)")
    return outcome, f"{head}; each rescaled run vs k=1: {'; '.join(listing)}; {how}"
