"""The report rules (``workflow/rules/report.smk``), declared once each: the run files a report reads
(the current config's addressed outputs, from the :class:`~lsrbench.dag.layout.Layout`), the
settings it is made with, and its job function (:mod:`lsrbench.pipeline.report_jobs`). Each reads
cached run outputs only, so deleting a report re-runs just its rule.

Files that belong to a run are passed *by key*, never by position: ``params.keyed[name]`` holds
``[key..., path]`` rows (``[backbone, path]``, ``[run, k, path]``, ``[run, k, dataset, path]``; with
several training seeds the seed follows k: ``[run, k, seed, ...]``, :func:`lsrbench.config.grid.run_keys`),
the one encoding of a run key the report jobs read (:func:`lsrbench.report.config_record.keyed`);
the same paths are the rule's inputs, for the DAG.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from lsrbench.config.grid import probe_settings, run_keys, runs, several_seeds
from lsrbench.config.evaluated import dataset_measures, pooled_flops_datasets
from lsrbench.dag.evaluated import docs_dataset, eval_dir, eval_info
from lsrbench.model.probe_names import LOGIT_STATISTICS
from lsrbench.names import MANIFESTS, POOLED, PROBE_K
from lsrbench.report.config_record import report_backbones, report_settings

__all__ = ["REPORTS", "ReportRules", "report_outputs", "row_targets", "html_pages", "claims_datasets", "job_threads",
           "corpus_sharing_datasets", "uses_probe", "shown_outputs", "used_reports", "manifest_path", "MANIFESTS", "HTML_RULE",
           "PROBE_REPORTS", "all_report_rules", "rule_files"]


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
    from lsrbench.report.claims.engine import perquery_datasets

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
    """One report rule: its job function, the files it writes (``outputs``: argument -> name under
    the results folder), the run files it reads (``files``: plain lists; ``keyed``: ``[key...,
    path]`` rows) and its settings (from the config). ``shown``: the outputs ``snakemake --report``
    shows, argument -> (category, caption file stem under workflow/report/, listed under its title,
    :data:`lsrbench.dag.landing.RESULTS`); ``resources``: the rule's."""

    job: str
    outputs: dict
    files: Callable = lambda layout: {}
    keyed: Callable = lambda layout: {}
    settings: Callable = lambda config: {}
    shown: dict = field(default_factory=dict)
    resources: dict = field(default_factory=dict)


def _config(layout) -> dict:
    """The config snapshot every report is made with (:mod:`lsrbench.stages.config_snapshot`),
    and the ``params.json`` beside it, which the report reads through it (the files the config was
    read from: :func:`lsrbench.report.config_record.config_record`): an input named with a leading
    ``_`` is the DAG's only, not an argument of the job (:mod:`lsrbench.pipeline.job_runner`)."""
    snapshot = layout.get("configs")
    return {"config_yaml": snapshot.path("config.yaml"), "_config_params": snapshot.path("params.json")}


def _metrics(layout) -> dict:
    return {"metrics_csv": f"{layout.results}/metrics.csv", **_config(layout)}


def _with_chance(layout) -> dict:
    """metrics.csv and what a random ranking scores on the evaluated data (results/chance.json)."""
    return {**_metrics(layout), "chance_json": f"{layout.results}/chance.json"}


def _evaluated_data(layout) -> dict:
    """``[dataset, folder]`` of every evaluated dataset's BEIR folder (pooled or full) and
    ``[dataset, file]`` of the record of its size (the pool's eval.json, the dataset's info.json)."""
    datasets = layout.config["evaluation"]["datasets"]
    return {"data_dirs": [[d, eval_dir(layout, d)] for d in datasets], "infos": [[d, eval_info(layout, d)] for d in datasets]}


def _chance_settings(config: dict) -> dict:
    return {"measures": {d: dataset_measures(config, d) for d in config["evaluation"]["datasets"]}}


