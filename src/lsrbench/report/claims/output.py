"""The claims' verdicts (:mod:`lsrbench.report.claims.engine`) as ``results/claims.md`` (a summary table,
then one section per claim) and ``results/claims.json`` (the same, machine-readable)."""

from __future__ import annotations

import json
import math

import pandas as pd

from lsrbench.report.claims.evidence import BY_CONSTRUCTION, DESCRIPTIVE, NOT_MEASURED, Evidence, Settings, Verdict

__all__ = ["claims_markdown", "claims_record", "claims_texts", "evidence_seeds", "read_evidence", "write_claims"]


def _p(x) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3g}"


def _finite(x):
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else x


# The paper column where the paper states no number for a claim (said once, in the notes).
NO_PAPER_NUMBER = "none stated"
# The verdicts no test decides, as the notes explain them (only those the claims got).
_MEANINGS = {BY_CONSTRUCTION: "true whatever training does", DESCRIPTIVE: "no test",
             NOT_MEASURED: "evidence it needs is absent"}


def seeds_sentence(seeds: list[str] | None, s: Settings | None = None) -> str:
    """What the claims' tests do about training variance (each claim's `Noise:` line says it for its test)."""
    from lsrbench.report.claims.run_noise import ESTIMATED_FROM

    declared = ("" if s is None else f" (claims.seed_sd {s.seed_sd * 100:g} points, seed_flops_cv {s.seed_flops_cv:g}: "
                f"{s.seed_sd_source})")
    if not seeds or len(seeds) < ESTIMATED_FROM:
        trained = ("one training seed per run" if not seeds or len(seeds) < 2 else
                   f"every run was trained with {len(seeds)} seeds ({', '.join(seeds)}), too few to estimate their spread")
        return (f"Training variance: {trained}, so each comparison adds a declared run-level noise per trained model"
                f"{declared}.")
    return (f"Training seeds: every run was trained once per seed ({len(seeds)} seeds: {', '.join(seeds)}; recipe.seeds). "
            "Comparisons test each query's score averaged over the seeds plus a run-level term whose sd is the seeds' "
            "own spread (pooled within the trained runs, t-distributed), a run's best k is that of the seeds' mean "
            "metrics, and each best-k claim says how many seeds, each on its own, select the same k.")


def _method(claims_cfg: dict, s: Settings, verdicts: list[Verdict]) -> str:
    from lsrbench.report.claims.engine import holm_family_size

    n_claims, n_tests = sum(v.p_adjusted is not None for v in verdicts), holm_family_size(verdicts)
    family = f"{n_tests} tests ({n_claims} claims)" if n_tests < n_claims else f"{n_tests} tests"
    select = ("best k chosen on the test queries themselves" if s.selects_on_test_set else
              f"best k chosen on {s.select_measure} over {', '.join(s.select_datasets)}")
    used = {v.verdict for v in verdicts}
    words = "; ".join(f"`{word}`: {meaning}" for word, meaning in _MEANINGS.items() if word in used)
    return (f"Tests: {s.measure}, macro mean over {', '.join(s.datasets)}; {select}, collapsed runs excluded; "
            f"best-k claims are tested over every k it could be. Comparisons: paired randomization of the "
            f"macro mean ({s.resamples} sign vectors, seed {s.seed}) plus run-level noise. Holm over {family} at alpha "
            f"{s.alpha}: holds or fails only if the adjusted p < alpha, else inconclusive; a collapse flag decides "
            f"only through a test." + (f" {words}." if words else ""))


def _chance_text(chance: dict, s: Settings) -> str:
    parts = []
    for ds in dict.fromkeys(s.datasets + s.select_datasets):
        d = chance.get("datasets", {}).get(ds)
        if d is None:
            continue
        pool = f"a pool of {d['documents']:,} of {d['full_documents']:,} documents" if d.get("pool_depth") else \
            f"{d['documents']:,} documents"
        levels = ", ".join(f"{m} {d['measures'][m]['expected']:.4f}" for m in dict.fromkeys([s.measure, s.select_measure])
                           if d["measures"].get(m))
        parts.append(f"{ds}: {pool}, {d['queries']} queries" + (f", where a random ranking scores {levels}" if levels else ""))
    from lsrbench.report.tables.chance import column_chance

    level = column_chance(chance, s.measure, s.datasets)
    bound = f" ({s.measure} up to {level.bound:.4f})" if level else ""
    return f"Evaluated on {'; '.join(parts)} (results/chance.json); within 1.645 sd of it{bound}: at chance."


