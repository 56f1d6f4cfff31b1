"""The paper's claims ("Rescaling MLM-Head for Neural Sparse Retrieval", arXiv 2606.18811) as
checkable statements, evaluated on this run's numbers (docs/claims.md says how).

Claims are declared in the run config (``claims:``), so the tiny default checks its own analogues.
Every verdict is ``holds`` / ``fails`` / ``inconclusive`` (not significant after Holm's correction
over all tested claims), ``by construction`` (the config makes it true whatever training does:
twins of one checkpoint) or ``not measured``. Comparisons test the statistic the table prints,
the macro mean over datasets (:func:`lsrbench.report.stats.macro_paired_test`); "matches or
beats" is a non-inferiority test with the margin ``claims.margin``; a run's best k is chosen on
``claims.select_on`` (MS MARCO Dev in the paper config) and tested on ``claims.datasets``
(BEIR-13), with :func:`lsrbench.report.results.best_k` (collapsed runs excluded).
"""

from __future__ import annotations

import math

import numpy as np

from lsrbench.names import k_order, k_value, split_run_name
from lsrbench.report.claims_evidence import (BY_CONSTRUCTION, FAILS, HOLDS, INCONCLUSIVE, NOT_MEASURED, Evidence,
                                             Settings, Verdict, best_k, checkpoint_key, effective_k, is_synthetic,
                                             numeric_ks, paired_scores, paper_compare, paper_k, resolve_k, run_text)
from lsrbench.report.plots import tradeoff_points
from lsrbench.report.results import collapsed_runs, pareto_front
from lsrbench.report.stats import holm, macro_paired_test, spearman_exact

__all__ = ["evaluate_claims", "CLAIM_TYPES", "decide"]

_SHIFT = {"less": 0, "greater": 0, "different": 0, "not_less": -1, "not_greater": +1}
_SIGN = {"less": -1, "greater": +1, "different": 0, "not_less": +1, "not_greater": -1}
_RELATION = {"less": "a < b", "greater": "a > b", "different": "a != b",
             "not_less": "a >= b - margin (non-inferiority)", "not_greater": "a <= b + margin"}


def _test(ev: Evidence, s: Settings, a: tuple[str, str], b: tuple[str, str], measure: str, datasets: list[str],
          shift: float = 0.0):
    pairs = paired_scores(ev, a, b, measure, datasets)
    if pairs is None:
        return None
    return macro_paired_test(*pairs, datasets, shift=shift, resamples=s.resamples, seed=s.seed)


def _same_model(ev: Evidence, a: tuple[str, str], b: tuple[str, str]) -> bool:
    """Both runs are one model: the same checkpoint, mode and effective k (a x10 twin at k=10 is
    the original at k=1)."""
    ea, eb = effective_k(ev, *a), effective_k(ev, *b)
    return ea[2] is not None and eb[2] is not None and ea[:2] == eb[:2] and math.isclose(ea[2], eb[2])


def _selection_notes(ev: Evidence, s: Settings, runs: list[str], selected: bool = True) -> list[str]:
    notes = []
    if selected and s.selects_on_test_set:
        notes.append("best k chosen on the same queries it is tested on (no held-out selection set: "
                     "claims.select_on); this favours the selected run")
    if any(is_synthetic(ev, r) for r in runs):
        notes.append("a synthetic twin (another backbone's checkpoint with its head scaled at load): evidence about "
                     "the rescale itself, not about a backbone whose head is large from pretraining")
    return notes


def _compare(ev, spec, s: Settings) -> Verdict:
    measure, datasets = spec.get("measure", s.measure), spec.get("datasets", s.datasets)
    expect = spec["expect"]
    a = (spec["a"]["backbone"], resolve_k(ev, s, spec["a"]["backbone"], spec["a"]["k"]))
    b = (spec["b"]["backbone"], resolve_k(ev, s, spec["b"]["backbone"], spec["b"]["k"]))
    v = Verdict(spec["id"], spec["text"], "compare", NOT_MEASURED, "", runs=[list(a), list(b)], datasets=datasets,
                paper=paper_compare(ev, spec, s, measure, datasets))
    if a[1] is None or b[1] is None:
        v.details = "a run it compares is not in this config (or has no non-collapsed k)"
        return v
    shift = _SHIFT[expect] * s.margin
    t = _test(ev, s, a, b, measure, datasets, shift)
    if t is None:
        v.details = f"no per-query scores for {run_text(*a)} or {run_text(*b)} on {', '.join(datasets)}"
        return v
    v.margin = s.margin if shift else None
    v.diff, v.ci, v.p_value, v.statistic = t.diff, (t.ci_low, t.ci_high), t.p_value, t.method
    v.sign_ok = True if _SIGN[expect] == 0 else (t.diff - shift) * _SIGN[expect] > 0
    v.estimate = f"{t.diff:+.4f} [{t.ci_low:+.4f}, {t.ci_high:+.4f}]"
    v.details = (f"{measure}, macro mean over {', '.join(datasets)} ({sum(t.n_queries.values())} queries): "
                 f"{run_text(*a)} = {t.mean_a:.4f} vs {run_text(*b)} = {t.mean_b:.4f}; claim: {_RELATION[expect]}"
                 + (f" with margin {s.margin:.4f}" if shift else "") + f"; difference {t.diff:+.4f} "
                 f"[95% CI {t.ci_low:+.4f}, {t.ci_high:+.4f}], p = {t.p_value:.4g} (H0: difference = {shift:+.4f})")
    v.notes += _selection_notes(ev, s, [a[0], b[0]], "best" in (spec["a"]["k"], spec["b"]["k"]))
    if _same_model(ev, a, b):
        v.verdict = BY_CONSTRUCTION
        v.notes.append("both runs are the same model (one checkpoint, its twin's head scale cancelled by k): "
                       "the difference is 0 by construction")
    return v


