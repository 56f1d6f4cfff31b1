"""What the claims (:mod:`lsrbench.report.claims.engine`) read and return: the evidence of a finished run
(metrics, per-query scores, head norms, training logs, the config's backbones, the paper's
reported values), the ``claims:`` settings, one claim's verdict, and the helpers every claim type
shares (best k on the selection set, paired per-query scores, twins of one checkpoint, the paper's
number for a run)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

import pandas as pd

from lsrbench.model.head_match import numeric_head_scale
from lsrbench.names import AUTO_K, RUN_COLUMN, format_k, k_value, run_name, split_run_name
from lsrbench.report import results

__all__ = ["HOLDS", "FAILS", "INCONCLUSIVE", "BY_CONSTRUCTION", "DESCRIPTIVE", "NOT_MEASURED", "VERDICTS", "NotMeasured",
           "Evidence", "Settings", "Verdict", "checkpoint_key", "effective_k", "is_synthetic", "numeric_ks", "best_k", "seed_best_ks", "resolve_k", "paired_scores",
           "run_text", "paper_runs", "paper_value", "paper_k", "paper_compare", "paper_gain"]

HOLDS, FAILS, INCONCLUSIVE = "holds", "fails", "inconclusive"
BY_CONSTRUCTION, DESCRIPTIVE, NOT_MEASURED = "by construction", "descriptive", "not measured"
# Every verdict word, in the order docs/claims.md lists them (tests/report/claims/test_claims.py checks the docs).
VERDICTS = (HOLDS, FAILS, INCONCLUSIVE, BY_CONSTRUCTION, DESCRIPTIVE, NOT_MEASURED)


class NotMeasured(Exception):
    """A run, per-query file, training log or reference value a claim needs is absent: the one
    condition that makes a claim ``not measured`` (its message says what is missing)."""


@dataclass
class Evidence:
    """What the claims read: tidy metrics, per-query scores, head statistics, training logs, the config's backbones
    and report block, the paper's reported values and the step-0 probes."""

    metrics: pd.DataFrame  # backbone,k,dataset,measure,value
    perquery: dict[tuple[str, str, str], pd.DataFrame] = field(default_factory=dict)  # (run,k,dataset) -> query_id,measure,value
    # backbone -> norms.json with the probe's logit scale at k = 1 (lsrbench.model.auto_k.head_statistics)
    norms: dict[str, dict] = field(default_factory=dict)
    train_logs: dict[tuple[str, str], list[dict]] = field(default_factory=dict)  # (run,k) -> rows
    backbones: dict[str, dict] = field(default_factory=dict)
    report: dict = field(default_factory=dict)
    reference: dict = field(default_factory=dict)  # paper_reference.yaml: values, optimal_k
    probes: list[dict] = field(default_factory=list)  # probe results (lsrbench.model.probe.probe_backbone)
    seed_metrics: dict[str, pd.DataFrame] = field(default_factory=dict)  # seed -> its metrics ({}: one seed)
    chance: dict = field(default_factory=dict)  # results/chance.json: the evaluated data and a random ranking's scores
    # (run, k, dataset, measure) -> per-query scores by query id, read once (paired_scores)
    _scores: dict = field(default_factory=dict, repr=False, compare=False)
    # (measure, datasets, log) -> the run-level noise of one model (lsrbench.report.claims.run_noise), computed once
    _noise: dict = field(default_factory=dict, repr=False, compare=False)

    def scores(self, run: str, k: str, dataset: str, measure: str) -> pd.Series | None:
        """One run's per-query scores of ``measure`` on ``dataset`` by query id (None: no file)."""
        key = (run, k, dataset, measure)
        if key not in self._scores:
            frame = self.perquery.get((run, k, dataset))
            self._scores[key] = (None if frame is None else
                                 frame[frame["measure"] == measure].set_index("query_id")["value"].sort_index())
        return self._scores[key]


