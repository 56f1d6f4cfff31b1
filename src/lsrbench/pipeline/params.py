"""Rule parameters: the run grid and, for each rule, its inputs and the parameters its outputs
depend on, derived from the checked config (the Snakefile and rule files only wire these).

Each rule's params carry exactly the config values its outputs depend on, so Snakemake's params
rerun trigger re-runs only the affected jobs when a value changes; where a job runs (mirror,
cache folder, threads, checkpoint cadence, shard size) goes in a rule's ``runtime`` params, which
are functions of ``output`` and so outside that trigger.
"""

from __future__ import annotations

import re

from lsrbench.hashing import stable_hash
from lsrbench.names import AUTO_K, POOLED, RUN_PATTERN, split_run_name
from lsrbench.pipeline.config import runs

# Settings that say how a job runs, not what it computes: left out of every rule's params.
RUNTIME_RECIPE_KEYS = ("checkpoint_steps",)
RUNTIME_EVALUATION_KEYS = ("encode_shard_size",)


def results_config(config: dict) -> dict:
    """The config as it determines results: ``recipe.checkpoint_steps`` only says how often training
    saves a resumable checkpoint and ``evaluation.encode_shard_size`` how the index stage cuts its
    work (the same docs.npz either way), so they are left out of the params (and their rerun trigger)."""
    recipe = {key: value for key, value in config["recipe"].items() if key not in RUNTIME_RECIPE_KEYS}
    evaluation = {key: value for key, value in config["evaluation"].items() if key not in RUNTIME_EVALUATION_KEYS}
    return {**config, "recipe": recipe, "evaluation": evaluation}


def released_runs(config: dict) -> list[str]:
    """The runs of ``evaluate_only`` backbones (released sparse encoders): their ``model/`` comes
    from the checkpoint as released (rule ``released``), not from training."""
    return [name for name, entry in config["backbones"].items() if entry.get("evaluate_only")]


def trained_run_regex(config: dict) -> str:
    """The train rule's ``run`` constraint: every run name except the released ones (a lookahead on
    the name and the ``/`` after it, so ``x`` is excluded but not ``x2`` or ``x+untie``)."""
    released = released_runs(config)
    return f"(?!(?:{dataset_regex(released)})/){RUN_PATTERN}" if released else RUN_PATTERN


def released_kwargs(config: dict, run: str) -> dict:
    """What a released run's ``model/`` depends on: the checkpoint and the recipe's max lengths (used
    when it is a ``*ForMaskedLM`` checkpoint made into a SparseEncoder)."""
    entry, recipe = load_entry(config, run), config["recipe"]
    lengths = {key: recipe[key] for key in ("query_max_length", "document_max_length")}
    return {"run": run, "entry": entry, **lengths, "config_hash": stable_hash({"entry": entry, "released": True, **lengths})}


def run_grid(config: dict) -> list[dict]:
    """Every run as ``{"backbone": run name, "k": k}`` (run names carry a non-default mode)."""
    return [{"backbone": name, "k": k} for name, k in runs(config)]


def train_inputs(config: dict, run: str, k: str) -> dict:
    """The norms a train job reads: its backbone's, plus the reference's when ``k`` is ``auto``."""
    base, _ = split_run_name(run)
    inputs = {"norms_json": f"results/norms/{base}.json"}
    if k == AUTO_K:
        inputs["reference_norms_json"] = f"results/norms/{config['auto_k']['reference']}.json"
    return inputs


def docs_dataset(config: dict, dataset: str) -> str:
    """The evaluated dataset whose ``docs.npz`` ``dataset`` is scored against: the first of
    ``evaluation.datasets`` with the same corpus (:func:`lsrbench.data.corpus_key`) when full
    collections are evaluated (``pool_depth: null``), so MS MARCO's 8.8M passages are encoded
    once per run for MS MARCO Dev and TREC DL 2019; itself when each dataset is pooled (its own
    subset of documents)."""
    if config["evaluation"]["pool_depth"]:
        return dataset
    if "_docs_dataset" not in config:
        from lsrbench.data.sources import corpus_key

        first: dict = {}
        for name in config["evaluation"]["datasets"]:
            first.setdefault(corpus_key(config["_datasets"][name]), name)
        config["_docs_dataset"] = {name: first[corpus_key(config["_datasets"][name])]
                                   for name in config["evaluation"]["datasets"]}
    return config["_docs_dataset"].get(dataset, dataset)


def docs_npz(config: dict, run: str, k: str, dataset: str) -> str:
    return f"results/runs/{run}/k{k}/{docs_dataset(config, dataset)}/docs.npz"


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


# The backbone keys that decide what is loaded (labels, k lists and modes do not change a result).
LOAD_KEYS = ("model", "revision", "trust_remote_code", "head_scale", "fetch")


def load_entry(config: dict, backbone: str) -> dict:
    entry = config["backbones"][backbone]
    return {k: entry[k] for k in LOAD_KEYS if k in entry}


def norm_kwargs(config: dict, backbone: str) -> dict:
    return {"backbone": backbone, "entry": load_entry(config, backbone)}