def _combine(parts: list[tuple[float, bool]]) -> tuple[float, bool]:
    """Several tests that must all go the claim's way (an intersection-union test: the largest
    p-value); when one goes the other way, that one (the smallest such p-value)."""
    against = [p for p, ok in parts if not ok]
    return (min(against), False) if against else (max(p for p, _ in parts), True)


def _best_k_above(ev, spec, s: Settings) -> Verdict:
    """Each backbone's best rescaled k (> ``above``, chosen on select_on) beats its k=1 on the test set."""
    threshold = float(spec.get("above", 1))
    v = Verdict(spec["id"], spec["text"], "best_k_above", NOT_MEASURED, "", datasets=s.datasets)
    parts, texts, paper = [], [], []
    for run in spec["backbones"]:
        chosen, rescaled = best_k(ev, s, run), best_k(ev, s, run, above=threshold)
        t = _test(ev, s, (run, rescaled), (run, "1"), s.measure, s.datasets) if rescaled else None
        if chosen is None or t is None:
            v.details = f"{run}: no k=1 and rescaled runs with per-query scores"
            return v
        v.runs += [[run, rescaled], [run, "1"]]
        parts.append((t.p_value, t.diff > 0))
        texts.append(f"{run}: best k = {chosen} on {', '.join(s.select_datasets)} ({s.select_measure}); best k > "
                     f"{threshold:g} = {rescaled}: {s.measure} {t.mean_a:.4f} vs {t.mean_b:.4f} at k=1, difference "
                     f"{t.diff:+.4f} [{t.ci_low:+.4f}, {t.ci_high:+.4f}], p = {t.p_value:.4g}")
        if paper_k(ev, run):
            paper.append(f"{run}: best k {paper_k(ev, run)}")
        v.estimate += ("; " if v.estimate else "") + f"{run}: k={chosen}, {t.diff:+.4f} [{t.ci_low:+.4f}, {t.ci_high:+.4f}]"
        v.statistic = t.method
    v.p_value, v.sign_ok = _combine(parts)
    v.details = "; ".join(texts)
    v.paper = "; ".join(paper) or None
    v.notes += _selection_notes(ev, s, spec["backbones"])
    return v


def _best_k_matches_paper(ev, spec, s: Settings) -> Verdict:
    """Our best k is the paper's: it beats every other k of the run on the test set."""
    v = Verdict(spec["id"], spec["text"], "best_k_matches_paper", NOT_MEASURED, "", datasets=s.datasets)
    parts, texts, paper = [], [], []
    for run in spec["backbones"]:
        theirs, ours = paper_k(ev, run), best_k(ev, s, run)
        if theirs is None or ours is None or theirs not in numeric_ks(ev.metrics, run):
            v.details = f"{run}: {'no best k in the paper reference' if theirs is None else 'no run at the paper k or no best k'}"
            return v
        paper.append(f"{run}: k={theirs}")
        if ours == theirs:
            collapsed = collapsed_runs(ev.metrics)
            others = [k for k in numeric_ks(ev.metrics, run) if k != theirs and (run, k) not in collapsed]
            tests = [(k, _test(ev, s, (run, theirs), (run, k), s.measure, s.datasets)) for k in others]
            if any(t is None for _, t in tests):
                v.details = f"{run}: per-query scores missing"
                return v
            part = _combine([(t.p_value, t.diff > 0) for _, t in tests]) if tests else (1.0, True)
            texts.append(f"{run}: best k = {ours} (paper {theirs}); vs " + ", ".join(
                f"k={k}: {t.diff:+.4f} (p = {t.p_value:.3g})" for k, t in tests))
        else:
            t = _test(ev, s, (run, theirs), (run, ours), s.measure, s.datasets)
            if t is None:
                v.details = f"{run}: per-query scores missing"
                return v
            part = (t.p_value, t.diff > 0)
            texts.append(f"{run}: best k = {ours}, paper {theirs}; k={theirs} vs k={ours}: {t.diff:+.4f} "
                         f"[{t.ci_low:+.4f}, {t.ci_high:+.4f}], p = {t.p_value:.4g}")
        parts.append(part)
        v.runs.append([run, ours])
        v.estimate += ("; " if v.estimate else "") + f"{run}: k={ours}"
    v.p_value, v.sign_ok = _combine(parts)
    v.statistic = "paired randomization of the macro mean (paper's k vs every other k)"
    v.details, v.paper = "; ".join(texts), "; ".join(paper)
    v.notes += _selection_notes(ev, s, spec["backbones"])
    return v


