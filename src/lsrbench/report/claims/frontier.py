"""The ``frontier`` claim (arXiv 2606.18811: rescaled runs reach the high-effectiveness, low-FLOPs
region of the NanoBEIR nDCG@10-vs-FLOPs plot): per backbone, some rescaled run Pareto-dominates k=1
on the plane the tradeoff plot draws (:mod:`lsrbench.report.figures.tradeoff`). docs/claims.md gives the test."""

from __future__ import annotations

import numpy as np

from lsrbench.names import COLLAPSED, FLOPS, RUN_COLUMN, k_order, k_value
from lsrbench.report.claims.claim_type import ClaimType, Outcome, all_of, any_of, pair_outcome, paired_test, set_outcome
from lsrbench.report.claims.evidence import Evidence, NotMeasured, Settings, Verdict
from lsrbench.report.claims.run_noise import difference_sd, noise_text
from lsrbench.report.results import collapsed_runs, flops_datasets, pareto_front
from lsrbench.report.stats import sign_flip_p_value
from lsrbench.report.figures.tradeoff import tradeoff_datasets, tradeoff_points

__all__ = ["Frontier", "flops_test"]


class Frontier(ClaimType):
    """Per backbone, each rescaled run dominates k=1 when both its FLOPs are lower (tested over the datasets:
    :func:`flops_test`) and its score is non-inferior (H0: difference = -margin); the backbone's claim is that
    some run does (Bonferroni over them), and it fails when every run is significantly short on one of the two."""

    name = "frontier"

    def perquery_datasets(self, spec: dict, config: dict) -> list[str]:
        return list(config["report"].get("flops_datasets") or config["evaluation"]["datasets"])

    def noise(self, ev: Evidence, spec: dict, s: Settings, v: Verdict) -> str:
        return noise_text(ev, s, ev.report["tradeoff_measure"], v.datasets, flops_datasets(ev.metrics, ev.report))

    def evaluate(self, ev: Evidence, spec: dict, s: Settings) -> Verdict:
        measure = ev.report["tradeoff_measure"]
        datasets = tradeoff_datasets(ev.metrics, ev.report)
        v = self.verdict(spec, datasets=datasets, margin=s.margin,
                         statistic="per rescaled run: FLOPs lower (sign-flip test over the datasets' log FLOPs "
                                   "ratios) and the score non-inferior (paired randomization of the macro mean), "
                                   "both (a k=1 flagged collapsed: the score higher); some run of the backbone: "
                                   "Bonferroni over them")
        # every finished run's point, flagged collapsed or not (the plot leaves the flagged ones out)
        pts = tradeoff_points(ev.metrics[ev.metrics["measure"] != COLLAPSED], ev.report)
        parts, texts = [], []
        collapsed = collapsed_runs(ev.metrics)
        for run in spec["backbones"]:
            mine = pts[pts[RUN_COLUMN] == run]
            points = {k: (f, score) for k, f, score in zip(mine["k"], mine["flops"], mine["score"])}
            if "1" not in points:
                raise NotMeasured(f"{run}: no k=1 run with {measure} and FLOPs on {', '.join(datasets)}")
            rescaled = sorted((k for k in points if k != "1" and k_value(k) is not None), key=k_order)
            if not rescaled:
                raise NotMeasured(f"{run}: no rescaled run with {measure} and FLOPs on {', '.join(datasets)}")
            flagged = [k for k in rescaled if (run, k) in collapsed]
            rescaled = [k for k in rescaled if k not in flagged] or flagged
            part, text = _dominance(ev, s, v, run, points, rescaled, measure, datasets, (run, "1") in collapsed)
            if flagged:
                text += f" (flagged collapsed: k = {', '.join(flagged)})"
            parts.append(part)
            texts.append(text)
        v.details = f"{measure} over {', '.join(datasets)}, FLOPs as in the tradeoff plot; " + "; ".join(texts)
        v.test = "; ".join(f"{run}: some k > 1 cheaper than k=1, {measure} non-inferior"
                           for run in spec["backbones"])
        set_outcome(v, all_of(parts))
        return v


