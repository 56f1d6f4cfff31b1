"""What a claim type of :mod:`lsrbench.report.claims.engine` is (the claims of arXiv 2606.18811 as checkable
statements): one class that evaluates its spec on a finished run's evidence, names the runs and k selectors its
spec refers to (the config validator checks them against the grid) and the datasets whose per-query scores it
reads (the claims rule's inputs), the way an ir_measures measure declares what it supports."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from lsrbench.report.claims.evidence import (Evidence, Settings, Verdict, best_k, effective_k, is_synthetic, paired_scores,
                                             seed_best_ks)
from lsrbench.report.claims.run_noise import difference_sd, noise_text
from lsrbench.report.stats import MacroTest, macro_paired_test

__all__ = ["ClaimRun", "ClaimType", "Outcome", "paired_test", "pair_outcome", "any_of", "all_of", "set_outcome",
           "selection_notes", "seed_notes", "same_model", "DATA_SELECTED_K"]

# k selectors whose value the results decide (the best k on claims.select_on): a claim that reads one is tested
# over every k it could select (claims.compare), never through the selection alone.
DATA_SELECTED_K = ("best",)


class ClaimRun(NamedTuple):
    """A run a claim's spec names: the spec field of the run, its name, the field of its k and the
    k selector (a number, auto, best or max), or None where the claim type picks its ks itself."""

    run_field: str
    run: str
    k_field: str
    k: object


class ClaimType:
    """One kind of claim (``claims.list[].type``): subclasses set :attr:`name` and implement
    :meth:`evaluate`; :meth:`runs` and :meth:`perquery_datasets` default to a ``backbones`` list
    tested on the claim's test datasets."""

    name: ClassVar[str]

    def runs(self, spec: dict) -> list[ClaimRun]:
        """The runs (and k selectors) the spec names, for the validator to check against the grid."""
        return [ClaimRun(f"backbones[{j}]", run, "", None) for j, run in enumerate(spec.get("backbones") or [])]

    def perquery_datasets(self, spec: dict, config: dict) -> list[str]:
        """The datasets whose per-query scores the claim reads, from the run config."""
        return list(spec.get("datasets", config["claims"]["datasets"]))

    def evaluate(self, ev: Evidence, spec: dict, s: Settings) -> Verdict:
        """The claim's verdict (or its test, for Holm's correction); raises
        :class:`lsrbench.report.claims.evidence.NotMeasured` when evidence it needs is absent."""
        raise NotImplementedError

    def verdict(self, spec: dict, **fields) -> Verdict:
        return Verdict(spec["id"], spec["text"], self.name, **fields)

    def noise(self, ev: Evidence, spec: dict, s: Settings, v: Verdict) -> str:
        """Which noise the claim's test accounts for (a tested claim; an untested one: none)."""
        return noise_text(ev, s, s.measure, s.datasets)


def paired_test(ev: Evidence, s: Settings, a: tuple[str, str], b: tuple[str, str], measure: str,
                datasets: list[str], shift: float = 0.0) -> MacroTest:
    """The macro-mean randomization test of run ``a`` against run ``b`` (H0: difference = ``shift``),
    with both runs' training-seed noise in it (:mod:`lsrbench.report.claims.run_noise`)."""
    run_sd, run_df = difference_sd(ev, s, a, b, measure, datasets)
    return macro_paired_test(*paired_scores(ev, a, b, measure, datasets), datasets, shift=shift,
                             resamples=s.resamples, seed=s.seed, run_sd=run_sd, run_df=run_df, interval=s.intervals)


@dataclass(frozen=True)
class Outcome:
    """A test as a verdict reads it: its two-sided ``p``, whether the observed direction is the
    claim's (``ok``), and ``key``, what was tested (two claims whose keys are equal ran one test,
    which Holm's correction counts once)."""

    p: float
    ok: bool
    key: object


