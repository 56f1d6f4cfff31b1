"""A random ranking's score (lsrbench.evaluate.chance) against ir_measures on every ranking of small
collections: the closed forms give the exact mean and variance over all N! orders, graded
judgments, a judged document missing from the collection, cutoffs beyond N, and Vaswani's pool."""

from __future__ import annotations

import itertools
import math

import ir_measures
import numpy as np
import pytest

from lsrbench.evaluate.chance import AT_CHANCE_Z, chance_levels, query_chance

MEASURES = ["nDCG@3", "nDCG@10", "RR@2", "RR@10", "R@2", "R(rel=2)@3", "P@2", "P@10"]


def brute_force(name: str, docs: list[str], judged: dict[str, int]) -> tuple[float, float]:
    """Mean and variance of ir_measures' value over every order of ``docs``."""
    measure = ir_measures.parse_measure(name)
    values = []
    for order in itertools.permutations(docs):
        run = {"q": {d: float(len(order) - i) for i, d in enumerate(order)}}
        values.append(ir_measures.calc_aggregate([measure], {"q": judged}, run)[measure])
    return float(np.mean(values)), float(np.var(values))


@pytest.mark.parametrize("name", MEASURES)
@pytest.mark.parametrize("judged", [
    {"d0": 1},                                   # one relevant document
    {"d0": 2, "d1": 1, "d2": 0},                 # graded, one judged non-relevant
    {"d0": 1, "d3": 2, "missing": 1},            # a judged document that is not in the collection
])
def test_the_closed_forms_are_the_mean_and_variance_over_every_ranking(name, judged):
    docs = [f"d{i}" for i in range(6)]
    present = [g for d, g in judged.items() if d in docs]
    mean, var = query_chance(name, len(docs), present, list(judged.values()))
    want_mean, want_var = brute_force(name, docs, judged)
    assert mean == pytest.approx(want_mean, abs=1e-12) and var == pytest.approx(want_var, abs=1e-12)


def test_a_dataset_mean_and_its_bound():
    qrels = {"a": {"d0": 1}, "b": {"d1": 1, "d2": 1}}
    level = chance_levels(["P@1"], 4, qrels)["P@1"]
    # P@1 per query: Bernoulli(1/4) and Bernoulli(2/4): mean (0.25 + 0.5) / 2, variance of the mean
    assert level.expected == pytest.approx(0.375)
    assert level.sd == pytest.approx(math.sqrt(0.25 * 0.75 + 0.5 * 0.5) / 2)
    assert level.bound == pytest.approx(level.expected + AT_CHANCE_Z * level.sd)
    assert chance_levels(["AP"], 4, qrels)["AP"] is None  # no closed form here: said, not guessed


def test_vaswani_pool_and_full_collection(vaswani_qrels):
    """The issue's numbers: a random ranking scores nDCG@10 0.0084 on the 2,732-document pool and
    0.0020 on the 11,429-document collection, R@1000 0.366 on the pool."""
    pool = chance_levels(["nDCG@10", "R@1000", "RR@10"], 2732, vaswani_qrels)
    full = chance_levels(["nDCG@10"], 11429, vaswani_qrels)
    assert round(pool["nDCG@10"].expected, 4) == 0.0084 and round(full["nDCG@10"].expected, 4) == 0.0020
    assert round(pool["R@1000"].expected, 3) == 0.366


@pytest.fixture(scope="module")
def vaswani_qrels():
    from helpers.paths import shared_or_skip
    from lsrbench.data.beir import read_qrels_tsv

    qrels: dict[str, dict[str, int]] = {}
    for qid, did, rel, _ in read_qrels_tsv(shared_or_skip("data", "vaswani", "qrels", "test.tsv")):
        qrels.setdefault(qid, {})[did] = rel
    return qrels
