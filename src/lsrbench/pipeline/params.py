"""Rule parameters: the run grid and, for each rule, its inputs and the arguments of its stage
function, derived from the checked config through its :class:`~lsrbench.pipeline.paths.Layout`
(the Snakefile and rule files only wire these).

Every output a rule writes lives in a content-addressed folder (:mod:`lsrbench.pipeline.paths`)
whose id covers everything the rule's ``kwargs`` carry, so Snakemake's params rerun trigger never
fires on a finished output: an edit plans a new folder instead. Where a job runs and where it
reads from (mirror, cache folder, config file, a local folder's path, threads, checkpoint
cadence, shard size) goes in the ``runtime`` params, functions of ``output`` and so outside that
trigger; a local folder's bytes are in the id instead of its path.
"""

from __future__ import annotations

import os
import re

from lsrbench.names import AUTO_K, split_run_name
from lsrbench.pipeline.config import runs
from lsrbench.pipeline.paths import (RUNTIME_EVALUATION_KEYS, RUNTIME_RECIPE_KEYS, Layout, docs_dataset, load_entry,
                                     pooled_flops_datasets, results_recipe)

__all__ = ["RUNTIME_RECIPE_KEYS", "RUNTIME_EVALUATION_KEYS", "docs_dataset", "load_entry", "pooled_flops_datasets",
           "results_recipe"]  # re-exported: the rule files and tests know them from here


def job_threads(remote_exec: bool, cores: int | None) -> int:
    """Threads of a train or index job. Locally one: on 2 cores, two one-thread jobs side by side
    ran the tiny default 1.22x faster than one all-cores job at a time (310 s vs 379 s,
    benchmark/results/dag_schedule.json: each job's start-up is paid in parallel), and a job's
    numbers then do not depend on how many cores the machine has (intra-op reductions split by
    thread count change the last float digits, which training carries on). ``--set-threads
    train=N index=N`` gives more. Inside a cluster job: the cores it was given (the profile's
    resources), since there it runs alone."""
    return max(1, int(cores or 1)) if remote_exec else 1


def released_inputs(layout: Layout, w) -> dict:
    return {"norms_json": layout.norms(layout.find("train", w).fields["run"]).path("norms.json")}


def released_kwargs(layout: Layout, w) -> dict:
    """What a released run's ``model/`` depends on besides the checkpoint: the recipe's max lengths
    (used when it is a ``*ForMaskedLM`` checkpoint made into a SparseEncoder)."""
    train = layout.find("train", w)
    return {"run": train.fields["run"], "query_max_length": train.identity["query_max_length"],
            "document_max_length": train.identity["document_max_length"], "config_hash": train.sha256}


def released_runtime(layout: Layout, w, config_file: str) -> dict:
    """The checkpoint entry as written (a local folder's path) and where it is read from."""
    return {"entry": load_entry(layout.config, w.run), **where(layout.config, config_file)}


def run_grid(config: dict) -> list[dict]:
    """Every run as ``{"backbone": run name, "k": k}`` (run names carry a non-default mode)."""
    return [{"backbone": name, "k": k} for name, k in runs(config)]


def corpus_sharing_datasets(config: dict) -> list[str]:
    """Evaluated datasets that reuse another dataset's ``docs.npz`` (only their queries are encoded)."""
    return [d for d in config["evaluation"]["datasets"] if docs_dataset(config, d) != d]


def dataset_regex(names) -> str:
    """A wildcard constraint matching exactly these names (datasets, runs; none: matches nothing)."""
    return "|".join(re.escape(n) for n in names) or "(?!)"


def n_triplets(config: dict) -> int:
    """How many triplets are drawn: ``training_data.n_triplets``, else one per example of the recipe."""
    td, recipe = config["training_data"], config["recipe"]
    return td.get("n_triplets") or max(1, recipe["steps"]) * recipe["batch_size"]


def where(config: dict, config_file: str) -> dict:
    """Where jobs read from and name in errors: never part of a result."""
    return {"mirror": config["mirror"], "cache_dir": config["cache_dir"], "config_file": config_file}


# -- data ------------------------------------------------------------------------------------

def dataset_kwargs(layout: Layout, w) -> dict:
    return {"name": layout.find("data", w).fields["dataset"]}


def dataset_runtime(layout: Layout, w, config_file: str) -> dict:
    """The entry as written (a local folder's path) and where downloads go; ``datasets_file`` only names errors."""
    place = where(layout.config, config_file)
    return {"entry": layout.config["_datasets"][w.dataset], "mirror": place["mirror"],
            "cache_dir": place["cache_dir"], "datasets_file": layout.config["datasets_file"],
            "corpus_store": layout.corpus_store()}


def pool_inputs(layout: Layout, w) -> dict:
    return {"full_dir": layout.data(layout.find("pool", w).fields["dataset"]).path("full")}


def pool_kwargs(layout: Layout, w) -> dict:
    pool = layout.find("pool", w)
    dataset = pool.fields["dataset"]
    return {"name": dataset, "pool_depth": pool.identity["pool_depth"], "dataset_entry": layout.load_data(dataset)}


