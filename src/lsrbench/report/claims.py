"""The paper's claims as checkable statements, evaluated on this run's numbers.

Claims are declared in the run config (``claims:``), so the tiny default checks its own analogues.
Each gets a verdict (holds / fails / not measured), the numbers it used, and, where it compares
two runs, a paired randomization test over per-query scores (:mod:`lsrbench.stats`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from lsrbench.names import format_k, k_value, split_run_name
from lsrbench.report import results
from lsrbench.report.results import pareto_front
from lsrbench.report.stats import paired_randomization_test, spearman

HOLDS, FAILS, NOT_MEASURED = "holds", "fails", "not measured"


@dataclass
class Evidence:
    """What the claims read: tidy metrics, per-query scores, head norms, training logs."""

    metrics: pd.DataFrame  # backbone,k,dataset,measure,value
    perquery: dict[tuple[str, str, str], pd.DataFrame] = field(default_factory=dict)  # (run,k,dataset) -> query_id,measure,value
    norms: dict[str, dict] = field(default_factory=dict)  # backbone -> norms.json
    train_logs: dict[tuple[str, str], list[dict]] = field(default_factory=dict)  # (run,k) -> rows


@dataclass
class Verdict:
    id: str
    text: str
    verdict: str
    details: str
    numbers: dict = field(default_factory=dict)


def _numeric_ks(metrics: pd.DataFrame, run: str) -> list[str]:
    return [k for k in metrics.loc[metrics["backbone"] == run, "k"].unique() if k_value(k) is not None]


def mean_score(ev: Evidence, run: str, k: str, measure: str, datasets: list[str]) -> float | None:
    return results.mean_score(ev.metrics, run, k, measure, datasets)


def best_k(ev: Evidence, run: str, measure: str, datasets: list[str]) -> str | None:
    return results.best_k(ev.metrics, run, measure, datasets)


def resolve_k(ev: Evidence, run: str, k, measure: str, datasets: list[str]) -> str | None:
    if k == "best":
        return best_k(ev, run, measure, datasets)
    if k == "max":
        ks = _numeric_ks(ev.metrics, run)
        return max(ks, key=k_value) if ks else None
    return format_k(k)


def paired_scores(ev: Evidence, a: tuple[str, str], b: tuple[str, str], measure: str, datasets: list[str]):
    """Per-query scores of two runs, paired on (dataset, query id)."""
    xs, ys = [], []
    for ds in datasets:
        pa, pb = ev.perquery.get((*a, ds)), ev.perquery.get((*b, ds))
        if pa is None or pb is None:
            return None
        sa = pa[pa["measure"] == measure].set_index("query_id")["value"]
        sb = pb[pb["measure"] == measure].set_index("query_id")["value"]
        common = sorted(set(sa.index) & set(sb.index))
        xs.extend(sa.loc[common].tolist())
        ys.extend(sb.loc[common].tolist())
    return np.array(xs), np.array(ys)


def _fmt_run(run: str, k: str) -> str:
    return f"{run} k={k}"


def _compare(ev, spec, cfg) -> Verdict:
    measure, datasets = spec.get("measure", cfg["measure"]), spec.get("datasets", cfg["datasets"])
    a_run, b_run = spec["a"]["backbone"], spec["b"]["backbone"]
    a_k = resolve_k(ev, a_run, spec["a"]["k"], measure, datasets)
    b_k = resolve_k(ev, b_run, spec["b"]["k"], measure, datasets)
    if a_k is None or b_k is None:
        return Verdict(spec["id"], spec["text"], NOT_MEASURED, "a run it compares is not in this config")
    pairs = paired_scores(ev, (a_run, a_k), (b_run, b_k), measure, datasets)
    if pairs is None or len(pairs[0]) == 0:
        return Verdict(spec["id"], spec["text"], NOT_MEASURED, f"no per-query scores for {_fmt_run(a_run, a_k)} or {_fmt_run(b_run, b_k)}")
    t = paired_randomization_test(*pairs, resamples=cfg["resamples"], seed=cfg["seed"])
    alpha, expect = cfg["alpha"], spec["expect"]
    significant = t.p_value < alpha
    holds = {
        "less": t.mean_diff < 0 and significant,
        "greater": t.mean_diff > 0 and significant,
        "not_less": t.mean_diff >= 0 or not significant,
        "not_greater": t.mean_diff <= 0 or not significant,
        "different": significant,
    }[expect]
    relation = {"less": "<", "greater": ">", "not_less": ">= (or no significant difference)",
                "not_greater": "<= (or no significant difference)", "different": "!="}[expect]
    details = (f"{measure} over {', '.join(datasets)}: {_fmt_run(a_run, a_k)} = {t.mean_a:.4f} vs "
               f"{_fmt_run(b_run, b_k)} = {t.mean_b:.4f}; expected a {relation} b; diff {t.mean_diff:+.4f} "
               f"[95% CI {t.ci_low:+.4f}, {t.ci_high:+.4f}], p = {t.p_value:.4g} ({t.test}, n = {t.n} queries), "
               f"d_z = {t.cohens_dz:.2f}")
    return Verdict(spec["id"], spec["text"], HOLDS if holds else FAILS, details,
                   {"a": [a_run, a_k], "b": [b_run, b_k], **t.as_dict()})


def _best_k_above(ev, spec, cfg) -> Verdict:
    measure, datasets = spec.get("measure", cfg["measure"]), spec.get("datasets", cfg["datasets"])
    threshold = float(spec.get("above", 1))
    parts, numbers, ok, missing = [], {}, True, False
    for run in spec["backbones"]:
        k = best_k(ev, run, measure, datasets)
        if k is None:
            missing = True
            continue
        numbers[run] = k
        score = mean_score(ev, run, k, measure, datasets)
        base = mean_score(ev, run, "1", measure, datasets)
        parts.append(f"{run}: best k = {k} ({measure} {score:.4f}" + (f" vs {base:.4f} at k=1)" if base is not None else ")"))
        ok &= k_value(k) > threshold
    if missing or not numbers:
        return Verdict(spec["id"], spec["text"], NOT_MEASURED, "a backbone it names has no runs in this config")
    return Verdict(spec["id"], spec["text"], HOLDS if ok else FAILS, "; ".join(parts) + f"; expected best k > {threshold:g}", numbers)


def _norm_best_k(ev, spec, cfg) -> Verdict:
    measure, datasets = spec.get("measure", cfg["measure"]), spec.get("datasets", cfg["datasets"])
    stat = spec.get("statistic", "frobenius_norm")
    runs = spec.get("backbones") or sorted({r for r in ev.metrics["backbone"].unique() if split_run_name(r)[1] == "shared"})
    pts = []
    for run in runs:
        k = best_k(ev, run, measure, datasets)
        # a run with one k (a released checkpoint, evaluate_only) has no sweep, so no best k to correlate
        if k is None or run not in ev.norms or len(_numeric_ks(ev.metrics, run)) < 2:
            continue
        pts.append((run, ev.norms[run][stat], k_value(k)))
    if len(pts) < 2:
        return Verdict(spec["id"], spec["text"], NOT_MEASURED, "needs at least two backbones with head norms and a k sweep")
    rho, p = spearman([p[1] for p in pts], [p[2] for p in pts])
    listing = ", ".join(f"{r} (‖W‖ {n:.1f}, best k {k:g})" for r, n, k in sorted(pts, key=lambda p: p[1]))
    verdict = HOLDS if (not math.isnan(rho) and rho > 0) else FAILS
    details = f"Spearman rho({stat}, best k) = {rho:.3f}" + (f", p = {p:.3g}" if not math.isnan(p) else f" (n = {len(pts)}: no p-value)") + f"; {listing}"
    return Verdict(spec["id"], spec["text"], verdict, details, {"rho": rho, "p_value": p, "n": len(pts)})


def _frontier(ev, spec, cfg) -> Verdict:
    measure, datasets = spec.get("measure", cfg["measure"]), spec.get("datasets", cfg["datasets"])
    parts, ok, numbers = [], True, {}
    for run in spec["backbones"]:
        pts = []
        for k in _numeric_ks(ev.metrics, run):
            score, cost = mean_score(ev, run, k, measure, datasets), mean_score(ev, run, k, "FLOPs", datasets)
            if score is not None and cost is not None:
                pts.append((k, cost, score))
        if not any(k == "1" for k, _, _ in pts) or len(pts) < 2:
            return Verdict(spec["id"], spec["text"], NOT_MEASURED, f"{run} needs k=1 and a rescaled run")
        front = pareto_front(pts)
        numbers[run] = front
        k1_dominated = "1" not in front
        ok &= k1_dominated
        parts.append(f"{run}: Pareto front (FLOPs vs {measure}) = k in {{{', '.join(sorted(front, key=k_value))}}}; "
                     f"k=1 {'dominated by a rescaled run' if k1_dominated else 'on the front'}")
    return Verdict(spec["id"], spec["text"], HOLDS if ok else FAILS, "; ".join(parts), numbers)


def _loss(ev, spec, cfg) -> Verdict:
    measure, datasets = cfg["measure"], cfg["datasets"]
    run = spec["backbone"]
    a_k = resolve_k(ev, run, spec.get("a_k", "best"), measure, datasets)
    b_k = resolve_k(ev, run, spec.get("b_k", 1), measure, datasets)
    window = int(spec.get("window", 5))
    la, lb = ev.train_logs.get((run, a_k)), ev.train_logs.get((run, b_k))
    if not la or not lb:
        return Verdict(spec["id"], spec["text"], NOT_MEASURED, "training logs missing (or zero training steps)")
    key = spec.get("loss", "ranking_loss")

    def ends(rows):
        vals = [r[key] for r in rows if r.get(key) is not None and math.isfinite(r[key])]
        return float(np.mean(vals[:window])), float(np.mean(vals[-window:]))

    (a0, a1), (b0, b1) = ends(la), ends(lb)
    holds = a0 < b0 and a1 < b1
    details = (f"{key}, mean of first / last {window} steps: {_fmt_run(run, a_k)} {a0:.4f} -> {a1:.4f}; "
               f"{_fmt_run(run, b_k)} {b0:.4f} -> {b1:.4f}; expected both lower for k={a_k}")
    return Verdict(spec["id"], spec["text"], HOLDS if holds else FAILS, details,
                   {"a": [a_k, a0, a1], "b": [b_k, b0, b1]})


CLAIM_TYPES = {"compare": _compare, "best_k_above": _best_k_above, "norm_best_k_correlation": _norm_best_k,
               "frontier": _frontier, "loss": _loss}


def evaluate_claims(ev: Evidence, claims_cfg: dict) -> list[Verdict]:
    cfg = {"measure": "nDCG@10", "alpha": 0.05, "resamples": 10000, "seed": 0, **claims_cfg}
    out = []
    for spec in claims_cfg.get("list", []):
        try:
            out.append(CLAIM_TYPES[spec["type"]](ev, spec, cfg))
        except KeyError as exc:  # a run it names is absent from this config
            out.append(Verdict(spec["id"], spec["text"], NOT_MEASURED, f"missing {exc}"))
    return out


def claims_markdown(verdicts: list[Verdict], claims_cfg: dict) -> str:
    lines = ["# Claims of the paper, checked on this run", "",
             f"Measure: {claims_cfg.get('measure', 'nDCG@10')} over {', '.join(claims_cfg['datasets'])}; "
             f"significance level {claims_cfg.get('alpha', 0.05)}; paired randomization tests over per-query "
             f"scores ({claims_cfg.get('resamples', 10000)} resamples, seed {claims_cfg.get('seed', 0)}).", ""]
    summary = pd.DataFrame([{"claim": v.text, "verdict": v.verdict} for v in verdicts])
    if not summary.empty:
        lines += [summary.to_markdown(index=False), ""]
    for v in verdicts:
        lines += [f"## {v.text}", "", f"**{v.verdict}** — {v.details}", ""]
    return "\n".join(lines)
