"""The claims about a run's best k (arXiv 2606.18811: rescaling recovers the large-norm backbones, their best k is
16, RoBERTa's is 2, the optimal k grows with the head norm)."""

from __future__ import annotations

import math

from lsrbench.names import RUN_COLUMN, k_value, split_run_name
from lsrbench.report.claims.claim_type import (ClaimType, all_of, any_of, pair_outcome, paired_test, seed_notes,
                                        selection_notes, set_outcome)
from lsrbench.report.claims.compare import selectable_ks
from lsrbench.report.claims.evidence import (BY_CONSTRUCTION, DESCRIPTIVE, INCONCLUSIVE, Evidence, NotMeasured,
                                             Settings, Verdict, best_k, checkpoint_key, effective_k, numeric_ks, paper_gain,
                                             paper_k, paper_runs)
from lsrbench.report.results import collapsed_runs, mean_score
from lsrbench.report.stats import spearman_exact

__all__ = ["BestKAbove", "BestKMatchesPaper", "NormBestKCorrelation"]


class BestKAbove(ClaimType):
    """Each backbone's best rescaled k (> ``above``) beats its k=1 on the test set, tested as "some
    k > ``above`` beats k=1" (Bonferroni over those ks), so the verdict does not rest on which k the
    results chose; several backbones must all recover."""

    name = "best_k_above"

    def evaluate(self, ev: Evidence, spec: dict, s: Settings) -> Verdict:
        threshold = float(spec.get("above", 1))
        v = self.verdict(spec, datasets=s.datasets)
        parts, texts, paper = [], [], []
        for run in spec["backbones"]:
            chosen, rescaled = best_k(ev, s, run), best_k(ev, s, run, above=threshold)
            candidates = [k for k in selectable_ks(ev, run) if k_value(k) > threshold]
            if rescaled is None or not candidates:
                above = [k for k in numeric_ks(ev.metrics, run) if k_value(k) > threshold]
                if not above or not all((run, k) in collapsed_runs(ev.metrics) for k in above):
                    raise NotMeasured(f"{run}: no run with k > {threshold:g} and {s.select_measure} on "
                                      f"{', '.join(s.select_datasets)}")
                # a collapse flag decides nothing alone: the flagged runs are tested against k=1 as any other
                texts.append(f"{run}: every run with k > {threshold:g} is flagged collapsed (k = {', '.join(above)})")
                candidates, rescaled = above, above[0]
            tests = {k: paired_test(ev, s, (run, k), (run, "1"), s.measure, s.datasets) for k in candidates}
            parts.append(any_of(pair_outcome(t, (run, k), (run, "1"), s.measure, s.datasets, +1)
                                for k, t in tests.items()))
            t = tests[rescaled]
            v.runs += [[run, rescaled], [run, "1"]]
            v.test += ("; " if v.test else "") + f"{run}: some k > {threshold:g} ({', '.join(tests)}) above k=1"
            listing = "; ".join(f"k={k}: {x.mean_a:.4f}, {x.diff:+.4f} {x.interval_text()}, p = {x.p_value:.4g}"
                                for k, x in tests.items())
            texts.append(f"{run}: best k = {chosen} on {', '.join(s.select_datasets)} ({s.select_measure}); "
                         f"{s.measure} at k=1 {t.mean_b:.4f}; every k > {threshold:g} against k=1 ({listing})"
                         + (f": some k beats k=1 (Bonferroni over {len(tests)})" if len(tests) > 1 else ""))
            paper += paper_gain(ev, s, run)
            v.estimate += ("; " if v.estimate else "") + f"{run}: k={rescaled}, {t.diff:+.4f} {t.interval_text()}"
            v.statistic = t.method
            if len(spec["backbones"]) == 1:
                v.diff, v.ci = t.diff, t.ci
        set_outcome(v, all_of(parts))
        v.details = "; ".join(texts)
        v.paper = "; ".join(paper) or None
        v.notes += selection_notes(ev, s, spec["backbones"], over_choices=True)
        return v