def triplets_inputs(layout: Layout) -> dict:
    """The triplets rule's input: the corpus folder for pseudo-queries, nothing for hf / ir_datasets."""
    td = layout.config["training_data"]
    return {"full_dir": layout.data(td["dataset"]).path("full")} if td["source"] == "pseudo_queries" else {}


def triplets_kwargs(layout: Layout) -> dict:
    return {"n": layout.triplets().identity["n"], "seed": layout.triplets().identity["seed"]}


def triplets_runtime(layout: Layout, config_file: str) -> dict:
    """The training data as written (its mirror folder name, a local repo's path)."""
    td = layout.config["training_data"]
    entry = {"dataset_entry": layout.config["_datasets"][td["dataset"]]} if td["source"] == "pseudo_queries" else {}
    return {"training_data": td, **entry, **where(layout.config, config_file)}


def norm_kwargs(layout: Layout, w) -> dict:
    return {"backbone": layout.find("norms", w).fields["backbone"]}


def norm_runtime(layout: Layout, w, config_file: str) -> dict:
    return {"entry": load_entry(layout.config, w.backbone), **where(layout.config, config_file)}


# -- train, index, evaluate -------------------------------------------------------------------

def train_inputs(layout: Layout, w) -> dict:
    """The norms a train job reads (its backbone's, plus the reference's for ``k: auto``) and the triplets."""
    train = layout.find("train", w)
    base, _ = split_run_name(train.fields["run"])
    inputs = {"norms_json": layout.norms(base).path("norms.json"), "triplets_path": layout.triplets().path("triplets.jsonl")}
    if train.fields["k"] == AUTO_K:
        inputs["reference_norms_json"] = layout.norms(layout.config["auto_k"]["reference"]).path("norms.json")
    return inputs


def train_kwargs(layout: Layout, w) -> dict:
    """What a trained model depends on besides its inputs; ``config_hash`` is its identity's SHA-256."""
    train = layout.find("train", w)
    extra = {"auto_k": train.identity["auto_k"]} if "auto_k" in train.identity else {}
    return {"run": train.fields["run"], "k": train.fields["k"], "recipe": train.identity["recipe"],
            "config_hash": train.sha256, **extra}


def train_runtime(layout: Layout, w, output, config_file: str) -> dict:
    """The backbone entry as written (a local folder's path), checkpoints and processes: they decide
    where the job reads and how it runs, not what it computes (a restarted job must find its
    checkpoints, which Snakemake's clean-up of a failed job's outputs would delete)."""
    backbone, mode = split_run_name(w.run)
    return {"entry": {**load_entry(layout.config, backbone), "mode": mode},
            "checkpoint_dir": os.path.join(os.path.dirname(output.log_path), "checkpoints"),
            "checkpoint_steps": layout.config["recipe"]["checkpoint_steps"],
            "report_to": layout.config["recipe"].get("report_to", []),
            "processes": layout.config["train_processes"], **where(layout.config, config_file)}


def index_inputs(layout: Layout, w) -> dict:
    index = layout.find("index", w)
    run, k, dataset = (index.fields[key] for key in ("run", "k", "dataset"))
    return {"model_dir": layout.train(run, k).path("model"), "data_dir": layout.eval_dir(dataset)}


def index_kwargs(layout: Layout, w) -> dict:
    index = layout.find("index", w)
    encoding = layout.encoding()
    return {"dataset_name": index.fields["dataset"], "dataset_entry": layout.load_data(index.fields["dataset"]),
            "batch_size": encoding["batch_size"],
            "precision": encoding["precision"], "query_max_length": encoding["query_max_length"],
            "document_max_length": encoding["document_max_length"]}


def index_runtime(layout: Layout, output) -> dict:
    """Shards live beside the outputs but are not outputs (a restarted job resumes from them), and
    docs.npz does not depend on the shard size."""
    return {"shard_dir": os.path.join(os.path.dirname(output.queries_out), "doc_shards"),
            "shard_size": layout.config["evaluation"]["encode_shard_size"] or 0}


def evaluate_inputs(layout: Layout, w) -> dict:
    ev = layout.find("evaluate", w)
    run, k, dataset = (ev.fields[key] for key in ("run", "k", "dataset"))
    return {"data_dir": layout.eval_dir(dataset), "docs_npz": layout.docs_npz(run, k, dataset),
            "queries_npz": layout.index(run, k, dataset).path("queries.npz"),
            "train_status": layout.train(run, k).path("status.json")}


def evaluate_kwargs(layout: Layout, w) -> dict:
    ev = layout.find("evaluate", w)
    ident, dataset = ev.identity, ev.fields["dataset"]
    return {"run": ident["run"], "k": ident["k"], "dataset_name": dataset,
            "dataset_entry": {**layout.load_data(dataset), "skip_identical_ids": ident["skip_identical_ids"]},
            "top_k": ident["top_k"], "measures": ident["measures"], "config_hash": ev.sha256,
            "collapse_max_active_share": ident["collapse_max_active_share"]}


