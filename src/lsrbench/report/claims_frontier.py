"""The ``frontier`` claim (arXiv 2606.18811: rescaled runs reach the high-effectiveness, low-FLOPs
region of the NanoBEIR nDCG@10-vs-FLOPs plot): per backbone, some rescaled run Pareto-dominates k=1
on the plane the tradeoff plot draws (:mod:`lsrbench.report.tradeoff`). docs/claims.md gives the test."""

from __future__ import annotations

from lsrbench.names import k_order, k_value
from lsrbench.report.claim_type import ClaimType, combine, paired_test
from lsrbench.report.claims_evidence import FAILS, HOLDS, Evidence, NotMeasured, Settings, Verdict
from lsrbench.report.results import collapsed_runs, pareto_front
from lsrbench.report.tradeoff import tradeoff_datasets, tradeoff_points

__all__ = ["Frontier"]


class Frontier(ClaimType):
    """Per backbone: a collapsed k=1 is dominated by any run that is not collapsed (a measured fact);
    otherwise the candidates are the non-collapsed rescaled runs with at most k=1's FLOPs, each
    tested for non-inferiority to k=1 (H0: difference = -margin). The backbone's claim holds when
    the candidate with the smallest p going the claim's way is significant after Bonferroni (Holm's
    first step) over the candidates; it fails when every candidate is significantly worse (an
    intersection-union test: the largest p) or there is no candidate. Backbones combine as the
    other multi-backbone claims do (all must hold)."""

    name = "frontier"

    def perquery_datasets(self, spec: dict, config: dict) -> list[str]:
        return list(config["report"].get("flops_datasets") or config["evaluation"]["datasets"])

    def evaluate(self, ev: Evidence, spec: dict, s: Settings) -> Verdict:
        measure = ev.report.get("tradeoff_measure", s.measure)
        datasets = tradeoff_datasets(ev.metrics, ev.report)
        v = self.verdict(spec, datasets=datasets, margin=s.margin,
                         statistic="paired randomization of the macro mean, non-inferiority, Bonferroni over the "
                                   "candidate runs (rescaled, not collapsed, FLOPs <= k=1's)")
        pts = tradeoff_points(ev.metrics, ev.report)
        parts, texts, facts = [], [], []
        collapsed = collapsed_runs(ev.metrics)
        for run in spec["backbones"]:
            mine = pts[pts["backbone"] == run]
            points = {k: (f, score) for k, f, score in zip(mine["k"], mine["flops"], mine["score"])}
            if (run, "1") in collapsed:
                facts.append(_collapsed_k1(v, run, points))
                texts.append(facts[-1][1])
                continue
            if "1" not in points:
                raise NotMeasured(f"{run}: no k=1 run with {measure} and FLOPs on {', '.join(datasets)}")
            part, text = _dominance(ev, s, v, run, points, measure, datasets)
            texts.append(text)
            if part is None:
                facts.append((False, text))
            else:
                parts.append(part)
        v.details = f"{measure} over {', '.join(datasets)}, FLOPs as in the tradeoff plot; " + "; ".join(texts)
        if not all(ok for ok, _ in facts):
            v.verdict = FAILS
        elif parts:
            v.p_value, v.sign_ok = combine(parts)
        else:
            v.verdict = HOLDS  # every backbone's k=1 collapsed while a rescaled run did not: measured, not tested
        return v


def _collapsed_k1(v: Verdict, run: str, points: dict) -> tuple[bool, str]:
    rescaled = sorted((k for k in points if k != "1" and k_value(k) is not None), key=k_order)
    if not rescaled:
        return False, f"{run}: k=1 collapsed, and so did every rescaled run"
    v.runs += [[run, max(rescaled, key=lambda k: points[k][1])], [run, "1"]]
    return True, f"{run}: k=1 collapsed, dominated by every run that did not (k = {', '.join(rescaled)})"


def _dominance(ev: Evidence, s: Settings, v: Verdict, run: str, points: dict, measure: str, datasets: list[str]):
    """(p-value, direction) of "some candidate dominates k=1", or None when no run is a candidate."""
    flops1, score1 = points["1"]
    front = pareto_front([(k, f, score) for k, (f, score) in points.items()])
    head = (f"{run}: k=1 has {flops1:.3g} FLOPs, {measure} {score1:.4f}; Pareto front k in "
            f"{{{', '.join(sorted(front, key=k_order))}}}")
    candidates = sorted((k for k, (f, _) in points.items() if k != "1" and k_value(k) is not None and f <= flops1),
                        key=k_order)
    if not candidates:
        return None, f"{head}; no rescaled run has at most k=1's FLOPs: none dominates it"
    tests = {k: paired_test(ev, s, (run, k), (run, "1"), measure, datasets, -s.margin) for k in candidates}
    going = [k for k in candidates if tests[k].diff + s.margin > 0]
    if going:  # the claim's way: the smallest p of those, Bonferroni over all candidates
        k = min(going, key=lambda c: tests[c].p_value)
        part = (min(1.0, tests[k].p_value * len(candidates)), True)
    else:  # every candidate below k=1 - margin: against only if all are significantly (the largest p)
        k = max(candidates, key=lambda c: tests[c].p_value)
        part = (tests[k].p_value, False)
    t = tests[k]
    v.runs += [[run, k], [run, "1"]]
    v.estimate += ("; " if v.estimate else "") + f"{run}: k={k} vs k=1 {t.diff:+.4f} [{t.ci_low:+.4f}, {t.ci_high:+.4f}]"
    listing = ", ".join(f"k={c} ({points[c][0]:.3g} FLOPs, {tests[c].diff:+.4f} [{tests[c].ci_low:+.4f}, "
                        f"{tests[c].ci_high:+.4f}], non-inferiority p = {tests[c].p_value:.4g})" for c in candidates)
    verdict = (f"k={k}: p = {t.p_value:.4g} x {len(candidates)} = {part[0]:.4g} (Holm over {len(candidates)} candidate run{'s' if len(candidates) > 1 else ''})"
               if part[1] else f"every candidate is below k=1 - margin; the largest p, k={k}: {t.p_value:.4g}")
    return part, f"{head}; candidates (FLOPs <= k=1's) vs k=1: {listing}; {verdict}"
