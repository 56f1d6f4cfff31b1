"""What a uniformly random ranking scores per query, exactly: the chance level beside every table. Written here
because ir_measures scores a given ranking; the expectation over all rankings has closed forms, checked against
ir_measures on every ranking of small collections."""

from __future__ import annotations

import math
from dataclasses import dataclass

import ir_measures
import numpy as np

__all__ = ["SUPPORTED", "ChanceLevel", "query_chance", "chance_levels", "AT_CHANCE_Z"]

# One-sided 95 % normal point: a run within AT_CHANCE_Z sds of a random ranking's mean is at chance.
AT_CHANCE_Z = 1.6448536269514722
SUPPORTED = ("nDCG", "RR", "R", "P")


@dataclass(frozen=True)
class ChanceLevel:
    """A random ranking's mean of one measure over a dataset's queries, the sd of that mean, and the one-sided
    95 % bound under which a run is at chance."""

    expected: float
    sd: float

    @property
    def bound(self) -> float:
        return self.expected + AT_CHANCE_Z * self.sd

    def as_dict(self) -> dict:
        return {"expected": self.expected, "sd": self.sd, "at_chance_below": self.bound}


def _parse(name: str) -> tuple[str, int | None, int]:
    measure = ir_measures.parse_measure(name)
    params = dict(measure.params)
    if measure.NAME not in SUPPORTED or set(params) - {"cutoff", "rel"}:
        raise ValueError(f"{name}: no chance level (supported: nDCG@k, RR@k, R@k, P@k with rel)")
    return measure.NAME, params.get("cutoff"), int(params.get("rel") or 1)


def _hypergeometric(n: int, relevant: int, drawn: int) -> tuple[float, float]:
    if n <= 1:
        return float(relevant * drawn / max(n, 1)), 0.0
    p = relevant / n
    return drawn * p, drawn * p * (1 - p) * (n - drawn) / (n - 1)


def _first_relevant(n: int, relevant: int, places: int) -> np.ndarray:
    """P(the first relevant document is at place i), i = 1 .. places."""
    probs, none_yet = np.zeros(places), 1.0
    for i in range(places):
        left = n - i
        if left <= 0 or relevant == 0:
            break
        probs[i] = none_yet * relevant / left
        none_yet *= (left - relevant) / left
    return probs


def query_chance(name: str, n_docs: int, gains: list[int], judged_gains: list[int]) -> tuple[float, float]:
    """Mean and variance of one query's ``name`` under a random ranking of ``n_docs`` documents (``gains`` in
    the collection, ``judged_gains`` for the normaliser)."""
    family, cutoff, rel = _parse(name)
    places = min(cutoff or n_docs, n_docs)
    hits = sum(g >= rel for g in gains)
    if family in ("P", "R"):
        mean, var = _hypergeometric(n_docs, hits, places)
        denominator = (cutoff or n_docs) if family == "P" else sum(g >= rel for g in judged_gains)
        return (0.0, 0.0) if not denominator else (mean / denominator, var / denominator**2)
    if family == "RR":
        probs = _first_relevant(n_docs, hits, places)
        ranks = np.arange(1, places + 1)
        mean = float(probs @ (1 / ranks))
        return mean, float(probs @ (1 / ranks**2)) - mean**2
    positive = sorted((g for g in judged_gains if g > 0), reverse=True)
    discounts = 1 / np.log2(np.arange(2, places + 2))
    ideal = float(np.dot(positive[:places], discounts[:len(positive[:places])]))
    if ideal == 0:
        return 0.0, 0.0
    values = np.zeros(n_docs)
    values[:len(gains)] = [max(g, 0) for g in gains]
    mu, sigma2 = values.mean(), values.var()
    s1, s2 = discounts.sum(), (discounts**2).sum()
    var = sigma2 * (s2 - (s1**2 - s2) / (n_docs - 1)) if n_docs > 1 else 0.0
    return mu * s1 / ideal, max(var, 0.0) / ideal**2


def chance_levels(measures: list[str], n_docs: int, qrels: dict[str, dict[str, int]],
                  in_corpus=None) -> dict[str, ChanceLevel | None]:
    """Each measure's :class:`ChanceLevel` over every judged query, or None where it has no closed form."""
    out: dict[str, ChanceLevel | None] = {}
    for name in measures:
        try:
            _parse(name)
        except ValueError:
            out[name] = None
            continue
        moments = []
        for docs in qrels.values():
            judged = list(docs.values())
            present = [g for d, g in docs.items() if in_corpus is None or in_corpus(d)]
            moments.append(query_chance(name, n_docs, present, judged))
        n = len(moments)
        mean = math.fsum(m for m, _ in moments) / n
        out[name] = ChanceLevel(mean, math.sqrt(math.fsum(v for _, v in moments)) / n)
    return out
