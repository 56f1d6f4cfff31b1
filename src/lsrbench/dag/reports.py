"""The report rules (``workflow/rules/report.smk``), declared once each: the run files a report reads
(the current config's addressed outputs, from the :class:`~lsrbench.dag.layout.Layout`), the
settings it is made with, and its job function (:data:`lsrbench.pipeline.JOBS`). Each reads
cached run outputs only, so deleting a report re-runs just its rule.

Files that belong to a run are passed *by key*, never by position: ``params.keyed[name]`` holds
``[key..., path]`` rows (``[backbone, path]``, ``[run, k, path]``, ``[run, k, dataset, path]``; with
several training seeds the seed follows k: ``[run, k, seed, ...]``, :func:`lsrbench.config.grid.run_keys`),
the one encoding of a run key the report jobs read (:func:`lsrbench.report.config_record.keyed`);
the same paths are the rule's inputs, for the DAG.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from lsrbench.config.grid import probe_settings, run_keys, runs, several_seeds
from lsrbench.dag.declarations import pooled_flops_datasets
from lsrbench.model.probe_names import LOGIT_STATISTICS
from lsrbench.names import POOLED, PROBE_K
from lsrbench.report.config_record import report_backbones, report_settings

__all__ = ["REPORTS", "ReportRules", "report_outputs", "row_targets", "html_pages", "claims_datasets", "job_threads",
           "corpus_sharing_datasets", "uses_probe", "PROBE_REPORTS"]


def job_threads(remote_exec: bool, cores: int | None) -> int:
    """Threads of a train or index job. Locally one: on 2 cores, two one-thread jobs side by side
    ran the tiny default 1.22x faster than one all-cores job at a time (310 s vs 379 s,
    benchmark/results/dag_schedule.json: each job's start-up is paid in parallel), and a job's
    numbers then do not depend on how many cores the machine has (intra-op reductions split by
    thread count change the last float digits, which training carries on). ``--set-threads
    train=N index=N`` gives more. Inside a cluster job: the cores it was given (the profile's
    resources), since there it runs alone."""
    return max(1, int(cores or 1)) if remote_exec else 1


def corpus_sharing_datasets(config: dict) -> list[str]:
    """Evaluated datasets that reuse another dataset's ``docs.npz`` (only their queries are encoded)."""
    from lsrbench.dag.declarations import docs_dataset

    return [d for d in config["evaluation"]["datasets"] if docs_dataset(config, d) != d]


# -- the run files the reports read -------------------------------------------------------------

def _run_metric_files(layout) -> list[list[str]]:
    """``[run, k, (seed,) dataset, path]`` of every model's metric file (pooled FLOPs: dataset
    :data:`lsrbench.names.POOLED`): how metrics.csv gets its seed column, with several seeds."""
    config = layout.config
    rows = [[*key.values(), d, layout.get("evaluate", **key, dataset=d).path("metrics.tsv")]
            for key in run_keys(config) for d in config["evaluation"]["datasets"]]
    if pooled_flops_datasets(config):
        rows += [[*key.values(), POOLED, layout.get("pooled", **key).path("metrics.tsv")] for key in run_keys(config)]
    return rows


def row_targets(layout, run: str, k: str) -> list[str]:
    """The files of Table 1's row (``run``, ``k``): every seed's metric files of the run (its
    evaluations, and pooled FLOPs), or BM25's (``run`` BM25); what builds that row and no other
    (``lsrbench run --row``). Empty when the row is not one of the config's."""
    from lsrbench.names import BM25

    if run == BM25:
        config = layout.config
        return ([layout.get("bm25", dataset=d).path("metrics.tsv") for d in config["evaluation"]["datasets"]]
                if config["report"]["bm25"] else [])
    return [row[-1] for row in _run_metric_files(layout) if row[0] == run and str(row[1]) == str(k)]


def _metric_files(layout) -> list[str]:
    config = layout.config
    files = [row[-1] for row in _run_metric_files(layout)]
    if config["report"]["bm25"]:
        files += [layout.get("bm25", dataset=d).path("metrics.tsv") for d in config["evaluation"]["datasets"]]
    return files


def _norm_files(layout) -> list[list[str]]:
    return [[b, layout.get("norms", backbone=b).path("norms.json")] for b in layout.config["backbones"]]


def _log_files(layout) -> list[list[str]]:
    return [[*key.values(), layout.get("train", **key).path("train_log.jsonl")] for key in run_keys(layout.config)]


def uses_probe(config: dict) -> bool:
    """Whether the config's default target runs the step-0 probe (docs/probe.md), and so whether
    its reports read the probe's results: ``probe.with_grid`` where something is trained (a grid
    of released checkpoints only needs no training data: ``lsrbench probe`` still probes them), a
    run of ``k: probe``, or a logit-scale statistic (the probe measures those) for ``auto_k`` or a
    claim."""
    statistics = [(config.get("auto_k") or {}).get("statistic")]
    statistics += [c.get("statistic") for c in (config.get("claims") or {}).get("list", [])]
    trains = not all(entry.get("evaluate_only") for entry in config["backbones"].values())
    return ((probe_settings(config)["with_grid"] and trains) or any(k == PROBE_K for _, k in runs(config))
            or any(s in LOGIT_STATISTICS for s in statistics))


def _probe_files(layout) -> list[list[str]]:
    return [[b, layout.get("probe", backbone=b).path("probe.json")] for b in layout.config["backbones"]]


def _probes_read(layout, needed: bool | None = None) -> dict:
    """The probe files, for a report that shows them where the config runs the probe (``needed``:
    only where the report needs them)."""
    wanted = uses_probe(layout.config) if needed is None else needed
    return {"probe_files": _probe_files(layout)} if wanted else {}


def _logit_auto_k(config: dict) -> bool:
    """k auto by a logit-scale statistic: Table 1 reads its value from the probes."""
    return (config.get("auto_k") or {}).get("statistic") in LOGIT_STATISTICS


def claims_datasets(config: dict) -> list[str]:
    """Datasets whose per-query scores the claims read: what each claim type says it needs."""
    from lsrbench.report.claims import perquery_datasets

    return perquery_datasets(config)


def _perquery_files(layout) -> list[list[str]]:
    return [[*key.values(), d, layout.get("evaluate", **key, dataset=d).path("perquery.tsv")]
            for key in run_keys(layout.config) for d in claims_datasets(layout.config)]


def _reference(config: dict) -> list[str]:
    """The paper's values shown beside ours, as an input: editing the file re-runs the report."""
    return [config["report"]["reference"]] if config["report"]["reference"] else []


def _probe_report_settings(config: dict) -> dict:
    """The probe's reference backbone (``auto_k.reference``) and the statistic it crosses."""
    reference = (config.get("auto_k") or {}).get("reference")
    return {"backbones": report_backbones(config), "statistic": probe_settings(config)["statistic"],
            "reference": reference if reference in config["backbones"] else None}


# -- the report rules ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Report:
    """One report rule: its job function, the run files it reads (``files``: plain lists; ``keyed``:
    ``[key..., path]`` rows) and its settings (from the config)."""

    job: str
    files: Callable = lambda layout: {}
    keyed: Callable = lambda layout: {}
    settings: Callable = lambda config: {}


def _config(layout) -> dict:
    """The config snapshot every report is made with (:data:`lsrbench.dag.declarations.CONFIG`)."""
    return {"config_yaml": layout.get("configs").path("config.yaml")}


def _metrics(layout) -> dict:
    return {"metrics_csv": f"{layout.results}/metrics.csv", **_config(layout)}


REPORTS = {
    # with several training seeds, the seed of each run file too (metrics.csv's seed column)
    "collect": Report("report_collect", files=lambda L: {"metric_files": _metric_files(L), **_config(L)},
                      keyed=lambda L: {"seeded_files": _run_metric_files(L)} if several_seeds(L.config) else {}),
    "table1": Report("report_table1", files=lambda L: {**_metrics(L), "reference_file": _reference(L.config)},
                     keyed=lambda L: {"norm_files": _norm_files(L), **_probes_read(L, _logit_auto_k(L.config))},
                     settings=lambda c: {**report_settings(c), "auto_k": c.get("auto_k")}),
    "table_beir": Report("report_table_beir", files=_metrics, settings=report_settings),
    "norms_report": Report("report_norms", files=_metrics,
                           keyed=lambda L: {"norm_files": _norm_files(L), **_probes_read(L)},
                           settings=lambda c: {**report_settings(c), "auto_k": c.get("auto_k")}),
    "tradeoff": Report("report_tradeoff", files=_metrics, settings=report_settings),
    "loss_curves": Report("report_loss_curves", files=_config, keyed=lambda L: {"log_files": _log_files(L)},
                          settings=lambda c: {"backbones": report_backbones(c), "batch_size": c["recipe"]["batch_size"]}),
    "claims": Report("report_claims", files=lambda L: {**_metrics(L), "reference_file": _reference(L.config)},
                     keyed=lambda L: {"perquery_files": _perquery_files(L), "norm_files": _norm_files(L),
                                      "log_files": _log_files(L), **_probes_read(L)},
                     settings=lambda c: {**report_settings(c), "claims_cfg": c.get("claims")}),
    # the probe before any training (what `lsrbench probe` makes), and beside the trained outcomes
    "probe_report": Report("report_probe", files=_config, keyed=lambda L: {"probe_files": _probe_files(L)},
                           settings=_probe_report_settings),
    "probe_outcomes": Report("report_probe_outcomes", files=_metrics, keyed=lambda L: {"probe_files": _probe_files(L)},
                             settings=lambda c: {**_probe_report_settings(c), "report_cfg": c["report"]}),
}



class ReportRules:
    """The Snakemake side of :data:`REPORTS` for one layout: each report rule's ``input`` (every file
    it reads, by name) and ``params`` (its job, settings and keyed files, canonical)."""

    def __init__(self, layout):
        self.layout = layout

    def inputs(self, name: str) -> dict:
        report = REPORTS[name]
        keyed = {n: [row[-1] for row in rows] for n, rows in report.keyed(self.layout).items()}
        return {**report.files(self.layout), **keyed}

    def params(self, name: str) -> dict:
        report = REPORTS[name]
        # the config is in its canonical (schema) order already (lsrbench.config.schema.canonical_order),
        # whose backbones keep the order the tables show them in: not sorted again here
        return {"stage": report.job, "settings": report.settings(self.layout.config), "keyed": report.keyed(self.layout)}


# The Markdown reports shown as HTML pages in `snakemake --report` (page -> report category).
HTML_PAGES = {"table1": "Tables", "table_beir": "Tables", "norms": "Head norms", "claims": "Claims",
              "probe_outcomes": "Probe"}
# The probe's reports: before training (`lsrbench probe` makes these), and beside the trained outcomes.
PROBE_REPORTS = ("probe.md", "probe.json", "probe.png")
PROBE_OUTCOME_REPORTS = ("probe_outcomes.md", "probe_outcomes.json")


def html_pages(config: dict) -> dict[str, str]:
    """The HTML renderings this config's report has (claims only when the config states claims,
    the probe's only when its default target runs the probe)."""
    shown = {"claims": bool(config.get("claims")), "probe_outcomes": uses_probe(config)}
    return {page: cat for page, cat in HTML_PAGES.items() if shown.get(page, True)}


def report_outputs(config: dict, results: str = "results") -> list[str]:
    out = [f"{results}/{name}" for name in ("table1.md", "table_beir.md", "metrics.csv", "norms.md", "norms.png",
                                             "tradeoff.png", "tradeoff.pdf", "loss_curves.png")]
    if config.get("claims"):
        out += [f"{results}/claims.md", f"{results}/claims.json"]
    if uses_probe(config):
        out += [f"{results}/{name}" for name in PROBE_REPORTS + PROBE_OUTCOME_REPORTS]
    return out + [f"{results}/html/{page}.html" for page in html_pages(config)]