def dataset_kwargs(config: dict, name: str) -> dict:
    pool = config["evaluation"]["pool_depth"] if name in config["evaluation"]["datasets"] else None
    return {"name": name, "entry": config["_datasets"][name], "mirror": config.get("mirror"),
            "datasets_file": config["datasets_file"], "cache_dir": config["cache_dir"],
            "pool_depth": pool}


def triplets_inputs(config: dict) -> dict:
    """The triplets rule's input: the corpus folder for pseudo-queries, nothing for hf / ir_datasets."""
    td = config["training_data"]
    return {"full_dir": f"results/data/{td['dataset']}/full"} if td["source"] == "pseudo_queries" else {}


def triplets_kwargs(config: dict) -> dict:
    """What the triplets depend on (mirror, cache and config file go in the rule's runtime params)."""
    td = config["training_data"]
    kwargs = {"training_data": td, "n": n_triplets(config), "seed": td["seed"]}
    if td["source"] == "pseudo_queries":
        kwargs["dataset_entry"] = config["_datasets"][td["dataset"]]
    return kwargs


def train_kwargs(config: dict, run: str, k: str) -> dict:
    """What a trained model depends on (``config`` as :func:`results_config` gives it)."""
    backbone, mode = split_run_name(run)
    entry, recipe = {**load_entry(config, backbone), "mode": mode}, config["recipe"]
    extra = {"auto_k": config["auto_k"]} if k == AUTO_K else {}
    return {"run": run, "entry": entry, "k": k, "recipe": recipe, **extra,
            "config_hash": stable_hash({"entry": entry, "recipe": recipe, "k": k, **extra,
                                        "training_data": config["training_data"]})}


def index_kwargs(config: dict, dataset: str) -> dict:
    ev = config["evaluation"]
    return {"dataset_entry": config["_datasets"][dataset], "batch_size": ev["encode_batch_size"],
            "precision": ev["encode_precision"], "query_max_length": ev["query_max_length"],
            "document_max_length": ev["document_max_length"]}


def evaluate_kwargs(config: dict, run: str, k: str, dataset: str) -> dict:
    ev = config["evaluation"]
    entry = config["_datasets"][dataset]
    backbone, mode = split_run_name(run)
    return {"run": run, "k": k, "dataset_name": dataset, "dataset_entry": entry,
            "top_k": ev["top_k"], "measures": ev["measures"],
            "config_hash": stable_hash({"entry": load_entry(config, backbone), "mode": mode,
                                        "recipe": config["recipe"], "k": k,
                                        "training_data": config["training_data"], "dataset": entry,
                                        "evaluation": ev})}


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


def pooled_flops_datasets(config: dict) -> list[str]:
    """The datasets whose FLOPs are pooled per run: report.flops_datasets when it names several
    (one dataset's pooled FLOPs are its own, so then there is nothing to pool)."""
    names = list(config["report"].get("flops_datasets") or [])
    return names if len(names) > 1 else []


def pooled_inputs(config: dict, run: str, k: str) -> dict:
    names = pooled_flops_datasets(config)
    return {"docs_npz": [docs_npz(config, run, k, d) for d in names],
            "queries_npz": [f"results/runs/{run}/k{k}/{d}/queries.npz" for d in names]}


def metric_files(config: dict) -> list[str]:
    runs_ = [f"results/runs/{r['backbone']}/k{r['k']}/{d}/metrics.tsv" for r in run_grid(config) for d in config["evaluation"]["datasets"]]
    if pooled_flops_datasets(config):
        runs_ += [f"results/runs/{r['backbone']}/k{r['k']}/{POOLED}/metrics.tsv" for r in run_grid(config)]
    if config["report"]["bm25"]:
        runs_ += [f"results/bm25/{d}/metrics.tsv" for d in config["evaluation"]["datasets"]]
    return runs_


def norm_files(config: dict) -> list[str]:
    return [f"results/norms/{b}.json" for b in config["backbones"]]


def log_keys(config: dict) -> list[str]:
    return [f"{r['backbone']}|{r['k']}" for r in run_grid(config)]


def log_files(config: dict) -> list[str]:
    return [f"results/runs/{r['backbone']}/k{r['k']}/train_log.jsonl" for r in run_grid(config)]


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


def perquery_files(config: dict) -> list[str]:
    return [f"results/runs/{b}/k{k}/{d}/perquery.tsv" for b, k, d in perquery_keys(config)]


def report_outputs(config: dict) -> list[str]:
    out = ["results/table1.md", "results/table_beir.md", "results/metrics.csv", "results/norms.md",
           "results/norms.png", "results/tradeoff.png", "results/tradeoff.pdf", "results/loss_curves.png"]
    if config.get("claims"):
        out += ["results/claims.md", "results/claims.json"]
    return out + [f"results/html/{page}.html" for page in html_pages(config)]


def bm25_kwargs(config: dict, dataset: str) -> dict:
    ev = config["evaluation"]
    return {"dataset_name": dataset, "dataset_entry": config["_datasets"][dataset], "top_k": ev["top_k"],
            "measures": ev["measures"], "settings": config["report"]["bm25_settings"]}
