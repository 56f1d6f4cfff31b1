"""The ``compare`` claim (arXiv 2606.18811's "ModernBERT underperforms BERT at k=1", "recovered ModernBERT matches
BERT", "over-rescaling RoBERTa hurts"): run a against run b on the macro mean of the test datasets, two-sided or
as non-inferiority with ``claims.margin`` (docs/claims.md)."""

from __future__ import annotations

from lsrbench.names import RUN_COLUMN, k_order
from lsrbench.report.claims.claim_type import (DATA_SELECTED_K, ClaimRun, ClaimType, Outcome, all_of, any_of, pair_outcome,
                                        paired_test, same_model, selection_notes, set_outcome)
from lsrbench.report.claims.evidence import (BY_CONSTRUCTION, INCONCLUSIVE, Evidence, NotMeasured, Settings, Verdict,
                                             numeric_ks, paper_compare, resolve_k, run_text)
from lsrbench.report.results import collapsed_runs

__all__ = ["Compare", "selectable_ks"]

_SHIFT = {"less": 0, "greater": 0, "different": 0, "not_less": -1, "not_greater": +1, "equivalent": -1}
_SIGN = {"less": -1, "greater": +1, "different": 0, "not_less": +1, "not_greater": -1, "equivalent": +1}
# what a claim's test asks, in claims.md's words
_TEST = {"less": "{a} < {b}", "greater": "{a} > {b}", "different": "{a} != {b}",
         "not_less": "{a} >= {b} - {margin:.4f} (non-inferiority)", "not_greater": "{a} <= {b} + {margin:.4f}",
         "equivalent": "{a} within {margin:.4f} of {b} (TOST)"}
_RELATION = {"less": "a < b", "greater": "a > b", "different": "a != b",
             "not_less": "a >= b - margin (non-inferiority)", "not_greater": "a <= b + margin",
             "equivalent": "b - margin < a < b + margin (equivalence, TOST)"}


def selectable_ks(ev: Evidence, run: str) -> list[str]:
    """Every k ``best`` can select for a run: its numeric, non-collapsed ks."""
    collapsed = collapsed_runs(ev.metrics)
    return sorted((k for k in numeric_ks(ev.metrics, run) if (run, k) not in collapsed), key=k_order)


class Compare(ClaimType):
    name = "compare"

    def runs(self, spec: dict) -> list[ClaimRun]:
        return [ClaimRun(f"{side}.backbone", spec[side]["backbone"], f"{side}.k", spec[side]["k"]) for side in ("a", "b")]

    def evaluate(self, ev: Evidence, spec: dict, s: Settings) -> Verdict:
        expect = spec["expect"]
        a, b = ((spec[x]["backbone"], resolve_k(ev, s, spec[x]["backbone"], spec[x]["k"])) for x in ("a", "b"))
        for run, k in (a, b):
            if k is None:
                raise NotMeasured(f"{run} has no finished run" if run not in set(ev.metrics[RUN_COLUMN])
                                  else f"{run}: every k collapsed or lacks {s.select_measure} on the selection set")
        shift = _SHIFT[expect] * s.margin
        selected = [x for x in ("a", "b") if spec[x]["k"] in DATA_SELECTED_K]
        v = self.verdict(spec, runs=[list(a), list(b)], datasets=s.datasets, margin=s.margin if shift else None,
                         paper=paper_compare(ev, spec, s))
        v.notes += selection_notes(ev, s, [a[0], b[0]], bool(selected), over_choices=True)
        sides = [f"{run} k in {{{', '.join(selectable_ks(ev, run))}}}" if x in selected
                 else run_text(run, k) for x, (run, k) in zip(("a", "b"), (a, b))]
        v.test = _TEST[expect].format(a=sides[0], b=sides[1], margin=s.margin)
        if not selected and same_model(ev, a, b):
            what = "one run" if a == b else "one model (twins of one checkpoint, the head scale cancelled by k)"
            v.verdict = BY_CONSTRUCTION
            v.notes.append(f"both runs are {what}: the difference is 0 by construction")
            return v
        t = paired_test(ev, s, a, b, s.measure, s.datasets, shift)
        v.diff, v.ci, v.statistic = t.diff, t.ci, t.method
        v.estimate = f"{t.diff:+.4f} {t.interval_text()}"
        v.details = (f"{s.measure}, macro mean over {', '.join(s.datasets)} ({sum(t.n_queries.values())} queries): "
                     f"{run_text(*a)} = {t.mean_a:.4f} vs {run_text(*b)} = {t.mean_b:.4f}; claim: {_RELATION[expect]}"
                     + (f" with margin {s.margin:.4f}" if shift else "") + f"; difference {t.diff:+.4f} "
                     f"{t.interval_text().replace('[', '[95% CI ', 1) if t.ci else t.interval_text()}, "
                     f"p = {t.p_value:.4g} (H0: difference = {shift:+.4f})")
        if not selected and expect == "equivalent":
            _equivalence(ev, s, v, a, b, t)
            return v
        if not selected:
            set_outcome(v, pair_outcome(t, a, b, s.measure, s.datasets, _SIGN[expect]))
            return v
        if expect in ("different", "equivalent"):
            v.verdict = INCONCLUSIVE
            v.details += (f"; a side is the best k the results chose, and \"{_RELATION[expect]}\" has no test over "
                          "the ks it could be: not tested")
            return v
        _over_selection(ev, s, spec, v, (a, b), shift, {(a, b): t})
        return v