def pooled_inputs(layout: Layout, w) -> dict:
    pooled = layout.find("pooled", w)
    run, k = pooled.fields["run"], pooled.fields["k"]
    names = pooled.identity["datasets"]
    return {"docs_npz": [layout.docs_npz(run, k, d) for d in names],
            "queries_npz": [layout.index(run, k, d).path("queries.npz") for d in names]}


def pooled_kwargs(layout: Layout, w) -> dict:
    pooled = layout.find("pooled", w)
    return {"run": pooled.fields["run"], "k": pooled.fields["k"], "datasets": pooled.identity["datasets"]}


def bm25_inputs(layout: Layout, w) -> dict:
    return {"data_dir": layout.eval_dir(layout.find("bm25", w).fields["dataset"])}


def bm25_kwargs(layout: Layout, w) -> dict:
    bm25 = layout.find("bm25", w)
    ident, dataset = bm25.identity, bm25.fields["dataset"]
    return {"dataset_name": dataset,
            "dataset_entry": {**layout.load_data(dataset), "skip_identical_ids": ident["skip_identical_ids"]},
            "top_k": ident["top_k"], "measures": ident["measures"], "settings": ident["settings"]}


def identity(layout: Layout, kind: str, w) -> dict:
    """What an addressed output's id stands for: written to its ``params.json`` by the bridge."""
    item = layout.find(kind, w)
    return {"kind": kind, "id": item.id, "sha256": item.sha256, "identity": item.identity}


# -- reports: the current config's runs -------------------------------------------------------

def metric_files(layout: Layout) -> list[str]:
    config = layout.config
    datasets = config["evaluation"]["datasets"]
    files = [layout.evaluate(r, k, d).path("metrics.tsv") for r, k in runs(config) for d in datasets]
    if pooled_flops_datasets(config):
        files += [layout.pooled(r, k).path("metrics.tsv") for r, k in runs(config)]
    if config["report"]["bm25"]:
        files += [layout.bm25(d).path("metrics.tsv") for d in datasets]
    return files


def norm_files(layout: Layout) -> list[str]:
    return [layout.norms(b).path("norms.json") for b in layout.config["backbones"]]


def log_keys(config: dict) -> list[str]:
    return [f"{r['backbone']}|{r['k']}" for r in run_grid(config)]


def log_files(layout: Layout) -> list[str]:
    return [layout.train(r, k).path("train_log.jsonl") for r, k in runs(layout.config)]


def claims_datasets(config: dict) -> list[str]:
    """Datasets whose per-query scores the claims read: the test datasets, and the tradeoff plot's
    (report.flops_datasets) for a frontier claim."""
    claims = config.get("claims") or {}
    names = list(claims.get("datasets", []))
    if any(c.get("type") == "frontier" for c in claims.get("list", [])):
        names += [d for d in config["report"].get("flops_datasets") or [] if d not in names]
    return names


def perquery_keys(config: dict) -> list[list[str]]:
    datasets = claims_datasets(config)
    return [[r["backbone"], r["k"], d] for r in run_grid(config) for d in datasets]


def perquery_files(layout: Layout) -> list[str]:
    return [layout.evaluate(b, k, d).path("perquery.tsv") for b, k, d in perquery_keys(layout.config)]


# What the reports read of a backbone entry: its label, synthetic and evaluate_only flags, and what tells a
# synthetic twin's original (Table 1's note). The rest (fetch digests, k lists) stays out of the
# report rules' params, which the HTML report prints per result.
REPORT_BACKBONE_KEYS = ("label", "synthetic", "evaluate_only", "head_scale", "model", "revision")


def report_backbones(config: dict) -> dict:
    return {name: {key: entry[key] for key in REPORT_BACKBONE_KEYS if key in entry}
            for name, entry in config["backbones"].items()}


def report_kwargs(config: dict) -> dict:
    return {"report_cfg": config["report"], "backbones": report_backbones(config)}


# The Markdown reports shown as HTML pages in `snakemake --report` (page -> report category).
HTML_PAGES = {"table1": "Tables", "table_beir": "Tables", "norms": "Head norms", "claims": "Claims"}


def html_pages(config: dict) -> dict[str, str]:
    """The HTML renderings this config's report has (claims only when the config states claims)."""
    return {page: cat for page, cat in HTML_PAGES.items() if page != "claims" or config.get("claims")}


def report_outputs(config: dict, results: str = "results") -> list[str]:
    out = [f"{results}/{name}" for name in ("table1.md", "table_beir.md", "metrics.csv", "norms.md", "norms.png",
                                             "tradeoff.png", "tradeoff.pdf", "loss_curves.png")]
    if config.get("claims"):
        out += [f"{results}/claims.md", f"{results}/claims.json"]
    return out + [f"{results}/html/{page}.html" for page in html_pages(config)]