REPORTS = {
    # with several training seeds, the seed of each run file too (metrics.csv's seed column)
    # metrics.sources.json: the run files metrics.csv was made from (results/ also holds other configs' runs)
    "collect": Report("report_collect", {"metrics_csv": "metrics.csv", "sources_json": "metrics.sources.json"},
                      shown={"metrics_csv": ("Tables", "metrics", True)},
                      files=lambda L: {"metric_files": _metric_files(L), **_config(L)},
                      keyed=lambda L: {"seeded_files": _run_metric_files(L)} if several_seeds(L.config) else {}),
    # what a random ranking of the evaluated documents scores, per dataset and measure (the tables'
    # and the claims' chance levels)
    "chance": Report("report_chance", {"chance_json": "chance.json"}, files=_config, keyed=_evaluated_data,
                     settings=_chance_settings),
    "table1": Report("report_table1", {"table1_md": "table1.md", "cells_json": "table1.cells.json"},
                     files=lambda L: {**_with_chance(L), "reference_file": _reference(L.config)},
                     keyed=lambda L: {"norm_files": _norm_files(L), **_probes_read(L, _logit_auto_k(L.config))},
                     settings=lambda c: {**report_settings(c), "auto_k": c.get("auto_k")}),
    "table_beir": Report("report_table_beir", {"table_beir_md": "table_beir.md"}, files=_with_chance,
                         settings=report_settings),
    # norms.data.json: what norms.png shows, the config and the files it was made from (lsrbench verify)
    "norms_report": Report("report_norms", {"norms_md": "norms.md", "norms_png": "norms.png", "data_json": "norms.data.json"},
                           shown={"norms_png": ("Head norms", "norms", True)},
                           files=_metrics, keyed=lambda L: {"norm_files": _norm_files(L), **_probes_read(L)},
                           settings=lambda c: {**report_settings(c), "auto_k": c.get("auto_k")}),
    "tradeoff": Report("report_tradeoff", {"tradeoff_png": "tradeoff.png", "tradeoff_pdf": "tradeoff.pdf",
                                           "data_json": "tradeoff.data.json"}, files=_with_chance, settings=report_settings,
                         shown={"tradeoff_png": ("Figures", "tradeoff", True)}),
    "loss_curves": Report("report_loss_curves", {"loss_curves_png": "loss_curves.png", "data_json": "loss_curves.data.json"},
                          shown={"loss_curves_png": ("Figures", "loss_curves", True)},
                          files=_config, keyed=lambda L: {"log_files": _log_files(L)},
                          settings=lambda c: {"backbones": report_backbones(c), "batch_size": c["recipe"]["batch_size"]}),
    "claims": Report("report_claims", {"claims_md": "claims.md", "claims_json": "claims.json"},
                     files=lambda L: {**_with_chance(L), "reference_file": _reference(L.config)},
                     keyed=lambda L: {"perquery_files": _perquery_files(L), "norm_files": _norm_files(L),
                                      "log_files": _log_files(L), **_probes_read(L)},
                     settings=lambda c: {**report_settings(c), "claims_cfg": c.get("claims")},
                     # the randomization tests hold one batch of resamples x queries at a time
                     # (lsrbench.report.stats): under 2 GB for BEIR-13's 33k queries (tests/report/test_stats.py)
                     resources={"mem_mb": 2000}),
    # the probe before any training (what `lsrbench probe` makes), and beside the trained outcomes
    "probe_report": Report("report_probe", {"probe_md": "probe.md", "probe_json": "probe.json", "probe_png": "probe.png"},
                           shown={"probe_png": ("Probe", "probe", False)},
                           files=_config, keyed=lambda L: {"probe_files": _probe_files(L)},
                           settings=_probe_report_settings),
    "probe_outcomes": Report("report_probe_outcomes", {"outcomes_md": "probe_outcomes.md",
                                                       "outcomes_json": "probe_outcomes.json"},
                             files=_metrics, keyed=lambda L: {"probe_files": _probe_files(L)},
                             settings=lambda c: {**_probe_report_settings(c), "report_cfg": c["report"]}),
}



# Each report job's manifest (lsrbench.pipeline.job_runner writes it once the job succeeded): the
# SHA-256 of every file it read and wrote, and the config snapshot it was made with. It is how a
# report that no longer matches what made it is found before anything reads it
# (lsrbench.dag.folder_state), which config a folder's reports come from, and what `lsrbench
# verify` and `lsrbench gc` trace every report to.
def manifest_path(rule: str, results: str = "results") -> str:
    """``results/manifests/<rule>.json``: the manifest of report rule ``rule``."""
    return f"{results}/{MANIFESTS}/{rule}.json"