def _equivalence(ev: Evidence, s: Settings, v: Verdict, a, b, lower) -> None:
    """Equivalence as two one-sided tests (Schuirmann's TOST): holds when both are significant their way, fails
    when either is significantly against, else inconclusive: a difference merely not significant is never
    "equal"."""
    upper = paired_test(ev, s, a, b, s.measure, s.datasets, +s.margin)
    set_outcome(v, all_of([pair_outcome(lower, a, b, s.measure, s.datasets, +1),
                           pair_outcome(upper, a, b, s.measure, s.datasets, -1)]))
    v.details += f"; above -margin: p = {lower.p_value:.4g}, below +margin: p = {upper.p_value:.4g} (H0: {+s.margin:+.4f})"


def _over_selection(ev: Evidence, s: Settings, spec: dict, v: Verdict, chosen, shift: float, tests: dict) -> None:
    sign = _SIGN[spec["expect"]]
    runs = {x: spec[x]["backbone"] for x in ("a", "b")}
    ks = {x: selectable_ks(ev, runs[x]) if spec[x]["k"] in DATA_SELECTED_K else [side[1]]
          for x, side in zip(("a", "b"), chosen)}
    # a best side the claim says is the larger one: some k of it (any); the smaller one: every k (all);
    # a side of one k is that k whichever
    outer, inner = (any_of, all_of) if sign > 0 else (all_of, any_of)
    left_out, texts, parts = [], [], []
    for ka in ks["a"]:
        inner_parts = []
        for kb in ks["b"]:
            a, b = (runs["a"], ka), (runs["b"], kb)
            if same_model(ev, a, b):
                left_out.append(f"{run_text(*a)} vs {run_text(*b)}")
                continue
            t = tests.get((a, b)) or paired_test(ev, s, a, b, s.measure, s.datasets, shift)
            inner_parts.append(pair_outcome(t, a, b, s.measure, s.datasets, sign))
            texts.append(f"k={ka} vs k={kb}: {t.diff:+.4f} {t.interval_text()}, p = {t.p_value:.4g}"
                         if runs["a"] == runs["b"] else
                         f"{run_text(*a)} vs {run_text(*b)}: {t.diff:+.4f} {t.interval_text()}, p = {t.p_value:.4g}")
        if inner_parts:
            parts.append(inner(inner_parts))
    why = _selection_text(ev, s, spec, chosen)
    if left_out:
        why += f"; left out as one model on both sides: {', '.join(left_out)}"
    if not parts:
        v.verdict = INCONCLUSIVE
        v.details = f"{why}: every k the choice could take is the other side's model, so nothing is left to test; " + v.details
        return
    outcome: Outcome = outer(parts)
    set_outcome(v, outcome)
    n = sum(len(ks[x]) for x in ("a", "b") if spec[x]["k"] in DATA_SELECTED_K)
    v.statistic = (f"{v.statistic}; over the {n} ks a best side could be (some k: Bonferroni over them; every k: "
                   "intersection-union)")
    v.details = f"{why}; tested over them: {'; '.join(texts)}; " + v.details


def _selection_text(ev: Evidence, s: Settings, spec: dict, chosen) -> str:
    texts = []
    for x, side in zip(("a", "b"), chosen):
        if spec[x]["k"] not in DATA_SELECTED_K:
            continue
        run, k = side
        larger = (_SIGN[spec["expect"]] > 0) == (x == "a")
        texts.append(f"{run}'s best k is {k} (on {', '.join(s.select_datasets)}, {s.select_measure}); the claim is "
                     f"tested over every k it could be ({', '.join(selectable_ks(ev, run))}): "
                     f"{'some k' if larger else 'every k'} of {run} {'above' if larger else 'below'} the other side")
    return "; ".join(texts)
