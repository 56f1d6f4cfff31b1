"""The ``compare`` claim (arXiv 2606.18811's "ModernBERT underperforms BERT at k=1", "recovered
ModernBERT matches BERT", "over-rescaling RoBERTa hurts"): run a against run b on the macro mean of
the test datasets, two-sided or as non-inferiority with ``claims.margin`` (docs/claims.md)."""

from __future__ import annotations

from lsrbench.report.claim_type import DATA_SELECTED_K, ClaimRun, ClaimType, paired_test, same_model, selection_notes
from lsrbench.report.claims_evidence import (BY_CONSTRUCTION, FAILS, Evidence, NotMeasured, Settings, Verdict,
                                             paper_compare, resolve_k, run_text)

__all__ = ["Compare"]

_SHIFT = {"less": 0, "greater": 0, "different": 0, "not_less": -1, "not_greater": +1}
_SIGN = {"less": -1, "greater": +1, "different": 0, "not_less": +1, "not_greater": -1}
_RELATION = {"less": "a < b", "greater": "a > b", "different": "a != b",
             "not_less": "a >= b - margin (non-inferiority)", "not_greater": "a <= b + margin"}
# Claims that two runs differ: when the results make the two sides one model, the data contradict them.
_STRICT = ("less", "greater", "different")


class Compare(ClaimType):
    name = "compare"

    def runs(self, spec: dict) -> list[ClaimRun]:
        return [ClaimRun(f"{side}.backbone", spec[side]["backbone"], f"{side}.k", spec[side]["k"]) for side in ("a", "b")]

    def evaluate(self, ev: Evidence, spec: dict, s: Settings) -> Verdict:
        expect = spec["expect"]
        a, b = ((spec[x]["backbone"], resolve_k(ev, s, spec[x]["backbone"], spec[x]["k"])) for x in ("a", "b"))
        for run, k in (a, b):
            if k is None:
                raise NotMeasured(f"{run} has no finished run" if run not in set(ev.metrics["backbone"])
                                  else f"{run}: every k collapsed or lacks {s.select_measure} on the selection set")
        shift = _SHIFT[expect] * s.margin
        t = paired_test(ev, s, a, b, s.measure, s.datasets, shift)
        v = self.verdict(spec, runs=[list(a), list(b)], datasets=s.datasets, margin=s.margin if shift else None,
                         paper=paper_compare(ev, spec, s, s.measure, s.datasets))
        v.diff, v.ci, v.p_value, v.statistic = t.diff, (t.ci_low, t.ci_high), t.p_value, t.method
        v.sign_ok = True if _SIGN[expect] == 0 else (t.diff - shift) * _SIGN[expect] > 0
        v.estimate = f"{t.diff:+.4f} [{t.ci_low:+.4f}, {t.ci_high:+.4f}]"
        v.details = (f"{s.measure}, macro mean over {', '.join(s.datasets)} ({sum(t.n_queries.values())} queries): "
                     f"{run_text(*a)} = {t.mean_a:.4f} vs {run_text(*b)} = {t.mean_b:.4f}; claim: {_RELATION[expect]}"
                     + (f" with margin {s.margin:.4f}" if shift else "") + f"; difference {t.diff:+.4f} "
                     f"[95% CI {t.ci_low:+.4f}, {t.ci_high:+.4f}], p = {t.p_value:.4g} (H0: difference = {shift:+.4f})")
        v.notes += selection_notes(ev, s, [a[0], b[0]], "best" in (spec["a"]["k"], spec["b"]["k"]))
        if same_model(ev, a, b):
            _one_model(v, spec, a, b, expect)
        return v


def _one_model(v: Verdict, spec: dict, a: tuple[str, str], b: tuple[str, str], expect: str) -> None:
    """Both sides are one model. Through the config's own selectors (twins of one checkpoint with
    ``head_scale``) the claim is true by construction; through a k the results selected, that is a
    finding: against a claim that they differ, and a plain test of a non-inferiority claim."""
    what = "one run" if a == b else "one model (twins of one checkpoint, the head scale cancelled by k)"
    selected = [(spec[x]["backbone"], k) for x, k in (("a", a[1]), ("b", b[1])) if spec[x]["k"] in DATA_SELECTED_K]
    if not selected:
        v.verdict, v.p_value = BY_CONSTRUCTION, None
        v.notes.append(f"both runs are {what}: the difference is 0 by construction")
        return
    why = "; ".join(f"the best k of {run} is {k}" for run, k in selected)
    if expect in _STRICT:
        v.verdict, v.p_value = FAILS, None
        v.details = (f"{why}, so {run_text(*a)} and {run_text(*b)} are {what}: the results leave no difference, "
                     f"against the claim ({_RELATION[expect]}); " + v.details)
    else:
        v.notes.append(f"{why}, so both sides are {what}: the non-inferiority test runs as usual")
