"""The claims engine (:mod:`lsrbench.report.claims.engine`) validated as a statistician validates a test: simulated
per-query evidence for a config's claims, drawn many times, under no effect (every run equal in expectation: the
rate of ``holds`` or ``fails`` must stay within alpha plus Monte Carlo error) and under the paper's effect sizes
(how often the paper's verdict comes out: the power the simulated sample sizes give). The simulation is written
here: no library simulates paired IR evaluations."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from lsrbench.config.grid import is_released, runs
from lsrbench.names import COLLAPSED, FLOPS, POOLED, RUN_COLUMN, k_value
from lsrbench.report.claims.engine import evaluate_claims
from lsrbench.report.claims.evidence import (BY_CONSTRUCTION, DESCRIPTIVE, FAILS, HOLDS, INCONCLUSIVE, NOT_MEASURED,
                                             Evidence)

__all__ = ["Scenario", "RunOffsets", "MEASURED_SEED_SD", "NO_OFFSETS", "no_effect", "PAPER_SHAPED", "evidence_datasets", "simulate", "calibrate", "claim_kinds",
           "false_verdicts", "grid_config", "load_config", "paper_queries", "PAPER_QUERIES", "COUNTED", "DIFFICULTY_SD", "NOISE_SD"]

DIFFICULTY_SD, NOISE_SD = 0.2, 0.15


@dataclass(frozen=True)
class RunOffsets:
    """Training-seed noise per trained model (run, k): a score offset ``N(0, model_sd)`` shared by
    its datasets plus ``N(0, dataset_sd)`` per dataset, and a FLOPs factor ``exp(N(0, flops_sd))``
    shared by its datasets."""

    model_sd: float = 0.0
    dataset_sd: float = 0.0
    flops_sd: float = 0.0


# The tiny default's six recorded seeds (benchmark/results/tiny_default_seeds-metrics.csv), sd pooled within its 5
# trained runs: nDCG@10 0.0130, log FLOPs 0.099 (claims.seed_sd's default). A whole-model offset, shared by every
# dataset: the one averaging over datasets does not shrink.
MEASURED_SEED_SD = RunOffsets(model_sd=0.013, flops_sd=0.099)
NO_OFFSETS = RunOffsets()


@dataclass(frozen=True)
class Scenario:
    """True means per run (``means[run][k]``; a run or k not listed: ``default``), collapsed
    (run, k), true FLOPs per (run, k) (not listed: 100), head norms per backbone, and the verdict
    each claim should get (``expected``, by claim id; the paper's verdicts), if any."""

    name: str
    means: dict = field(default_factory=dict)
    default: float = 0.3
    collapsed: frozenset = frozenset()
    flops: dict = field(default_factory=dict)
    norms: dict = field(default_factory=dict)
    expected: dict = field(default_factory=dict)

    def mean(self, run: str, k: str) -> float:
        by_k = self.means.get(run, {})
        return float(by_k.get(k, by_k.get("*", self.default)))



# The paper's effect sizes (arXiv 2606.18811, BEIR-13 nDCG@10) on each config's runs; the ks between the paper's are
# interpolated (it gives no numbers for them), the tiny default's runs take their paper analogues.
_PAPER = {
    "bert": {"*": 0.370}, "distilbert": {"*": 0.350}, "gte-mlm": {"*": 0.380},
    "albert": {"1": 0.330, "2": 0.300, "4": 0.250, "8": 0.180, "16": 0.100},
    "albert+untie": {"16": 0.250},
    "roberta": {"1": 0.340, "2": 0.375, "4": 0.345, "8": 0.300, "16": 0.200},
    "roberta+untie": {"16": 0.300},
    "modernbert": {"1": 0.127, "2": 0.200, "4": 0.300, "8": 0.370, "16": 0.405},
    "ettin": {"1": 0.221, "2": 0.270, "4": 0.330, "8": 0.365, "16": 0.391},
    # the controls as the paper's reading ("scale, not vocabulary") has them (the paper has no numbers):
    # untying and a cased vocabulary change nothing; BERT at ModernBERT's scale fails and recovers as it does
    "bert+untie": {"*": 0.370}, "bert-cased-at-bert-scale": {"*": 0.370},
    "bert-at-modernbert-scale": {"1": 0.127, "2": 0.200, "4": 0.300, "8": 0.360, "16": 0.370},
}
_PAPER_FLOPS = {(run, k): 100.0 * (0.8 if k_value(k) > 1 else 1.0) for run in _PAPER for k in ("1", "2", "4", "8", "16")}
_PAPER_NORMS = {"albert": 20.0, "distilbert": 90.0, "bert": 100.0, "gte-mlm": 110.0, "roberta": 150.0,
                "modernbert": 1200.0, "ettin": 1100.0}
_TINY = {"splade-tiny": {"1": 0.370, "16": 0.200}, "splade-tiny+untie": {"16": 0.300},
         "splade-tiny-x10": {"1": 0.127, "16": 0.405}}

PAPER_SHAPED = {
    "config/paper.yaml": Scenario(
        "paper-shaped", _PAPER, collapsed=frozenset({("modernbert", "1")}), flops=_PAPER_FLOPS, norms=_PAPER_NORMS,
        expected={"modernbert_underperforms_k1": HOLDS, "ettin_underperforms_k1": HOLDS, "rescaling_recovers": HOLDS,
                  "large_norm_best_k": HOLDS, "roberta_best_k": HOLDS, "modernbert_matches_bert": HOLDS,
                  "ettin_matches_bert": HOLDS, "optimal_k_grows_with_norm": HOLDS, "roberta_over_rescaling": HOLDS,
                  "albert_rescaling_hurts": HOLDS, "roberta_damage_from_embeddings": HOLDS,
                  "roberta_head_alone": HOLDS, "albert_damage_from_embeddings": HOLDS, "albert_head_alone": HOLDS,
                  "rescaled_frontier": HOLDS, "tying_alone_changes_nothing": HOLDS,
                  "scale_alone_reproduces_failure": HOLDS, "rescaling_recovers_scaled_bert": HOLDS,
                  "vocabulary_alone_changes_nothing": HOLDS, "gap_left_after_rescaling": HOLDS}),
    "config/config.yaml": Scenario(
        "paper-shaped", _TINY, flops={("splade-tiny-x10", "16"): 80.0},
        norms={"splade-tiny": 119.9, "splade-tiny-x10": 1199.2},
        expected={"large_norm_underperforms_at_k1": HOLDS, "rescaling_recovers": HOLDS, "rescaled_beats_k1": HOLDS,
                  "recovered_matches_reference": HOLDS, "over_rescaling_hurts_small_norm": HOLDS,
                  "rescaled_frontier": HOLDS, "untie_vs_shared_at_max_k": HOLDS}),
}


# Test queries of the paper config's datasets (BEIR's test splits, MS MARCO Dev's small set, NanoBEIR),
# for draws at the paper's sample sizes (capped: the calibration's own budget).
PAPER_QUERIES = {"trec-covid": 50, "nfcorpus": 323, "nq": 3452, "hotpotqa": 7405, "fiqa": 648, "arguana": 1406,
                 "webis-touche2020": 49, "dbpedia-entity": 400, "scidocs": 1000, "fever": 6666, "climate-fever": 1535,
                 "scifact": 300, "quora": 10000, "msmarco-dev": 6980, "trec-dl-2019": 43}


def paper_queries(config: dict, cap: int) -> dict[str, int]:
    """Queries per dataset of a config's claims at the paper's sizes, at most ``cap`` each (a
    NanoBEIR dataset: 50)."""
    roles = evidence_datasets(config)
    return {ds: min(cap, PAPER_QUERIES.get(ds, 50)) for ds in dict.fromkeys(roles["test"] + roles["select"] + roles["flops"])}


def no_effect(config_file: str) -> Scenario:
    """Every run equal in expectation (one true mean, one true FLOPs); the head norms stay the
    config's paper-shaped ones (a backbone's norm is a fact of its checkpoint, not an effect)."""
    return Scenario("no effect", norms=PAPER_SHAPED[config_file].norms)


def evidence_datasets(config: dict) -> dict[str, list[str]]:
    """The datasets a config's claims read, by role: ``test`` (claims.datasets), ``select``
    (claims.select_on), ``flops`` (the tradeoff plot's: report.flops_datasets, else every evaluated one)."""
    claims = config["claims"]
    select = (claims.get("select_on") or {}).get("datasets") or claims["datasets"]
    flops = config["report"].get("flops_datasets") or config["evaluation"]["datasets"]
    return {"test": list(claims["datasets"]), "select": list(select), "flops": list(flops)}


def _measures(config: dict) -> list[str]:
    claims = config["claims"]
    names = [claims["measure"], (claims.get("select_on") or {}).get("measure") or claims["measure"],
             config["report"]["tradeoff_measure"]]
    return list(dict.fromkeys(names))


def load_config(path: str) -> dict:
    """A config file (with its ``base:`` chain) validated and with the schema's defaults, its
    relative files found as the Snakefile finds them; nothing it names is read."""
    from lsrbench.config.layers import load_config_files, locate_config_paths, workflow_dir
    from lsrbench.config.schema import validate

    config, _, _ = load_config_files([path])
    return validate(locate_config_paths(config, workflow_dir()), "config.schema.yaml", path)


def grid_config(ks: list[int], datasets: int, held_out: bool) -> dict:
    """A config with one claim of every type and selector (fixed k, ``max``, ``best`` on either
    side; best k above 1, the paper's best k (``a``'s largest k), the norm correlation over three
    checkpoints, the frontier) on three backbones swept over ``ks``, tested on ``datasets`` datasets
    and selected on them or on a held-out one: the calibration's grid of settings."""
    from lsrbench.config.schema import with_defaults

    test = [f"d{i}" for i in range(datasets)]
    select = {"datasets": ["held-out"]} if held_out else None

    def compare(cid, a, b, expect):
        return {"id": cid, "text": cid, "type": "compare", "a": {"backbone": a[0], "k": a[1]},
                "b": {"backbone": b[0], "k": b[1]}, "expect": expect}

    claims = [compare("fixed_k", ("a", 1), ("b", 1), "less"), compare("max_vs_1", ("a", "max"), ("a", 1), "less"),
              compare("best_vs_1", ("a", "best"), ("a", 1), "greater"),
              compare("best_matches", ("a", "best"), ("b", 1), "not_less"),
              compare("max_vs_best", ("b", "max"), ("b", "best"), "less"),
              {"id": "best_above_1", "text": "best_above_1", "type": "best_k_above", "backbones": ["a", "b"]},
              {"id": "paper_k", "text": "paper_k", "type": "best_k_matches_paper", "backbones": ["a"]},
              {"id": "norm_corr", "text": "norm_corr", "type": "norm_best_k_correlation"},
              {"id": "frontier", "text": "frontier", "type": "frontier", "backbones": ["a"]}]
    return {"backbones": {b: {"model": f"ckpt-{b}"} for b in ("a", "b", "c")}, "k_grid": list(ks), "modes": ["shared"],
            "evaluation": {"datasets": test + (["held-out"] if held_out else [])},
            "report": {"columns": [], "flops_datasets": test, "tradeoff_measure": "nDCG@10", "reference": None},
            "claims": with_defaults("claims", {"datasets": test, "select_on": select, "list": claims})}


def simulate(config: dict, scenario: Scenario, rng: np.random.Generator, queries, ties: bool = False,
             reference: dict | None = None, offsets: RunOffsets = NO_OFFSETS) -> Evidence:
    """One draw of a checked config's evidence under ``scenario``; ``queries``: queries per dataset
    (a number, or {dataset: number}); ``reference``: the paper's values where the config names no
    file (``optimal_k``); ``offsets``: each trained model's training-seed noise."""
    from lsrbench.config.reference import read_reference
    from lsrbench.report.config_record import report_settings

    roles = evidence_datasets(config)
    datasets = list(dict.fromkeys(roles["test"] + roles["select"] + roles["flops"]))
    measures, grid = _measures(config), runs(config)
    trained = {(run, k): not is_released(config, run) for run, k in grid}
    model = {key: rng.normal(0, offsets.model_sd) * is_trained for key, is_trained in trained.items()}
    rows, scores = [], {}
    for ds in datasets:
        n = queries if isinstance(queries, int) else queries[ds]
        difficulty = rng.normal(0, DIFFICULTY_SD, n)
        ids = pd.Index([f"q{i:06d}" for i in range(n)], name="query_id")  # sorted, as Evidence.scores keeps them
        for run, k in grid:
            collapsed = (run, k) in scenario.collapsed
            mean = 0.01 if collapsed else scenario.mean(run, k)
            seed = 0.0 if collapsed else (model[(run, k)]
                                          + rng.normal(0, offsets.dataset_sd) * trained[(run, k)])
            # the seed offset after clipping: the run's mean moves by exactly it, as the tests assume
            values = np.clip(mean + (0 if collapsed else difficulty) + rng.normal(0, NOISE_SD, n), 0, 1) + seed
            if ties:
                values = np.round(values, 1)
            series = pd.Series(values, index=ids, name="value")
            for m in measures:  # one score per query serves every measure
                scores[(run, k, ds, m)] = series
                rows.append((run, k, ds, m, float(values.mean())))
            rows.append((run, k, ds, COLLAPSED, float(collapsed)))
    # a dataset's documents set every run's FLOPs on it (shared factor); each run adds its own 5 %
    shared = np.exp(rng.normal(0, 0.5, len(roles["flops"])))
    for run, k in grid:
        own = np.exp(rng.normal(0, offsets.flops_sd)) if trained[(run, k)] else 1.0  # the model's seed
        per = scenario.flops.get((run, k), 100.0) * own * shared * np.exp(rng.normal(0, 0.05, len(shared)))
        rows += [(run, k, ds, FLOPS, float(f)) for ds, f in zip(roles["flops"], per)]
        rows.append((run, k, POOLED, FLOPS, float(per.mean())))
    settings = report_settings(config)
    norms = {b: {"frobenius_norm": float(scenario.norms.get(b, 100.0))} for b in config["backbones"]}
    ev = Evidence(pd.DataFrame(rows, columns=[RUN_COLUMN, "k", "dataset", "measure", "value"]), {}, norms,
                  backbones=settings["backbones"], report=settings["report_cfg"],
                  reference=read_reference(config["report"].get("reference")) or reference or {})
    ev._scores.update(scores)  # the per-query scores as Evidence.scores reads them (no per-query frames)
    return ev


def calibrate(config: dict, scenario: Scenario, draws: int, seed: int, queries, ties: bool = False,
              resamples: int | None = None, reference: dict | None = None,
              offsets: RunOffsets = NO_OFFSETS) -> dict[str, Counter]:
    """Each claim's verdicts over ``draws`` draws of :func:`simulate` (``resamples``: the tests'
    Monte Carlo resamples, where the config's are more than the calibration can afford)."""
    claims_cfg = dict(config["claims"])
    if resamples:
        claims_cfg["resamples"] = resamples
    rng = np.random.default_rng(seed)
    counts = {spec["id"]: Counter() for spec in claims_cfg["list"]}
    for _ in range(draws):
        for v in evaluate_claims(simulate(config, scenario, rng, queries, ties, reference, offsets), claims_cfg,
                                 intervals=False):
            counts[v.id][v.verdict] += 1
    return counts


def claim_kinds(config: dict) -> dict[str, str]:
    """Per claim, what "no effect" makes of it: ``non-inferiority`` (two equal runs *do* match, and
    are equivalent: a wrong verdict is ``fails`` only), ``untested`` (descriptive, loss curves), else ``strict`` (any
    ``holds`` or ``fails`` is wrong)."""
    kinds = {}
    for spec in config["claims"]["list"]:
        if spec["type"] == "loss":
            kinds[spec["id"]] = "untested"
        elif spec["type"] == "compare" and spec["expect"] in ("not_less", "not_greater", "equivalent"):
            kinds[spec["id"]] = "non-inferiority"
        else:
            kinds[spec["id"]] = "strict"
    return kinds


def false_verdicts(counts: Counter, kind: str) -> int:
    """Verdicts that are wrong when no run differs from another in expectation."""
    if kind == "untested":
        return 0
    return counts[FAILS] + (0 if kind == "non-inferiority" else counts[HOLDS])


# every verdict word a calibration table counts, in docs/claims.md's order
COUNTED = (HOLDS, FAILS, INCONCLUSIVE, BY_CONSTRUCTION, DESCRIPTIVE, NOT_MEASURED)