def pair_outcome(t: MacroTest, a: tuple[str, str], b: tuple[str, str], measure: str, datasets: list[str],
                 sign: int) -> Outcome:
    """The outcome of the paired test ``t`` of ``a`` against ``b`` for a claim that a - b - shift has ``sign`` (+1,
    -1; 0: a two-sided claim that they differ)."""
    ok = sign == 0 or (t.diff - t.shift) * sign > 0
    if (b, sign) < (a, -sign):
        a, b, sign, shift = b, a, -sign, -t.shift
    else:
        shift = t.shift
    return Outcome(t.p_value, ok, ("pair", a, b, measure, tuple(sorted(datasets)), round(shift, 12), sign))


def _compound(kind: str, outcomes) -> tuple[list[Outcome], tuple]:
    outcomes = list(outcomes)
    if not outcomes:
        raise ValueError(f"{kind}: no outcome to combine")
    return outcomes, (kind, tuple(sorted({o.key for o in outcomes}, key=repr)))


def any_of(outcomes) -> Outcome:
    """A claim that at least one of several statements holds (a union: "some k > 1 beats k = 1"): it holds when the
    smallest p going its way, times their number (Bonferroni), is significant; it fails only when every
    statement is significantly against it (intersection-union: the largest p)."""
    outcomes, key = _compound("any", outcomes)
    if len(outcomes) == 1:
        return outcomes[0]
    going = [o.p for o in outcomes if o.ok]
    if going:
        return Outcome(min(1.0, min(going) * len(outcomes)), True, key)
    return Outcome(max(o.p for o in outcomes), False, key)


def all_of(outcomes) -> Outcome:
    """A claim that every one of several statements holds (an intersection: "both backbones recover"): it holds
    when the largest p is significant with every direction the claim's (intersection-union); it fails when one
    statement is significantly against it, the smallest such p times their number (Bonferroni: any of them could
    have been the one)."""
    outcomes, key = _compound("all", outcomes)
    if len(outcomes) == 1:
        return outcomes[0]
    against = [o.p for o in outcomes if not o.ok]
    if against:
        return Outcome(min(1.0, min(against) * len(outcomes)), False, key)
    return Outcome(max(o.p for o in outcomes), True, key)


def set_outcome(v: Verdict, outcome: Outcome) -> None:
    """A tested claim's p-value, direction and test identity, for Holm's correction."""
    v.p_value, v.sign_ok, v.test_key = outcome.p, outcome.ok, outcome.key


def same_model(ev: Evidence, a: tuple[str, str], b: tuple[str, str]) -> bool:
    """Both runs are one model: the same checkpoint, mode and effective k (a x10 twin at k=10 is
    the original at k=1)."""
    ea, eb = effective_k(ev, *a), effective_k(ev, *b)
    return ea[2] is not None and eb[2] is not None and ea[:2] == eb[:2] and math.isclose(ea[2], eb[2])


def selection_notes(ev: Evidence, s: Settings, runs: list[str], selected: bool = True,
                    over_choices: bool = False) -> list[str]:
    """Notes on a claim that reads a best k (``selected``): where it is chosen on the queries it is
    tested on, unless ``over_choices`` (the claim is tested over every k the choice could take, so
    the choice shows a number but decides nothing)."""
    notes = []
    # a claim tested over every k the choice could take does not rest on it (claims.md's notes say so once)
    if selected and s.selects_on_test_set and not over_choices:
        notes.append("best k chosen on its test queries: favours it")
    if any(is_synthetic(ev, r) for r in runs):
        notes.append("synthetic twin: evidence on the rescale, not on a head large from pretraining")
    return notes + (seed_notes(ev, s, runs) if selected else [])


def seed_notes(ev: Evidence, s: Settings, runs: list[str]) -> list[str]:
    """With several training seeds, per run: how many seeds, each on its own, select the best k
    of the seeds' mean (the k the claim uses); nothing with one seed."""
    notes = []
    for run in dict.fromkeys(runs):
        per_seed = seed_best_ks(ev, s, run)
        if not per_seed:
            continue
        chosen = best_k(ev, s, run)
        same = sum(k == chosen for k in per_seed.values())
        listing = ", ".join(f"seed {seed}: {'–' if k is None else k}" for seed, k in per_seed.items())
        notes.append(f"{run}: {same} of {len(per_seed)} training seeds select k={chosen}, the best k of their mean, "
                     f"each on its own ({listing}; on {', '.join(s.select_datasets)}, {s.select_measure})")
    return notes