class BestKMatchesPaper(ClaimType):
    """The paper's best k is ours: it is the k we select on select_on, and on the test set it beats every other
    non-collapsed k of the run (intersection-union)."""

    name = "best_k_matches_paper"

    def evaluate(self, ev: Evidence, spec: dict, s: Settings) -> Verdict:
        v = self.verdict(spec, datasets=s.datasets,
                         statistic="paired randomization of the macro mean (paper's k vs every other k)")
        parts, texts, paper = [], [], []
        collapsed = collapsed_runs(ev.metrics)
        for run in spec["backbones"]:
            theirs, ours = paper_k(ev, run), best_k(ev, s, run)
            if theirs is None:
                raise NotMeasured(f"{run}: no best k in the paper reference")
            if theirs not in numeric_ks(ev.metrics, run):
                raise NotMeasured(f"{run}: no run at the paper's k={theirs}")
            paper.append(f"{run}: k={theirs}")
            v.test += ("; " if v.test else "") + f"{run}: k={theirs} above every other non-collapsed k"
            v.runs.append([run, ours])
            v.estimate += ("; " if v.estimate else "") + f"{run}: k={ours}"
            if (run, theirs) in collapsed:  # a flag decides nothing alone: the scores are tested as any k's
                texts.append(f"{run}: the paper's k={theirs} is flagged collapsed here (our best k = {ours})")
            v.can_hold = v.can_hold and ours == theirs
            others = [k for k in numeric_ks(ev.metrics, run) if k != theirs and (run, k) not in collapsed]
            tests = [(k, paired_test(ev, s, (run, theirs), (run, k), s.measure, s.datasets)) for k in others]
            if tests:  # the paper's k beats every other k: all of them (intersection-union)
                parts.append(all_of(pair_outcome(t, (run, theirs), (run, k), s.measure, s.datasets, +1) for k, t in tests))
            texts.append(_match_text(ev, s, run, theirs, ours, tests))
        if v.verdict is None and not parts:
            v.verdict = INCONCLUSIVE
            texts.append("no other non-collapsed k to test the paper's against")
        elif v.verdict is None:
            set_outcome(v, all_of(parts))
        v.details, v.paper = "; ".join(texts), "; ".join(paper)
        if not v.can_hold:
            v.notes.append("the k selected on the selection set is not the paper's: the claim can fail or be "
                           "inconclusive, not hold, whatever the test set says")
        v.notes += selection_notes(ev, s, spec["backbones"])
        return v


def _match_text(ev: Evidence, s: Settings, run: str, theirs: str, ours: str, tests: list) -> str:
    def score(k, measure, datasets):
        value = mean_score(ev.metrics, run, k, measure, datasets)
        return "–" if value is None else f"{value:.4f}"

    picked = (f"{run}: our best k = {ours}, the paper's k = {theirs}; selected on {', '.join(s.select_datasets)} "
              f"({s.select_measure}): " + ", ".join(f"k={k}: {score(k, s.select_measure, s.select_datasets)}"
                                                     for k in dict.fromkeys((ours, theirs))))
    vs = ", ".join(f"k={k}: {t.mean_b:.4f} ({t.diff:+.4f}, p = {t.p_value:.3g})" for k, t in tests)
    return (f"{picked}; tested on {', '.join(s.datasets)} ({s.measure}): k={theirs}: "
            f"{score(theirs, s.measure, s.datasets)} vs " + (vs or "no other non-collapsed k"))


def _twins(ev: Evidence, v: Verdict, swept: list[str], pts: list, listing: str) -> None:
    """Twins of one checkpoint only: ``by construction`` where every twin's ks divided by its head scale are one set
    (a twin scaled by c at k = c k' is the original at k'), else descriptive (the twins are other models)."""
    effective = {r: sorted(round(effective_k(ev, r, k)[2], 9) for k in numeric_ks(ev.metrics, r)) for r in swept}
    if len({tuple(ks) for ks in effective.values()}) == 1:
        v.verdict = BY_CONSTRUCTION
        v.details = f"{listing}: all twins of one checkpoint, each swept over the same models (k / head scale)"
        v.notes.append("twins of one checkpoint: a twin with its head scaled by c at k = c*k' is the original at k', "
                       "and every twin's grid divided by its scale is the same set, so its best k grows with c "
                       "whatever training does; this carries no evidence")
        return
    grows = [k_value(k) for _, _, k in sorted(pts, key=lambda p: p[1])]
    v.verdict = DESCRIPTIVE
    v.details = (f"{listing}: twins of one checkpoint: no test of the norm, nor by construction (k / head scale "
                 f"differs). The best k {'grows' if grows == sorted(grows) and len(set(grows)) > 1 else 'does not grow'} "
                 "with the norm here")


