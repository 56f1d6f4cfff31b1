"""The claims engine calibrated against chance (lsrbench.report.claims.calibration): under simulated
evidence with no effect, every trained model carrying its own training-seed offset at the measured seed
sd (calibration.MEASURED_SEED_SD), no claim of config/config.yaml, config/paper.yaml or the grid of every
claim type and selector says `holds` or `fails` in more than 10 % of the draws (issue 48); the engine
without its seed term does, on the FLOPs leg of the frontier; under the paper's effect sizes the paper's
verdicts come out, in at least 80 % of draws where the simulated sizes give that power (the claims where
they do not are named here, with why). Small draws here (fixed seeds); `pytest -m slow` draws 200 of the
tiny default and 50 of the paper config; the recorded rates (at least 200 draws per cell) are
benchmark/results/claims_calibration.json, tabulated in benchmark/results/claims_calibration.md."""

from __future__ import annotations

import copy

import pytest

from helpers.paths import REPO
from lsrbench.report.claims.calibration import (MEASURED_SEED_SD, PAPER_SHAPED, Scenario, calibrate, claim_kinds,
                                                false_verdicts, grid_config, load_config, no_effect, paper_queries)

MOST = 0.10  # the largest false-verdict rate a claim may have under no effect
# Paper-shaped claims the simulated sizes give no 80 % power (the calibration table says so too):
UNDERPOWERED = {
    # +0.035 against a margin of 0.01, with two models' seed noise (sd 0.018) on top: a few draws in ten
    ("config/config.yaml", "recovered_matches_reference"),
    # one dataset: its FLOPs ratio (x0.8) against two models' FLOPs seed noise (sd 0.14 in log): no power
    ("config/config.yaml", "rescaled_frontier"),
    # seven backbones, four of them flat in k (their best k is noise): Spearman's rho over 7 points
    ("config/paper.yaml", "optimal_k_grows_with_norm"),
    # equivalence within 0.01 (TOST) of two models whose difference carries seed noise of sd 0.018: never
    # found at one seed (0 of 100 at every size in benchmark/results/claims_calibration.json)
    ("config/paper.yaml", "tying_alone_changes_nothing"),
    ("config/paper.yaml", "vocabulary_alone_changes_nothing"),
    # with two models' seed noise (sd 0.018) in every test, differences of 0.03-0.04 (the paper's k
    # against its neighbours, 0.405 against 0.370 + margin, untie at 16 against the good k), a FLOPs
    # ratio of 0.8 and the gap left (modernbert_matches_bert's test) are found in under 80 % of draws at 200 queries
    # (benchmark/results/claims_calibration.json)
    ("config/paper.yaml", "large_norm_best_k"), ("config/paper.yaml", "roberta_best_k"),
    ("config/paper.yaml", "modernbert_matches_bert"), ("config/paper.yaml", "ettin_matches_bert"),
    ("config/paper.yaml", "roberta_head_alone"), ("config/paper.yaml", "rescaled_frontier"),
    ("config/paper.yaml", "gap_left_after_rescaling"),
}


def load(name: str) -> dict:
    return load_config(str(REPO / name))


def bound(draws: int) -> int:
    """The most false verdicts of ``draws`` a claim may give: 10 % of them."""
    return int(MOST * draws)


def assert_calibrated(config: dict, counts: dict, most: int) -> None:
    kinds = claim_kinds(config)
    wrong = {cid: dict(c) for cid, c in counts.items() if false_verdicts(c, kinds[cid]) > most}
    assert not wrong, f"more than {most} false verdicts under no effect: {wrong}"


def assert_power(name: str, scenario: Scenario, counts: dict, draws: int) -> None:
    for cid, expected in scenario.expected.items():
        got = counts[cid][expected]
        if (name, cid) in UNDERPOWERED:
            assert got < 0.8 * draws, f"{cid}: {got}/{draws} {expected}: no longer underpowered, take it off the list"
        else:
            assert got >= 0.8 * draws, f"{cid}: {expected} in {got} of {draws} draws ({dict(counts[cid])})"


def test_the_tiny_defaults_claims_under_no_effect_and_the_papers_effect_sizes():
    config = load("config/config.yaml")
    counts = calibrate(config, no_effect("config/config.yaml"), 20, 1, 200, resamples=500, offsets=MEASURED_SEED_SD)
    assert_calibrated(config, counts, bound(20))
    paper = PAPER_SHAPED["config/config.yaml"]
    assert_power("config/config.yaml", paper,
                 calibrate(config, paper, 10, 2, 200, resamples=500, offsets=MEASURED_SEED_SD), 10)