def flops_test(ev: Evidence, s: Settings, run: str, k: str, datasets: list[str],
               shown: tuple[float, float]) -> tuple[Outcome, str]:
    """Whether run k has fewer FLOPs than k=1: the per-dataset log FLOPs ratios (a dataset's FLOPs scale with its
    documents' lengths, so ratios, not differences, are comparable), each dataset a unit, under independent sign
    flips (exact up to ``s.resamples`` sign vectors), plus both runs' training-seed FLOPs noise
    (:mod:`lsrbench.report.claims.run_noise`)."""
    m = ev.metrics[(ev.metrics[RUN_COLUMN] == run) & (ev.metrics["measure"] == FLOPS)
                   & ev.metrics["dataset"].isin(datasets)]
    by_k = {kk: grp.set_index("dataset")["value"] for kk, grp in m.groupby("k")}
    common = [d for d in datasets if d in by_k.get(k, {}) and d in by_k.get("1", {})
              and by_k[k][d] > 0 and by_k["1"][d] > 0]
    if not common:
        raise NotMeasured(f"{run}: no positive FLOPs of k={k} and k=1 on one of {', '.join(datasets)}")
    ratios = np.array([np.log(by_k[k][d] / by_k["1"][d]) for d in common], float)
    run_sd, run_df = difference_sd(ev, s, (run, k), (run, "1"), FLOPS, common, log=True)
    p, method = sign_flip_p_value(ratios / len(ratios), s.resamples, s.seed, run_sd, run_df)
    if run_sd > 0:
        method += f" plus a run-level log FLOPs term of sd {run_sd:.3g}"
    ok = ratios.mean() < 0 and shown[0] < shown[1]
    if (ratios.mean() < 0) != (shown[0] < shown[1]):  # the datasets and the plot disagree: nothing to conclude
        p, method = 1.0, f"{method}; the plotted FLOPs go the other way: p = 1"
    key = ("flops", run, k, "1", tuple(common))
    text = (f"FLOPs {shown[0]:.3g} vs {shown[1]:.3g}, per dataset x{np.exp(ratios.mean()):.3g} (geometric mean over "
            f"{len(common)}), p = {p:.4g} ({method})")
    return Outcome(p, ok, key), text


def _dominance(ev: Evidence, s: Settings, v: Verdict, run: str, points: dict, rescaled: list[str], measure: str,
               datasets: list[str], k1_flagged: bool) -> tuple[Outcome, str]:
    flops1, score1 = points["1"]
    front = pareto_front([(k, f, score) for k, (f, score) in points.items() if k in rescaled or k == "1"])
    head = (f"{run}: k=1 has {flops1:.3g} FLOPs, {measure} {score1:.4f}"
            + (" (flagged collapsed: dominated by a run that scores significantly higher)" if k1_flagged else "")
            + f"; Pareto front k in {{{', '.join(sorted(front, key=k_order))}}}")
    runs, listing = [], []
    for k in rescaled:
        t = paired_test(ev, s, (run, k), (run, "1"), measure, datasets, 0.0 if k1_flagged else -s.margin)
        score = pair_outcome(t, (run, k), (run, "1"), measure, datasets, +1)
        if k1_flagged:
            runs.append((k, t, score))
            listing.append(f"k={k}: {measure} {t.diff:+.4f} {t.interval_text()}, p = {t.p_value:.4g}")
            continue
        flops, flops_text = flops_test(ev, s, run, k, datasets, (points[k][0], flops1))
        runs.append((k, t, all_of([flops, score])))
        listing.append(f"k={k}: {flops_text}; {measure} {t.diff:+.4f} {t.interval_text()}, non-inferiority "
                       f"p = {t.p_value:.4g}")
    outcome = any_of(o for _, _, o in runs)
    k, t, _ = max(runs, key=lambda r: (r[2].ok, -r[2].p))  # the run that decides, to show
    v.runs += [[run, k], [run, "1"]]
    v.estimate += (("; " if v.estimate else "") + f"{run}: k={k} vs k=1 {t.diff:+.4f} {t.interval_text()}, "
                   f"FLOPs {points[k][0]:.3g} vs {flops1:.3g}")
    how = (f"some run dominates: p = {outcome.p:.4g} (Bonferroni over {len(runs)})" if len(runs) > 1
           else f"p = {outcome.p:.4g}" + ("" if k1_flagged else " (the larger of its two tests)"))
    return outcome, f"{head}; each rescaled run vs k=1: {'; '.join(listing)}; {how}"