class NormBestKCorrelation(ClaimType):
    """Spearman's rho between head norm and best k over at least three distinct checkpoints, exact
    permutation p-value; twins of one checkpoint only: by construction where their grids guarantee
    it (:func:`_twins`), else descriptive."""

    name = "norm_best_k_correlation"

    def noise(self, ev: Evidence, spec: dict, s: Settings, v: Verdict) -> str:
        return ("the pairing of head norms with best ks (permutation); each best k is one run's choice: query and "
                "training-seed noise in it are not in this test")

    def perquery_datasets(self, spec: dict, config: dict) -> list[str]:
        return []  # best ks from metrics.csv, norms from norms.json

    def evaluate(self, ev: Evidence, spec: dict, s: Settings) -> Verdict:
        stat = spec.get("statistic", "frobenius_norm")
        runs = spec.get("backbones") or sorted({r for r in ev.metrics[RUN_COLUMN].unique()
                                                if split_run_name(r)[1] == "shared" and r in ev.norms})
        # a run with one k (a released checkpoint, evaluate_only) has no sweep, so no best k to correlate
        swept = [r for r in runs if r in ev.norms and len(numeric_ks(ev.metrics, r)) >= 2]
        pts = [(r, ev.norms[r][stat], best_k(ev, s, r)) for r in swept]
        pts = [(r, n, k) for r, n, k in pts if k is not None]
        v = self.verdict(spec, datasets=s.select_datasets, runs=[[r, k] for r, _, k in pts],
                         notes=seed_notes(ev, s, [r for r, _, _ in pts]))
        listing = ", ".join(f"{r} (norm {n:.1f}, best k {k})" for r, n, k in sorted(pts, key=lambda p: p[1]))
        theirs = {p: paper_k(ev, p) for r, _, _ in pts for p in paper_runs(s, r) if paper_k(ev, p)}
        v.paper = ", ".join(f"{r}: best k {k}" for r, k in theirs.items()) or None
        if len(swept) >= 2 and len({checkpoint_key(ev.backbones, r) for r in swept}) == 1:
            _twins(ev, v, swept, pts, listing)
            return v
        checkpoints = {checkpoint_key(ev.backbones, r) for r, _, _ in pts}
        if len(checkpoints) < 3:
            raise NotMeasured(f"needs at least three distinct checkpoints with head norms, a k sweep and a best k "
                              f"(not every k collapsed) ({len(checkpoints)}): {listing}")
        if len({k for _, _, k in pts}) == 1:  # rho is undefined: no test, and one best k is no finding either way
            v.verdict = INCONCLUSIVE
            v.details = f"every checkpoint has the same best k, so Spearman's rho is undefined (no test): {listing}"
            return v
        rho, p, method = spearman_exact([n for _, n, _ in pts], [k_value(k) for _, _, k in pts], s.resamples, s.seed)
        if math.isnan(rho):
            raise NotMeasured(f"Spearman's rho is undefined (equal head norms): {listing}")
        v.diff, v.p_value, v.sign_ok, v.statistic = rho, p, rho > 0, f"Spearman's rho, permutation test, {method}"
        v.test = f"Spearman's rho of {stat} and best k over {len(pts)} checkpoints > 0"
        v.estimate = f"rho = {rho:+.3f} (n = {len(pts)})"
        v.details = f"Spearman rho({stat}, best k on {', '.join(s.select_datasets)}) = {rho:+.3f}, p = {p:.4g}; {listing}"
        return v