def _shared_notes(verdicts: list[Verdict]) -> dict[str, list[str]]:
    ids: dict[str, list[str]] = {}
    for v in verdicts:
        for note in dict.fromkeys(v.notes):
            ids.setdefault(note, []).append(v.id)
    return {note: who for note, who in ids.items() if len(who) > 1}


def _notes(claims_cfg: dict, s: Settings, verdicts: list[Verdict], seeds: list[str] | None, chance: dict | None,
           shared: dict[str, list[str]]) -> list[str]:
    mapped = ", ".join(f"{ours} for {' and '.join(theirs)}" for ours, theirs in s.paper_runs.items())
    lines = ["## Notes", "", _method(claims_cfg, s, verdicts), "", seeds_sentence(seeds, s), "",
             *([_chance_text(chance, s), ""] if chance else []),
             "Paper: config/paper_reference.yaml" + (f" on {s.paper_column} ({mapped})" if mapped else "")
             + f"; `{NO_PAPER_NUMBER}`: it gives none.", ""]
    twins = any(v.verdict == BY_CONSTRUCTION for v in verdicts)
    if twins and not any("synthetic twin" in note for note in shared):
        lines += ["This config compares twins of one checkpoint: only the claims about the rescale itself carry "
                  "evidence here; claims about backbones whose heads are large from pretraining need the paper config.", ""]
    lines += [f"- {', '.join(f'`{i}`' for i in who)}: {note}." for note, who in shared.items()]
    return lines + ([""] if shared else [])


def _claim_paragraph(v: Verdict, shared: dict[str, list[str]]) -> str:
    text = f"**`{v.id}`**: {v.text}."
    # an untested claim's details say why it has no test, unless the table's estimate already shows them
    text += f" Test: {v.test or v.statistic}." if v.p_value is not None else (
        f" {v.details}." if v.details and not v.estimate else "")
    text += f" Noise: {v.noise or 'none: no test'}."
    return text + "".join(f" Note: {n}." for n in dict.fromkeys(v.notes) if n not in shared)


def claims_markdown(verdicts: list[Verdict], claims_cfg: dict, seeds: list[str] | None = None,
                    chance: dict | None = None) -> str:
    """claims.md: the design, a table of every claim (id, the paper's number beside ours, p,
    verdict), a paragraph per claim (text, test, noise, its own notes; claims.json holds the
    details), then the notes the claims share, once; ``seeds``: the run's training seeds;
    ``chance``: results/chance.json."""
    s = Settings.from_config(claims_cfg)
    shared = _shared_notes(verdicts)
    lines = ["# Claims of the paper, checked on this run", ""]
    if claims_cfg.get("design"):
        lines += [f"Design: {claims_cfg['design'].strip()}", ""]
    rows = [{"claim": v.id, "paper": v.paper or NO_PAPER_NUMBER, "ours [95% CI]": v.estimate or "–",
             "Holm p": _p(v.p_adjusted) if v.p_value is not None else "–",
             "verdict": v.verdict} for v in verdicts]
    if rows:
        lines += [pd.DataFrame(rows).to_markdown(index=False), ""]
    for v in verdicts:
        lines += [_claim_paragraph(v, shared), ""]
    return "\n".join(lines + _notes(claims_cfg, s, verdicts, seeds, chance, shared)).rstrip("\n") + "\n"


