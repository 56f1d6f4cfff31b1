"""The paper's claims ("Rescaling MLM-Head for Neural Sparse Retrieval", arXiv 2606.18811) as checkable statements,
evaluated on this run's numbers (docs/claims.md says how)."""

from __future__ import annotations

import dataclasses

from lsrbench.report.claims.claim_type import ClaimType
from lsrbench.report.claims.best_k import BestKAbove, BestKMatchesPaper, NormBestKCorrelation
from lsrbench.report.claims.compare import Compare
from lsrbench.report.claims.evidence import FAILS, HOLDS, INCONCLUSIVE, NOT_MEASURED, Evidence, NotMeasured, Settings, Verdict
from lsrbench.report.claims.frontier import Frontier
from lsrbench.report.claims.loss import Loss
from lsrbench.report.stats import holm

__all__ = ["CLAIM_TYPES", "claim_type", "perquery_datasets", "decide", "evaluate_claims", "holm_family_size", "Evidence"]

# The registry: claims.list[].type -> its claim type (the schema's enum lists the same names).
CLAIM_TYPES: dict[str, ClaimType] = {t.name: t for t in (
    Compare(),
    BestKAbove(),
    BestKMatchesPaper(),
    NormBestKCorrelation(),
    Frontier(),
    Loss(),
)}


def claim_type(name: str) -> ClaimType:
    """The claim type of ``claims.list[].type`` (validated by the schema's enum)."""
    return CLAIM_TYPES[name]


def perquery_datasets(config: dict) -> list[str]:
    """The datasets whose per-query scores the config's claims read (the claims rule's inputs), in
    the order the claims first need them."""
    names: list[str] = []
    for spec in (config.get("claims") or {}).get("list", []):
        names += [d for d in claim_type(spec["type"]).perquery_datasets(spec, config) if d not in names]
    return names


def decide(p_adjusted: float, sign_ok: bool, alpha: float, can_hold: bool = True) -> str:
    """A tested claim's verdict from its Holm-adjusted p-value and the observed direction; one that
    cannot hold (``Verdict.can_hold``) is inconclusive where it would."""
    if p_adjusted < alpha:
        return (HOLDS if can_hold else INCONCLUSIVE) if sign_ok else FAILS
    return INCONCLUSIVE


def _evaluate_one(ev: Evidence, spec: dict, s: Settings) -> Verdict:
    try:
        v = claim_type(spec["type"]).evaluate(ev, spec, s.for_claim(spec))
    except NotMeasured as exc:
        return Verdict(spec["id"], spec["text"], spec["type"], NOT_MEASURED, str(exc))
    _chance_notes(ev, v, s.for_claim(spec))
    if v.noise is None:
        v.noise = ("none: no test" if v.p_value is None
                   else claim_type(spec["type"]).noise(ev, spec, s.for_claim(spec), v))
    return v


def _chance_notes(ev: Evidence, v: Verdict, s: Settings) -> None:
    if not ev.chance or not v.datasets:
        return
    from lsrbench.report.tables.chance import at_chance_note
    from lsrbench.report.claims.evidence import run_text
    from lsrbench.report.results import mean_score

    runs = [(run_text(r, k), mean_score(ev.metrics, r, k, s.measure, v.datasets)) for r, k in dict.fromkeys(map(tuple, v.runs))]
    v.notes += at_chance_note(ev.chance, [(text, x) for text, x in runs if x is not None], s.measure, v.datasets)


def evaluate_claims(ev: Evidence, claims_cfg: dict, intervals: bool = True) -> list[Verdict]:
    """Every claim of ``claims_cfg["list"]`` (the ``claims:`` block with the schema's defaults), then Holm's
    correction over the p-values of the tested ones (those whose verdict their type left open) and their
    verdicts from it."""
    s = dataclasses.replace(Settings.from_config(claims_cfg), intervals=intervals)
    out = [_evaluate_one(ev, spec, s) for spec in claims_cfg.get("list", [])]
    tested = [v for v in out if v.verdict is None]
    untested = [v.id for v in tested if v.p_value is None]
    if untested:
        raise ValueError(f"claims {', '.join(untested)}: neither a verdict nor a p-value")
    family: dict[object, list[Verdict]] = {}
    for v in tested:
        family.setdefault(("claim", v.id) if v.test_key is None else v.test_key, []).append(v)
    members = list(family.values())
    for group, p in zip(members, holm([group[0].p_value for group in members])):
        for v in group:
            v.p_adjusted = p
            v.verdict = decide(p, bool(v.sign_ok), s.alpha, v.can_hold)
            if v is not group[0]:
                v.same_test_as = group[0].id
                v.notes.append(f"the same test as `{group[0].id}`, counted once by Holm")
    return out


def holm_family_size(verdicts: list[Verdict]) -> int:
    """How many tests Holm's correction ran over (claims sharing one test count once)."""
    return sum(v.p_adjusted is not None and v.same_test_as is None for v in verdicts)