class ReportRules:
    """The Snakemake side of :data:`REPORTS` (and of the HTML pages, :func:`html_pages`) for one
    layout: each report rule's ``output`` (its files and its manifest), ``input`` (every file it
    reads, by name: an input function, which tells ``visit`` that the rule is in the DAG being built,
    :class:`lsrbench.dag.folder_state.FolderState`) and ``params`` (its job, settings and keyed files,
    canonical)."""

    def __init__(self, layout, visit: Callable[[str], None] = lambda rule: None):
        self.layout, self.visit = layout, visit

    def outputs(self, name: str, **shown) -> dict:
        """The rule's outputs (``shown``: argument -> a function flagging that output for
        ``snakemake --report``) and its manifest."""
        results = self.layout.results
        files = {arg: f"{results}/{file}" for arg, file in _rule_outputs(name).items()}
        return {**{arg: shown[arg](path) if arg in shown else path for arg, path in files.items()},
                "manifest_json": manifest_path(name, results)}

    def input_files(self, name: str) -> dict:
        """Every file the rule reads, by name (its config snapshot among them)."""
        if name.startswith(HTML_RULE):
            page = name[len(HTML_RULE):]
            return {"markdown": f"{self.layout.results}/{page}.md", **_config(self.layout)}
        report = REPORTS[name]
        keyed = {n: [row[-1] for row in rows] for n, rows in report.keyed(self.layout).items()}
        return {**report.files(self.layout), **keyed}

    def inputs(self, name: str) -> Callable:
        """An input function (use with ``unpack``) of :meth:`input_files`."""
        def files(wildcards):
            self.visit(name)
            return self.input_files(name)
        return files

    def params(self, name: str) -> dict:
        if name.startswith(HTML_RULE):
            return {"stage": "report_html"}
        report = REPORTS[name]
        # the config is in its canonical (schema) order already (lsrbench.config.schema.canonical_order),
        # whose backbones keep the order the tables show them in: not sorted again here
        return {"stage": report.job, "settings": report.settings(self.layout.config), "keyed": report.keyed(self.layout)}

    def names(self) -> list[str]:
        """The report rules of this config's Snakefile: every report, and the HTML pages it has."""
        return [*REPORTS, *(f"{HTML_RULE}{page}" for page in html_pages(self.layout.config))]

    def shown(self, name: str) -> dict:
        return shown_outputs(name)

    def resources(self, name: str) -> dict:
        return {} if name.startswith(HTML_RULE) else REPORTS[name].resources

    def rules(self) -> list[str]:
        """Every report rule a results folder may hold (the HTML pages of every config)."""
        return all_report_rules()

    def output_files(self, name: str) -> list[str]:
        """The files of rule ``name``, its manifest last."""
        return list(self.outputs(name).values())


# The Markdown reports shown as HTML pages in `snakemake --report` (page -> report category).
HTML_PAGES = {"table1": "Tables", "table_beir": "Tables", "norms": "Head norms", "claims": "Claims",
              "probe_outcomes": "Probe"}
HTML_RULE = "html_"  # the rule of page P is html_P
# The probe's reports: before training (`lsrbench probe` makes these), and beside the trained outcomes.
PROBE_REPORTS = ("probe.md", "probe.json", "probe.png")


def all_report_rules() -> list[str]:
    """Every report rule a results folder may hold (the HTML pages of every config)."""
    return [*REPORTS, *(f"{HTML_RULE}{page}" for page in HTML_PAGES)]


def rule_files(name: str, results: str = "results") -> list[str]:
    """The files report rule ``name`` writes under ``results``, its manifest last."""
    return [f"{results}/{file}" for file in _rule_outputs(name).values()] + [manifest_path(name, results)]


def _rule_outputs(name: str) -> dict:
    """The files report rule ``name`` writes (argument -> name under the results folder)."""
    if name.startswith(HTML_RULE):
        return {"html": f"html/{name[len(HTML_RULE):]}.html"}
    return REPORTS[name].outputs


def shown_outputs(name: str) -> dict:
    """The outputs of report rule ``name`` that ``snakemake --report`` shows: argument -> (category,
    caption stem, listed under its title)."""
    if name.startswith(HTML_RULE):
        page = name[len(HTML_RULE):]
        return {"html": (HTML_PAGES[page], page, True)}
    return REPORTS[name].shown


def html_pages(config: dict) -> dict[str, str]:
    """The HTML renderings this config's report has (claims only when the config states claims,
    the probe's only when its default target runs the probe)."""
    shown = {"claims": bool(config.get("claims")), "probe_outcomes": uses_probe(config)}
    return {page: cat for page, cat in HTML_PAGES.items() if shown.get(page, True)}


def used_reports(config: dict) -> list[str]:
    """The report rules the default target runs for ``config``, in the order the reports are listed."""
    skipped = (set() if config.get("claims") else {"claims"}) | (set() if uses_probe(config) else
                                                                 {"probe_report", "probe_outcomes"})
    return [name for name in REPORTS if name not in skipped] + [f"{HTML_RULE}{page}" for page in html_pages(config)]


def report_outputs(config: dict, results: str = "results") -> list[str]:
    """Every file the default target's report rules write, their manifests included."""
    out = []
    for name in used_reports(config):
        out += rule_files(name, results)
    return out
