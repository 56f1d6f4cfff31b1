"""What a claim type of :mod:`lsrbench.report.claims` is (the claims of arXiv 2606.18811 as checkable
statements): one class that evaluates its spec on a finished run's evidence, names the runs and k
selectors its spec refers to (the config validator checks them against the grid) and the datasets
whose per-query scores it reads (the claims rule's inputs), the way an ir_measures measure declares
what it supports. Also the tests the claim types share."""

from __future__ import annotations

import math
from typing import ClassVar, NamedTuple

from lsrbench.report.claims_evidence import (Evidence, Settings, Verdict, best_k, effective_k, is_synthetic, paired_scores,
                                             seed_best_ks)
from lsrbench.report.stats import MacroTest, macro_paired_test

__all__ = ["ClaimRun", "ClaimType", "paired_test", "combine", "selection_notes", "seed_notes", "same_model",
           "DATA_SELECTED_K"]

# k selectors whose value the results decide (the best k on claims.select_on): two sides that are one
# model through them are a finding, never true by construction. ``max`` (the largest swept k) and a
# number are the config's.
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
        :class:`lsrbench.report.claims_evidence.NotMeasured` when evidence it needs is absent."""
        raise NotImplementedError

    def verdict(self, spec: dict, **fields) -> Verdict:
        return Verdict(spec["id"], spec["text"], self.name, **fields)


def paired_test(ev: Evidence, s: Settings, a: tuple[str, str], b: tuple[str, str], measure: str,
                datasets: list[str], shift: float = 0.0) -> MacroTest:
    """The macro-mean randomization test of run ``a`` against run ``b`` (H0: difference = ``shift``)."""
    return macro_paired_test(*paired_scores(ev, a, b, measure, datasets), datasets, shift=shift,
                             resamples=s.resamples, seed=s.seed)


def combine(parts: list[tuple[float, bool]]) -> tuple[float, bool]:
    """Several tests that must all go the claim's way (an intersection-union test: the largest
    p-value); when one goes the other way, that one (the smallest such p-value)."""
    against = [p for p, ok in parts if not ok]
    return (min(against), False) if against else (max(p for p, _ in parts), True)


def same_model(ev: Evidence, a: tuple[str, str], b: tuple[str, str]) -> bool:
    """Both runs are one model: the same checkpoint, mode and effective k (a x10 twin at k=10 is
    the original at k=1)."""
    ea, eb = effective_k(ev, *a), effective_k(ev, *b)
    return ea[2] is not None and eb[2] is not None and ea[:2] == eb[:2] and math.isclose(ea[2], eb[2])


def selection_notes(ev: Evidence, s: Settings, runs: list[str], selected: bool = True) -> list[str]:
    notes = []
    if selected and s.selects_on_test_set:
        notes.append("best k chosen on the same queries it is tested on (no held-out selection set: "
                     "claims.select_on); this favours the selected run")
    if any(is_synthetic(ev, r) for r in runs):
        notes.append("a synthetic twin (another backbone's checkpoint with its head scaled at load): evidence about "
                     "the rescale itself, not about a backbone whose head is large from pretraining")
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
