"""claims.md and claims.json: the config's claims evaluated on this run's numbers, with the files they
were evaluated from (which ``lsrbench verify`` evaluates them again from)."""

from __future__ import annotations

from lsrbench.config.grid import run_keys
from lsrbench.dag.report_rule import Report, Shown
from lsrbench.dag.stage import as_list
from lsrbench.report.config_record import config_record, keyed, report_settings
from lsrbench.report.reports.chance import with_chance
from lsrbench.report.reports.collect import METRICS_CSV
from lsrbench.report.reports.inputs import log_files, norm_files, probes_read, reference

__all__ = ["REPORT", "CLAIMS_JSON", "report_claims", "claims_datasets"]

CLAIMS_MD, CLAIMS_JSON = "claims.md", "claims.json"


def report_claims(metrics_csv: str, perquery_files, norm_files, log_files, claims_cfg: dict, report_cfg: dict,
                  backbones: dict, claims_md: str, claims_json: str, reference_file=None,
                  config_yaml: str | None = None, probe_files=None, chance_json: str | None = None) -> None:
    """``reference_file``: the paper's numbers (an input); ``probe_files``: the step-0 probes where
    the config runs them (a loss claim's start, the logit-scale head statistics)."""
    from lsrbench.config.schema import with_defaults
    from lsrbench.report.claims.engine import evaluate_claims
    from lsrbench.report.claims.output import evidence_seeds, read_evidence, write_claims

    ref = (as_list(reference_file or []) or [None])[0]
    ev = read_evidence(metrics_csv, keyed(perquery_files), keyed(norm_files), keyed(log_files), backbones, report_cfg,
                       ref, keyed(probe_files or []), chance_json)
    claims_cfg = with_defaults("claims", claims_cfg)
    sources = {"metrics_csv": metrics_csv, "reference_file": ref, "perquery_files": perquery_files,
               "norm_files": norm_files, "log_files": log_files, **({"probe_files": probe_files} if probe_files else {}),
               **({"chance_json": chance_json} if chance_json else {})}
    write_claims(evaluate_claims(ev, claims_cfg), claims_cfg, claims_md, claims_json, config_record(config_yaml),
                 sources, evidence_seeds(metrics_csv), ev.chance)


def claims_datasets(config: dict) -> list[str]:
    """Datasets whose per-query scores the claims read: what each claim type says it needs."""
    from lsrbench.report.claims.engine import perquery_datasets

    return perquery_datasets(config)


def _perquery_files(layout) -> list[list[str]]:
    return [[*key.values(), d, layout.get("evaluate", **key, dataset=d).path("perquery.tsv")]
            for key in run_keys(layout.config) for d in claims_datasets(layout.config)]


def verify_claims(root, stated, trace) -> None:
    """Every claim evaluated again (its tests re-run with their seed) from the files claims.json names."""
    import json

    from lsrbench.config.schema import with_defaults
    from lsrbench.report.claims.engine import evaluate_claims
    from lsrbench.report.claims.output import claims_texts, evidence_seeds, read_evidence
    from lsrbench.report.verify.remake import compare_data, compare_text, origin, run_files, stated_record

    md, side, metrics_csv = root / CLAIMS_MD, root / CLAIMS_JSON, root / METRICS_CSV
    if (found := stated_record(stated, side, trace)) is None:
        return
    record, located, config_rec, config = found
    sources = record.get("sources") or {}
    files = {name: run_files(sources.get(name), located, side, trace)
             for name in ("perquery_files", "norm_files", "log_files", "probe_files")}
    if any(f is None for f in files.values()):
        return
    ref = located(sources["reference_file"]) if sources.get("reference_file") else None
    if ref is not None and not ref.is_file():
        trace.problems.append(f"{side}: its paper values cannot be traced: reference file {ref} not found")
        return
    s = report_settings(config)
    perquery, norms, logs, probes = ({k: str(p) for k, p in f.items()} for f in files.values())
    chance = located(sources["chance_json"]) if sources.get("chance_json") else None
    ev = read_evidence(str(metrics_csv), perquery, norms, logs, s["backbones"], s["report_cfg"],
                       str(ref) if ref else None, probes, str(chance) if chance else None)
    claims_cfg = with_defaults("claims", config.get("claims"))
    fresh_md, fresh_json = claims_texts(evaluate_claims(ev, claims_cfg), claims_cfg, config_rec, sources,
                                        record["manifest"], evidence_seeds(str(metrics_csv)), ev.chance)
    where = origin([metrics_csv, "the per-query, head-norm and training-log files it names"], config_rec)
    compare_data(side, record, json.loads(fresh_json), where, trace)
    if md.is_file():
        compare_text(md, fresh_md, where, trace)


REPORT = Report(
    name="claims", job=report_claims,
    outputs={"claims_md": CLAIMS_MD, "claims_json": CLAIMS_JSON},
    files=lambda L: {**with_chance(L), "reference_file": reference(L.config)},
    keyed=lambda L: {"perquery_files": _perquery_files(L), "norm_files": norm_files(L), "log_files": log_files(L),
                     **probes_read(L)},
    settings=lambda c: {**report_settings(c), "claims_cfg": c.get("claims")},
    page=Shown("Claims", "claims", "Claims of the paper, checked", 2),
    when=lambda c: bool(c.get("claims")),
    stated_in=("claims_md", "claims_json"),
    # the randomization tests hold one batch of resamples x queries at a time: under 2 GB for 33k queries
    resources={"mem_mb": 2000},
    verify=verify_claims,
)