def test_the_paper_configs_claims_under_no_effect_small_draws():
    config = load("config/paper.yaml")
    counts = calibrate(config, no_effect("config/paper.yaml"), 3, 3, paper_queries(config, 20), resamples=300,
                       offsets=MEASURED_SEED_SD)
    assert_calibrated(config, counts, bound(3))
    assert set(counts) == {spec["id"] for spec in config["claims"]["list"]}


def test_without_its_seed_term_the_frontier_says_holds_on_one_models_flops_offset():
    """13 datasets, every run equal in expectation, each model's FLOPs shifted by its own seed (sd 0.099 in
    log): the sign flips over datasets see one shift on all 13 and call it significant; the declared
    FLOPs seed noise (claims.seed_flops_cv) keeps the frontier within 10 %."""
    config = grid_config([1, 16], 13, False)
    config["claims"]["list"] = [c for c in config["claims"]["list"] if c["id"] == "frontier"]
    query_only = copy.deepcopy(config)
    query_only["claims"].update(seed_sd=0.0, seed_flops_cv=0.0)
    scenario = Scenario("no effect", norms={"a": 1.0, "b": 2.0, "c": 3.0})
    draws = [calibrate(c, scenario, 10, 8, 60, resamples=300, offsets=MEASURED_SEED_SD)["frontier"]
             for c in (config, query_only)]
    assert false_verdicts(draws[0], "strict") <= bound(10) < false_verdicts(draws[1], "strict")


@pytest.mark.parametrize("ks, datasets, held_out, queries, ties", [
    ([1, 16], 1, False, 4, False),           # two ks, one dataset, four queries (no test can reach 0.05)
    ([1, 2, 4, 8, 16], 13, True, 30, True),  # the paper's grid, 13 datasets, a held-out selection, ties
])
def test_every_claim_type_and_selector_under_no_effect(ks, datasets, held_out, queries, ties):
    config = grid_config(ks, datasets, held_out)
    counts = calibrate(config, Scenario("no effect", norms={"a": 1.0, "b": 2.0, "c": 3.0}), 10, 4, queries, ties=ties,
                       resamples=500, reference={"optimal_k": {"a": ks[-1]}})
    assert_calibrated(config, counts, bound(10))


def test_a_collapsed_run_decides_only_what_it_makes_true():
    """b at k=1 collapsed, every other run equal: "a at 1 < b at 1" fails (the collapsed run is far
    below), "b's best beats its k=1" holds for b; claims that do not read b at 1 stay calibrated."""
    config = grid_config([1, 4, 16], 1, False)
    scenario = Scenario("b@1 collapsed", collapsed=frozenset({("b", "1")}), norms={"a": 1.0, "b": 2.0, "c": 3.0})
    counts = calibrate(config, scenario, 10, 5, 60, resamples=500, reference={"optimal_k": {"a": 16}})
    assert counts["fixed_k"]["fails"] == 10 and counts["best_matches"]["holds"] == 10
    untouched = {cid: c for cid, c in counts.items() if cid in ("max_vs_1", "best_vs_1", "max_vs_best", "paper_k")}
    assert_calibrated(config, untouched, bound(10))


@pytest.mark.slow
def test_two_hundred_draws_of_the_tiny_default_and_fifty_of_the_paper_config_with_seed_offsets():
    """Issue 48's done-when at test scale: no claim says holds or fails in more than 10 % of the draws
    with no effect and per-model seed offsets; the paper-shaped draws still give the paper's verdicts."""
    for name, draws, cap, resamples in (("config/config.yaml", 200, 200, 1000), ("config/paper.yaml", 50, 50, 2000)):
        config = load(name)
        sizes = cap if name == "config/config.yaml" else paper_queries(config, cap)
        counts = calibrate(config, no_effect(name), draws, 11, sizes, resamples=resamples, offsets=MEASURED_SEED_SD)
        assert_calibrated(config, counts, bound(draws))
        paper = PAPER_SHAPED[name]
        big = sizes if name == "config/config.yaml" else paper_queries(config, 200)
        assert_power(name, paper, calibrate(config, paper, 20, 12, big, resamples=resamples,
                                            offsets=MEASURED_SEED_SD), 20)


@pytest.mark.slow
@pytest.mark.parametrize("ks, datasets, held_out, queries, ties", [
    ([1, 16], 1, True, 1000, False),
    ([1, 2, 4], 13, False, 8, True),
])
def test_every_claim_type_and_selector_under_no_effect_fifty_draws(ks, datasets, held_out, queries, ties):
    config = grid_config(ks, datasets, held_out)
    counts = calibrate(config, Scenario("no effect", norms={"a": 1.0, "b": 2.0, "c": 3.0}), 50, 6, queries,
                       ties=ties, resamples=1000, reference={"optimal_k": {"a": ks[-1]}})
    assert_calibrated(config, counts, bound(50))