def claims_record(verdicts: list[Verdict], claims_cfg: dict, seeds: list[str] | None = None) -> dict:
    """``results/claims.json``: the settings and, per claim, everything its line in claims.md shows
    (and the training seeds, when there are several)."""
    s = Settings.from_config(claims_cfg)
    return {**({"seeds": list(seeds)} if seeds and len(seeds) > 1 else {}),
        "measure": s.measure, "datasets": s.datasets, "select_on": {"measure": s.select_measure, "datasets": s.select_datasets},
        "alpha": s.alpha, "resamples": s.resamples, "seed": s.seed, "margin": s.margin, "correction": "holm",
        "seed_sd": s.seed_sd, "seed_flops_cv": s.seed_flops_cv, "seed_sd_source": s.seed_sd_source,
        "claims": [{
            "id": v.id, "text": v.text, "type": v.type, "verdict": v.verdict, "statistic": v.statistic,
            "difference": _finite(v.diff), "interval": [_finite(x) for x in v.ci] if v.ci else None,
            "p_value": _finite(v.p_value), "p_adjusted": _finite(v.p_adjusted), "margin": v.margin,
            "runs": v.runs, "datasets": v.datasets, "paper": v.paper, "test": v.test, "details": v.details, "notes": v.notes,
            "same_test_as": v.same_test_as, "noise": v.noise or "none: no test",
        } for v in verdicts],
    }


def read_evidence(metrics_csv: str, perquery_files: dict, norm_files: dict, log_files: dict, backbones: dict,
                  report_cfg: dict, reference_file: str | None, probe_files: dict | None = None,
                  chance_json: str | None = None) -> Evidence:
    """The claims' evidence from the files the claims rule reads (run files by key: ``{(run, k,
    dataset): perquery.tsv}``, ``{backbone: norms.json}``, ``{(run, k): train_log.jsonl}``,
    ``{backbone: probe.json}`` where the config runs the step-0 probe, whose logit-scale statistics
    join the head norms; with several training seeds the seed follows k, and each query's score and
    each step's loss are averaged over the seeds, :mod:`lsrbench.report.seeds`); also what
    ``lsrbench verify`` recomputes the claims from."""
    from lsrbench.config.reference import read_reference
    from lsrbench.report.tables.chance import read_chance
    from lsrbench.report.config_record import read_probes
    from lsrbench.report.results import read_metrics
    from lsrbench.report.seeds import by_model, mean_perquery, per_seed, read_mean_train_logs, seed_mean
    from lsrbench.report.tables.table1 import head_statistics_of

    perquery = {key: mean_perquery([pd.read_csv(p, sep="\t", dtype={"query_id": str}) for p in paths])
                for key, paths in by_model(perquery_files, 3).items()}
    norms = head_statistics_of(norm_files, probe_files)
    metrics = read_metrics(metrics_csv)
    return Evidence(seed_mean(metrics), perquery, norms, read_mean_train_logs(log_files), backbones, report_cfg,
                    read_reference(reference_file), probes=read_probes(probe_files), seed_metrics=per_seed(metrics),
                    chance=read_chance(chance_json) or {})


def evidence_seeds(metrics_csv: str) -> list[str]:
    """The training seeds claims.md names (none for a one-seed config)."""
    from lsrbench.report.results import read_metrics
    from lsrbench.report.seeds import seeds_of

    return seeds_of(read_metrics(metrics_csv))


def claims_texts(verdicts: list[Verdict], claims_cfg: dict, config: dict | None = None,
                 sources: dict | None = None, manifest: str | None = None,
                 seeds: list[str] | None = None, chance: dict | None = None) -> tuple[str, str]:
    """claims.md and claims.json as written: the Markdown with the config line, the record with the
    config and the files the claims were evaluated from (``sources``; ``manifest``: the record's own
    path as written, which finds them again wherever the results folder is)."""
    from lsrbench.report.config_record import config_line

    record = {**claims_record(verdicts, claims_cfg, seeds), "config": config, "manifest": manifest, "sources": sources}
    return claims_markdown(verdicts, claims_cfg, seeds, chance) + config_line(config), json.dumps(record, indent=1) + "\n"


def write_claims(verdicts: list[Verdict], claims_cfg: dict, out_md: str, out_json: str, config: dict | None = None,
                 sources: dict | None = None, seeds: list[str] | None = None, chance: dict | None = None) -> None:
    from lsrbench.atomic import atomic_open

    md, record = claims_texts(verdicts, claims_cfg, config, sources, out_json if sources else None, seeds, chance)
    with atomic_open(out_md, "w", encoding="utf-8") as fh:
        fh.write(md)
    with atomic_open(out_json, "w", encoding="utf-8") as fh:
        fh.write(record)