@dataclass
class Settings:
    """The ``claims:`` block with its defaults resolved (the schema's defaults)."""

    measure: str
    datasets: list[str]
    select_measure: str
    select_datasets: list[str]
    alpha: float
    resamples: int
    seed: int
    margin: float  # in units of the measure (claims.margin / 100)
    seed_sd: float = 0.0  # declared run-level sd of one model's score, in units of the measure (claims.seed_sd / 100)
    seed_flops_cv: float = 0.0  # declared run-level sd of one model's log FLOPs
    seed_sd_source: str = ""
    # the paper's backbones each of ours stands for, and the reference column they are read from
    # where no column of this config has the claims' measure and datasets (claims.paper_runs, paper_column)
    paper_runs: dict = field(default_factory=dict)
    paper_column: str | None = None
    intervals: bool = True  # False: tests give no bootstrap interval (the calibration's draws: it decides nothing)

    @classmethod
    def from_config(cls, cfg: dict) -> "Settings":
        select = cfg.get("select_on") or {}
        return cls(cfg["measure"], list(cfg["datasets"]), select.get("measure", cfg["measure"]),
                   list(select.get("datasets", cfg["datasets"])), cfg["alpha"], cfg["resamples"], cfg["seed"],
                   cfg["margin"] / 100.0, cfg["seed_sd"] / 100.0, cfg["seed_flops_cv"], cfg["seed_sd_source"],
                   dict(cfg.get("paper_runs") or {}), cfg.get("paper_column"))

    def for_claim(self, spec: dict) -> "Settings":
        """These settings with a claim's own ``measure`` and ``datasets`` (where it gives them)."""
        return dataclasses.replace(self, measure=spec.get("measure", self.measure),
                                   datasets=list(spec.get("datasets", self.datasets)))

    @property
    def selects_on_test_set(self) -> bool:
        return set(self.select_datasets) == set(self.datasets) and self.select_measure == self.measure


@dataclass
class Verdict:
    """One claim's outcome."""

    id: str
    text: str
    type: str
    verdict: str | None = None
    details: str = ""
    statistic: str = "descriptive (no test)"
    test: str = ""  # what the test asks, in one line (claims.md)
    estimate: str = ""
    diff: float | None = None
    ci: tuple[float, float] | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    sign_ok: bool | None = None
    can_hold: bool = True
    margin: float | None = None
    runs: list[list[str]] = field(default_factory=list)
    datasets: list[str] = field(default_factory=list)
    paper: str | None = None
    notes: list[str] = field(default_factory=list)
    # what the claim's test is (lsrbench.report.claims.claim_type.Outcome.key): claims with equal keys ran
    # one test, counted once in Holm's family; ``same_test_as``: the claim whose entry counts it
    test_key: object = field(default=None, repr=False)
    same_test_as: str | None = None
    # which noise the verdict's test accounts for (queries, training seeds: declared or estimated), one line
    noise: str | None = None


# ---------------------------------------------------------------------------------- run helpers
def checkpoint_key(backbones: dict, run: str) -> str:
    """What a run's checkpoint is, without its synthetic ``head_scale``: twins of one checkpoint (same model,
    revision, fetch and MLM re-fit) share it."""
    entry = backbones.get(split_run_name(run)[0], {})
    keys = ("model", "revision", "fetch", "trust_remote_code", "code_revision", "mlm_refit")
    matched = {"head_scale": entry["head_scale"]} if isinstance(entry.get("head_scale"), dict) else {}
    return json.dumps({**{key: entry.get(key) for key in keys}, **matched}, sort_keys=True)


def effective_k(ev: Evidence, run: str, k: str) -> tuple[str, str, float | None]:
    """(checkpoint, mode, k / head_scale): a x10 twin at k=10 is its original at k=1."""
    value = k_value(k)
    entry = ev.backbones.get(split_run_name(run)[0])
    scale = numeric_head_scale(entry) if entry else 1.0  # a run of no configured backbone (BM25): no twin
    return checkpoint_key(ev.backbones, run), split_run_name(run)[1], None if value is None else value / scale


def is_synthetic(ev: Evidence, run: str) -> bool:
    return bool(ev.backbones.get(split_run_name(run)[0], {}).get("synthetic"))


def numeric_ks(metrics: pd.DataFrame, run: str) -> list[str]:
    return [k for k in metrics.loc[metrics[RUN_COLUMN] == run, "k"].unique() if k_value(k) is not None]


def best_k(ev: Evidence, s: Settings, run: str, above: float | None = None) -> str | None:
    """:func:`lsrbench.report.results.best_k` on the selection set, optionally among k > ``above``."""
    metrics = ev.metrics
    if above is not None:
        metrics = metrics[metrics["k"].map(lambda k: (k_value(k) or 0) > above)]
    return results.best_k(metrics, run, s.select_measure, s.select_datasets)


def seed_best_ks(ev: Evidence, s: Settings, run: str) -> dict[str, str | None]:
    """Each training seed's own best k of ``run`` on the selection set ({} with one seed)."""
    return {seed: results.best_k(m, run, s.select_measure, s.select_datasets) for seed, m in ev.seed_metrics.items()}