def _norm_best_k(ev, spec, s: Settings) -> Verdict:
    """Spearman's rho between head norm and best k over at least three distinct checkpoints, exact
    permutation p-value; twins of one checkpoint only: true by construction."""
    stat = spec.get("statistic", "frobenius_norm")
    runs = spec.get("backbones") or sorted({r for r in ev.metrics["backbone"].unique()
                                            if split_run_name(r)[1] == "shared" and r in ev.norms})
    # a run with one k (a released checkpoint, evaluate_only) has no sweep, so no best k to correlate
    pts = [(r, ev.norms[r][stat], best_k(ev, s, r)) for r in runs
           if r in ev.norms and len(numeric_ks(ev.metrics, r)) >= 2]
    pts = [(r, n, k_value(k)) for r, n, k in pts if k is not None]
    v = Verdict(spec["id"], spec["text"], "norm_best_k_correlation", NOT_MEASURED, "", datasets=s.select_datasets,
                runs=[[r, str(k)] for r, _, k in pts])
    listing = ", ".join(f"{r} (norm {n:.1f}, best k {k:g})" for r, n, k in sorted(pts, key=lambda p: p[1]))
    checkpoints = {checkpoint_key(ev.backbones, r) for r, _, _ in pts}
    theirs = {r: paper_k(ev, r) for r, _, _ in pts if paper_k(ev, r)}
    v.paper = ", ".join(f"{r}: best k {k}" for r, k in theirs.items()) or None
    if len(pts) >= 2 and len(checkpoints) == 1:
        v.verdict = BY_CONSTRUCTION
        v.details = f"{listing}: all twins of one checkpoint"
        v.notes.append("twins of one checkpoint: a twin with its head scaled by c at k = c*k' is the original at k', so "
                       "its best k grows with c whatever training does; this carries no evidence")
        return v
    if len(checkpoints) < 3:
        v.details = f"needs at least three distinct checkpoints with head norms and a k sweep ({len(checkpoints)}): {listing}"
        return v
    rho, p, method = spearman_exact([n for _, n, _ in pts], [k for _, _, k in pts], s.resamples, s.seed)
    if math.isnan(rho):
        v.details = f"Spearman's rho is undefined (a constant): {listing}"
        return v
    v.diff, v.p_value, v.sign_ok, v.statistic = rho, p, rho > 0, f"Spearman's rho, permutation test, {method}"
    v.estimate = f"rho = {rho:+.3f} (n = {len(pts)})"
    v.details = f"Spearman rho({stat}, best k on {', '.join(s.select_datasets)}) = {rho:+.3f}, p = {p:.4g}; {listing}"
    return v


