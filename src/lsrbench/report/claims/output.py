"""The claims' verdicts (:mod:`lsrbench.report.claims.engine`) as ``results/claims.md`` (a summary table,
then one section per claim) and ``results/claims.json`` (the same, machine-readable)."""

from __future__ import annotations

import json
import math

import pandas as pd

from lsrbench.report.claims.evidence import BY_CONSTRUCTION, Evidence, Settings, Verdict
from lsrbench.report.stats import MIN_INTERVAL_QUERIES

__all__ = ["claims_markdown", "claims_record", "claims_texts", "evidence_seeds", "read_evidence", "write_claims"]


def _p(x) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3g}"


def _finite(x):
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else x


def seeds_sentence(seeds: list[str] | None, s: Settings | None = None) -> str:
    """What the claims' tests do about training variance (each claim's `Noise:` line says it for its test)."""
    from lsrbench.report.claims.run_noise import ESTIMATED_FROM

    declared = ("" if s is None else f" (claims.seed_sd = {s.seed_sd * 100:g} points of the measure, claims.seed_flops_cv "
                f"= {s.seed_flops_cv:g} for log FLOPs; source: {s.seed_sd_source})")
    if not seeds or len(seeds) < ESTIMATED_FROM:
        trained = ("every run was trained once, with one seed" if not seeds or len(seeds) < 2 else
                   f"every run was trained with {len(seeds)} seeds ({', '.join(seeds)}), too few to estimate their spread")
        return (f"Training variance: {trained}, so each comparison adds a declared run-level noise per trained model"
                f"{declared} to its test's query noise (recipe.seeds with {ESTIMATED_FROM} or more seeds estimates it "
                "from the run itself).")
    return (f"Training seeds: every run was trained once per seed ({len(seeds)} seeds: {', '.join(seeds)}; recipe.seeds). "
            "Comparisons test each query's score averaged over the seeds plus a run-level term whose sd is the seeds' "
            "own spread (pooled within the trained runs, t-distributed), a run's best k is that of the seeds' mean "
            "metrics, and each best-k claim says how many seeds, each on its own, select the same k.")


def _header(claims_cfg: dict, s: Settings, verdicts: list[Verdict], seeds: list[str] | None = None,
            chance: dict | None = None) -> list[str]:
    from lsrbench.report.claims.engine import holm_family_size

    n_claims, n_tests = sum(v.p_adjusted is not None for v in verdicts), holm_family_size(verdicts)
    family = (f"the {n_tests} distinct tests of the {n_claims} tested claims (a claim that is another's test is "
              "reported beside it, counted once)" if n_tests < n_claims else f"the {n_tests} tested claims")
    select = (f"the best k of a run is chosen on {s.select_measure} over {', '.join(s.select_datasets)}"
              + (" (the test datasets themselves: no held-out selection set)" if s.selects_on_test_set else ""))
    design = [f"Design: {claims_cfg['design'].strip()}", ""] if claims_cfg.get("design") else []
    lines = [
        "# Claims of the paper, checked on this run", "", *design,
        f"Tested on {s.measure}, macro mean over {', '.join(s.datasets)} (the table's statistic: the mean of the "
        f"per-dataset means); {select}, collapsed runs excluded. Comparisons: paired randomization (sign-flip) "
        f"test of the macro-mean difference (each query weighted 1/(datasets x its dataset's queries); "
        f"{s.resamples} resamples or exact, seed {s.seed}), 95% stratified bootstrap interval (none from fewer "
        f"than {MIN_INTERVAL_QUERIES} queries in a dataset). A claim that reads a run's best k is tested over every k "
        f"that choice could take (\"the best k beats k=1\": some k beats k=1, Bonferroni over them), so noise "
        f"that moves the choice does not decide the verdict. "
        f"\"Matches or beats\": non-inferiority, margin {s.margin:.4f} (claims.margin: {claims_cfg['margin']:g} points of the measure x 100). "
        f"Holm's correction over {family} at alpha = {s.alpha}: a tested claim holds or fails only "
        f"when its adjusted p-value is below alpha, in its direction or against it; otherwise it is inconclusive. "
        f"A collapse flag decides only through a test of the flagged run's scores. "
        f"`by construction`: the config makes the claim true whatever training does; `descriptive`: no test; "
        f"`not measured`: evidence the claim needs is absent.", "", seeds_sentence(seeds, s), ""]
    if chance:
        from lsrbench.report.tables.chance import chance_note

        datasets = list(dict.fromkeys(s.datasets + s.select_datasets))
        lines += [chance_note(chance, datasets, list(dict.fromkeys([s.measure, s.select_measure])), marked=False), ""]
    if any(v.verdict == BY_CONSTRUCTION for v in verdicts) or any("synthetic twin" in " ".join(v.notes) for v in verdicts):
        lines += ["This config compares twins of one checkpoint (a synthetic large-norm head): only the claims "
                  "about the rescale itself carry evidence here; claims about backbones whose heads are large from "
                  "pretraining need the paper config.", ""]
    return lines


def claims_markdown(verdicts: list[Verdict], claims_cfg: dict, seeds: list[str] | None = None,
                    chance: dict | None = None) -> str:
    """claims.md; ``seeds``: the run's training seeds (one seed: the sentence that says training
    variance is not measured); ``chance``: results/chance.json (what was evaluated, and a random
    ranking's scores on it)."""
    s = Settings.from_config(claims_cfg)
    lines = _header(claims_cfg, s, verdicts, seeds, chance)
    rows = [{"claim": v.text, "verdict": v.verdict, "ours: difference [95% CI]": v.estimate or "–",
             "p (Holm)": f"{_p(v.p_value)} ({_p(v.p_adjusted)})" if v.p_value is not None else "–",
             "paper": v.paper or "–"} for v in verdicts]
    if rows:
        lines += [pd.DataFrame(rows).to_markdown(index=False), ""]
    for v in verdicts:
        lines += [f"## {v.text}", "", f"**{v.verdict}** — {v.details}", "", f"Noise: {v.noise or 'none: no test'}.", ""]
        if v.p_value is not None:
            lines += [f"Test: {v.statistic}; p = {_p(v.p_value)}, Holm-adjusted {_p(v.p_adjusted)}.", ""]
        if v.paper:
            lines += [f"Paper: {v.paper}.", ""]
        lines += [f"- Note: {n}." for n in v.notes] + ([""] if v.notes else [])
    return "\n".join(lines)


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
            "runs": v.runs, "datasets": v.datasets, "paper": v.paper, "details": v.details, "notes": v.notes,
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