def resolve_k(ev: Evidence, s: Settings, run: str, k) -> str | None:
    if k == "best":
        return best_k(ev, s, run)
    if k == "max":
        ks = numeric_ks(ev.metrics, run)
        return max(ks, key=k_value) if ks else None
    return AUTO_K if k == AUTO_K else format_k(k)


def paired_scores(ev: Evidence, a: tuple[str, str], b: tuple[str, str], measure: str, datasets: list[str]):
    """Per-query scores of two runs on each dataset, paired on query id; :class:`NotMeasured` when
    a run's per-query file or the measure's scores are absent."""
    xs, ys = [], []
    for ds in datasets:
        sa, sb = ev.scores(*a, ds, measure), ev.scores(*b, ds, measure)
        if sa is None or sb is None:
            raise NotMeasured(f"no per-query scores of {run_text(*(a if sa is None else b))} on {ds}")
        if len(sa) == len(sb) and sa.index.equals(sb.index):
            common_a, common_b = sa.to_numpy(float), sb.to_numpy(float)
        else:
            common = sa.index.intersection(sb.index).sort_values()
            common_a, common_b = sa.loc[common].to_numpy(float), sb.loc[common].to_numpy(float)
        if not len(common_a):
            raise NotMeasured(f"no {measure} scores of one query in both {run_text(*a)} and {run_text(*b)} on {ds}")
        xs.append(common_a)
        ys.append(common_b)
    return xs, ys


def run_text(run: str, k: str) -> str:
    return f"{run} k={k}"


# ---------------------------------------------------------------------------------- the paper's numbers
def paper_runs(s: Settings, run: str) -> list[str]:
    """The paper's runs ``run`` stands for (``claims.paper_runs`` by backbone, its mode kept), else itself."""
    backbone, mode = split_run_name(run)
    return [run_name(p, mode) for p in s.paper_runs.get(backbone, [backbone])]


def paper_value(ev: Evidence, s: Settings, run: str, k: str) -> float | None:
    """The paper's number for its (run, k) on the table column with the claims' measure and datasets,
    else on ``claims.paper_column``."""
    columns = [c["name"] for c in ev.report.get("columns", [])
               if c["measure"] == s.measure and set(c["datasets"]) == set(s.datasets)]
    values = ev.reference.get("values", {}).get(run, {})
    for name in columns + ([s.paper_column] if s.paper_column else []):
        for key, row in values.items():
            if k_value(key) is not None and k_value(key) == k_value(k) and name in row:
                return float(row[name])
    return None


def paper_k(ev: Evidence, run: str) -> str | None:
    k = ev.reference.get("optimal_k", {}).get(run)
    return None if k is None else format_k(k)


def paper_compare(ev: Evidence, spec: dict, s: Settings) -> str | None:
    """The paper's difference for a compare claim's two sides: every pair of their paper runs (one
    run on both sides: the same paper run on both)."""
    def side(sel, run):
        k = paper_k(ev, run) if sel["k"] == "best" else format_k(sel["k"]) if sel["k"] != "max" else None
        return (k, paper_value(ev, s, run, k)) if k else (None, None)

    texts, ours = [], (spec["a"]["backbone"], spec["b"]["backbone"])
    # one run on both sides is one paper run on both sides
    pairs = ([(r, r) for r in paper_runs(s, ours[0])] if ours[0] == ours[1] else
             [(ra, rb) for ra in paper_runs(s, ours[0]) for rb in paper_runs(s, ours[1])])
    for ra, rb in pairs:
        (ka, va), (kb, vb) = side(spec["a"], ra), side(spec["b"], rb)
        if va is not None and vb is not None:
            texts.append(f"{ra} k={ka} {va:.3f} vs {'' if rb == ra else rb + ' '}k={kb} {vb:.3f}: {va - vb:+.3f}")
    return "; ".join(texts) or None


def paper_gain(ev: Evidence, s: Settings, run: str) -> list[str]:
    """The paper's best k of each paper run ``run`` stands for, with its gain over k=1 where it states both."""
    texts = []
    for theirs in paper_runs(s, run):
        k = paper_k(ev, theirs)
        if k is None:
            continue
        va, vb = paper_value(ev, s, theirs, k), paper_value(ev, s, theirs, "1")
        texts.append(f"{theirs}: best k {k}" + (f", {va - vb:+.3f} over k=1" if va is not None and vb is not None else ""))
    return texts