def _frontier(ev, spec, s: Settings) -> Verdict:
    """k=1 is beaten on the FLOPs/effectiveness plane the tradeoff plot draws (report.flops_datasets,
    pooled FLOPs): some rescaled run has fewer FLOPs and is not worse than k=1 by more than the
    margin (non-inferiority, Bonferroni over the cheaper runs)."""
    measure = ev.report.get("tradeoff_measure", s.measure)
    pts = tradeoff_points(ev.metrics, ev.report)
    datasets = list(ev.report.get("flops_datasets") or s.datasets)
    v = Verdict(spec["id"], spec["text"], "frontier", NOT_MEASURED, "", datasets=datasets, margin=s.margin)
    parts, texts, no_cheaper = [], [], False
    for run in spec["backbones"]:
        mine = pts[pts["backbone"] == run]
        flops = dict(zip(mine["k"], mine["flops"]))
        if "1" not in flops or len(flops) < 2:
            v.details = f"{run} needs a non-collapsed k=1 and rescaled run with FLOPs on {', '.join(datasets)}"
            return v
        front = pareto_front(list(zip(mine["k"], mine["flops"], mine["score"])))
        cheaper = [k for k in flops if k != "1" and k_value(k) is not None and flops[k] < flops["1"]]
        tests = [(k, _test(ev, s, (run, k), (run, "1"), measure, datasets, -s.margin)) for k in cheaper]
        if any(t is None for _, t in tests):
            v.details = f"{run}: per-query scores missing on {', '.join(datasets)}"
            return v
        if tests:
            k, t = min(tests, key=lambda kt: kt[1].p_value)
            parts.append((min(1.0, t.p_value * len(tests)), t.diff + s.margin > 0))
            v.runs += [[run, k], [run, "1"]]
            texts.append(f"{run}: Pareto front k in {{{', '.join(sorted(front, key=k_order))}}}; k={k} has "
                         f"{flops[k]:.3g} FLOPs vs {flops['1']:.3g} at k=1 and {measure} {t.mean_a:.4f} vs {t.mean_b:.4f} "
                         f"({t.diff:+.4f} [{t.ci_low:+.4f}, {t.ci_high:+.4f}], non-inferiority p = {t.p_value:.4g}"
                         f" x {len(tests)} cheaper runs)")
            v.statistic = t.method + ", non-inferiority, Bonferroni over the cheaper runs"
            v.estimate += ("; " if v.estimate else "") + f"{run}: k={k} vs k=1 {t.diff:+.4f} [{t.ci_low:+.4f}, {t.ci_high:+.4f}]"
        else:
            no_cheaper = True
            texts.append(f"{run}: no rescaled run has fewer FLOPs than k=1 ({flops['1']:.3g})")
    if no_cheaper:  # no rescaled run is cheaper than k=1: a measured fact, not a test
        v.verdict = FAILS
    else:
        v.p_value, v.sign_ok = _combine(parts)
    v.details = f"{measure} over {', '.join(datasets)}, FLOPs as in the tradeoff plot; " + "; ".join(texts)
    return v


def _loss(ev, spec, s: Settings) -> Verdict:
    run = spec["backbone"]
    a_k = resolve_k(ev, s, run, spec.get("a_k", "best"))
    b_k = resolve_k(ev, s, run, spec.get("b_k", 1))
    window, key = int(spec.get("window", 5)), spec.get("loss", "ranking_loss")
    v = Verdict(spec["id"], spec["text"], "loss", NOT_MEASURED, "", runs=[[run, str(a_k)], [run, str(b_k)]])
    la, lb = ev.train_logs.get((run, a_k)), ev.train_logs.get((run, b_k))
    if not la or not lb:
        v.details = "training logs missing (or zero training steps)"
        return v

    def ends(rows):
        vals = [r[key] for r in rows if r.get(key) is not None and math.isfinite(r[key])]
        return float(np.mean(vals[:window])), float(np.mean(vals[-window:]))

    (a0, a1), (b0, b1) = ends(la), ends(lb)
    v.verdict = HOLDS if a0 < b0 and a1 < b1 else FAILS
    v.estimate = f"start {a0 - b0:+.3f}, end {a1 - b1:+.3f}"
    v.details = (f"{key}, mean of first / last {window} steps: {run_text(run, a_k)} {a0:.4f} -> {a1:.4f}; "
                 f"{run_text(run, b_k)} {b0:.4f} -> {b1:.4f}; claim: both lower for k={a_k}")
    v.notes.append("descriptive: the training losses of one seed, no test")
    v.notes += _selection_notes(ev, s, [run], spec.get("a_k", "best") == "best")
    return v


CLAIM_TYPES = {"compare": _compare, "best_k_above": _best_k_above, "best_k_matches_paper": _best_k_matches_paper,
               "norm_best_k_correlation": _norm_best_k, "frontier": _frontier, "loss": _loss}


def decide(p_adjusted: float, sign_ok: bool, alpha: float) -> str:
    """A tested claim's verdict from its Holm-adjusted p-value and the observed direction."""
    if p_adjusted < alpha:
        return HOLDS if sign_ok else FAILS
    return INCONCLUSIVE


def evaluate_claims(ev: Evidence, claims_cfg: dict) -> list[Verdict]:
    """Every claim of ``claims_cfg["list"]`` (the ``claims:`` block with the schema's defaults),
    then Holm's correction over the p-values of the tested ones and their verdicts from it."""
    s = Settings.from_config(claims_cfg)
    out = []
    for spec in claims_cfg.get("list", []):
        try:
            out.append(CLAIM_TYPES[spec["type"]](ev, spec, s))
        except KeyError as exc:  # a run it names is absent from this config
            out.append(Verdict(spec["id"], spec["text"], spec["type"], NOT_MEASURED, f"missing {exc}"))
    tested = [v for v in out if v.p_value is not None and v.verdict != BY_CONSTRUCTION]
    for v, p in zip(tested, holm([v.p_value for v in tested])):
        v.p_adjusted = p
        v.verdict = decide(p, bool(v.sign_ok), s.alpha)
    return out
