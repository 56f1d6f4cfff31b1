"""Every addressed stage of the DAG, declared once (:class:`lsrbench.dag.stage.Stage`): what decides
its output (its identity, hence its folder id), the inputs it reads, the outputs it writes, its
runtime-only settings and, through its name, the job function it runs
(:data:`lsrbench.pipeline.JOBS`). The rule files, the folder ids, ``params.json`` and the job's
call are all derived from these (:class:`lsrbench.dag.stage.StageRules`).

Per (backbone, k) and training seed (``recipe.seeds``: each seed its own train folder, keyed
``seed`` in the grids when there are several, :func:`lsrbench.config.grid.run_keys`), as the paper's
experiment runs: norm -> train -> index -> evaluate; before them the datasets (BEIR layout), their
pooled subsets, the training triplets and a backbone's MLM re-fit where its entry names one
(:mod:`lsrbench.dag.refit_stage`; the dataset helpers in :mod:`lsrbench.dag.dataset_parts`); beside them BM25, the FLOPs pooled over NanoBEIR and the
step-0 probe of each backbone (upstream only of ``k: probe`` and of ``k: auto`` by a logit-scale
statistic; its parts in :mod:`lsrbench.dag.probe_parts`). A new setting of a stage goes into its
identity here and into its job function's signature, nowhere else.
"""

from __future__ import annotations

from lsrbench.config.entries import dataset_entry
from lsrbench.config.grid import is_released, n_triplets, run_keys
from lsrbench.dag.dataset_parts import (docs_dataset, eval_data_identity, eval_dir, pool_depth_of,
                                        pooled_flops_datasets, used_datasets)
from lsrbench.dag.probe_parts import (k_source_identity, k_source_inputs, k_sources, probe_identity, probe_inputs,
                                      probe_runtime)
from lsrbench.dag.refit_stage import MLM_REFIT
from lsrbench.dag.stage import Stage
from lsrbench.dag.stage_parts import (LOAD_KEYS, RUNTIME_RECIPE_KEYS, job_location, load_entry, load_identity,
                                      loaded_entry, refit_of, results_recipe)
from lsrbench.model.head_match import match_of
from lsrbench.names import SEED, split_run_name

__all__ = ["STAGES", "RUNTIME_RECIPE_KEYS", "RUNTIME_EVALUATION_KEYS", "LOAD_KEYS", "load_entry", "results_recipe",
           "results_config",
           "pooled_flops_datasets", "docs_dataset", "used_datasets", "eval_dir", "docs_npz", "model_key",
           "dataset_measures", "pool_depth_of"]

# Settings that say how a job runs, not what it computes: in no identity.
RUNTIME_EVALUATION_KEYS = ("encode_shard_size",)


# ------------------------------------------------------------------------------ shared helpers

def model_key(key: dict) -> dict:
    """The key of the model (train folder) an output of ``key`` is made from: ``run``, ``k`` and,
    with several training seeds, ``seed``."""
    return {name: key[name] for name in ("run", "k", SEED) if name in key}


def docs_npz(layout, key: dict, dataset: str) -> str:
    """The docs.npz of the model of ``key`` that ``dataset`` is scored against (another dataset's
    on a shared corpus)."""
    return layout.get("index", **model_key(key), dataset=docs_dataset(layout.config, dataset)).path("docs.npz")


def dataset_measures(config: dict, dataset: str) -> list[str]:
    """The measures of a dataset: its entry's own, else ``evaluation.measures``."""
    return list(dataset_entry(config, dataset).measures or config["evaluation"]["measures"])


def _scoring(config: dict, dataset: str) -> dict:
    """The settings that decide a dataset's run file and metrics from its vectors; ``empty_results``
    only when it is not the default (``zero``), so the ids of every output made before it existed stay."""
    entry = dataset_entry(config, dataset)
    empty = {"empty_results": entry.empty_results} if entry.empty_results != "zero" else {}
    return {"top_k": config["evaluation"]["top_k"], "measures": dataset_measures(config, dataset),
            "skip_identical_ids": entry.skip_identical_ids, **empty}


def _evaluated(config: dict) -> list[str]:
    return list(config["evaluation"]["datasets"])


def _train(layout, key: dict):
    return layout.get("train", **model_key(key))


# ------------------------------------------------------------------------------ data

def _dataset_identity(layout, key: dict) -> dict:
    from lsrbench.data.sources import source_identity

    entry = dataset_entry(layout.config, key["dataset"])
    return {"dataset": entry.name, "source": source_identity(entry, layout.config.get("mirror"), layout.fingerprint),
            "split": entry.split, "unknown_docs": entry.unknown_docs,
            # empty_queries only when it drops: with the default (error) a dataset's folder is the
            # same as before the setting existed, so finished data keeps its id
            **({"empty_queries": "drop"} if entry.empty_queries == "drop" else {})}


# Snakemake's priority of each stage's jobs: among ready jobs, a stage earlier in the chain goes first
# (data, then trainings, index, evaluation; reports and the config snapshot last, at 0). On a small
# machine the last training's index then no longer runs alone on one core while the other idles
# (the tiny default: benchmark/README.md, "fixed costs"), and a job that fails leaves every report
# of the results folder as it was (no report is re-made for a config whose jobs did not all run).
PRIORITY = {"dataset": 4, "pool": 4, "triplets": 4, "norm": 4, "train": 3, "released": 3, "probe": 3,
            "index": 2, "index_queries": 2, "evaluate": 1, "pooled_flops": 1, "bm25": 1}


DATASET = Stage(
    name="dataset", kind="data",
    priority=PRIORITY["dataset"],
    grid=lambda c: [{"dataset": d} for d in used_datasets(c)],
    identity=_dataset_identity,
    outputs={"full_dir": "full/", "info": "info.json"},
    # the entry as written (a local folder's path) and where downloads go; datasets_file only names errors
    runtime=lambda layout, item: {"entry": layout.config["_datasets"][item.fields["dataset"]],
                                  "mirror": layout.config["mirror"], "cache_dir": layout.config["cache_dir"],
                                  "datasets_file": layout.config["datasets_file"], "corpus_store": _corpus_store(layout)},
)


def _corpus_store(layout) -> str:
    """One copy of each distinct corpus file, hard-linked into the dataset folders."""
    return f"{layout.results}/data/.corpora"


POOL = Stage(
    name="pool", kind="pool",
    priority=PRIORITY["pool"],
    grid=lambda c: [{"dataset": d} for d in _evaluated(c) if pool_depth_of(c, d)],
    folder_fields=lambda layout, key: {**layout.get("data", **key).fields,
                                       "pool_depth": str(pool_depth_of(layout.config, key["dataset"]))},
    identity=lambda layout, key: {"data": layout.get("data", **key).id,
                                  "pool_depth": pool_depth_of(layout.config, key["dataset"])},
    inputs=lambda layout, item: {"full_dir": layout.get("data", dataset=item.fields["dataset"]).path("full")},
    outputs={"eval_dir": "eval/", "eval_info": "eval.json"},
    runtime=lambda layout, item: {"corpus_store": _corpus_store(layout)},
)


def _triplets_identity(layout, key: dict) -> dict:
    from lsrbench.data.training_sources import TRAINING_SOURCES

    td = layout.config["training_data"]
    source = TRAINING_SOURCES[td["source"]]
    corpus = {"corpus": layout.get("data", dataset=td["dataset"]).id} if source.needs_corpus else {}
    return {"training_data": source.identity(td, layout.fingerprint), "n": n_triplets(layout.config),
            "seed": td["seed"], **corpus}


def _triplets_inputs(layout, item) -> dict:
    """The corpus folder for pseudo-queries, nothing for hf / ir_datasets."""
    td = layout.config["training_data"]
    return {"full_dir": layout.get("data", dataset=td["dataset"]).path("full")} if td["source"] == "pseudo_queries" else {}


TRIPLETS = Stage(
    name="triplets", kind="triplets",
    priority=PRIORITY["triplets"],
    grid=lambda c: [{}],
    identity=_triplets_identity,
    inputs=_triplets_inputs,
    outputs={"triplets_jsonl": "triplets.jsonl"},
    # the training data as written (its mirror folder name, a local repo's path): a mirror holds the
    # same triplets, checked against it
    runtime=lambda layout, item: {"entry": layout.config["training_data"], **job_location(layout)},
)


# ------------------------------------------------------------------------------ norm, train

def _refit_input(layout, backbone: str) -> dict:
    """The re-fit checkpoint a backbone with ``mlm_refit`` loads (every later stage reads it after this one)."""
    refit = refit_of(layout.config, backbone)
    return {"refit_model": layout.get("refit", **refit).path("model")} if refit else {}


def _match_norms(layout, backbone: str):
    """The norm output of the backbone a matched ``head_scale`` reads (lsrbench.model.head_match), else None."""
    match = match_of(layout.config["backbones"][backbone])
    return layout.get("norms", backbone=match) if match else None


def _match_identity(layout, backbone: str) -> dict:
    """The matched backbone's norm id, where the head scale is matched (nothing otherwise: ids stay)."""
    match = _match_norms(layout, backbone)
    return {"head_scale_match": match.id} if match else {}


def _match_input(layout, backbone: str) -> dict:
    """The matched backbone's norms.json: an input of the norm job that measures the ratio and of
    the train jobs that load with it (the DAG edge of the scale control)."""
    match = _match_norms(layout, backbone)
    return {"match_norms_json": match.path("norms.json")} if match else {}


NORM = Stage(
    name="norm", kind="norms",
    priority=PRIORITY["norm"],
    grid=lambda c: [{"backbone": b} for b in c["backbones"]],
    identity=lambda layout, key: {"backbone": key["backbone"], "load": load_identity(layout, key["backbone"]),
                                  **_match_identity(layout, key["backbone"])},
    inputs=lambda layout, item: _refit_input(layout, item.fields["backbone"]) | _match_input(layout, item.fields["backbone"]),
    outputs={"norms_json": "norms.json"},
    # the entry as written (a local folder's path), where errors point and downloads go
    runtime=lambda layout, item: {"entry": loaded_entry(layout, item.fields["backbone"]), **job_location(layout)},
    remade_if_changed=True,
)


def _train_identity(layout, key: dict) -> dict:
    run, k = key["run"], key["k"]
    base, mode = split_run_name(run)
    # the seed is in the recipe (recipe.seed), as it always was: another seed, another folder
    identity = {"run": run, "k": k, "load": load_identity(layout, base), "mode": mode,
                "recipe": results_recipe(layout.config, key.get(SEED)), "triplets": layout.get("triplets").id,
                "norms": layout.get("norms", backbone=base).id, **_match_identity(layout, base)}
    return identity | k_source_identity(k_sources(layout, base, k))


def _train_inputs(layout, item) -> dict:
    """Its backbone's norms and the triplets (plus what a symbolic k is read from)."""
    base, _ = split_run_name(item.fields["run"])
    inputs = {"norms_json": layout.get("norms", backbone=base).path("norms.json"),
              "triplets_jsonl": layout.get("triplets").path("triplets.jsonl"), **_match_input(layout, base)}
    return inputs | k_source_inputs(k_sources(layout, base, item.fields["k"]))


def _train_runtime(layout, item) -> dict:
    """The backbone entry as written, checkpoints and processes: where the job reads and how it
    runs, not what it computes (a restarted job must find its checkpoints, which are no outputs:
    Snakemake's clean-up of a failed job's outputs would delete them)."""
    return {"entry": loaded_entry(layout, split_run_name(item.fields["run"])[0]),
            "checkpoint_dir": item.path("checkpoints"), "checkpoint_steps": layout.config["recipe"]["checkpoint_steps"],
            "report_to": layout.config["recipe"].get("report_to", []),
            "processes": layout.config["train_processes"], **job_location(layout)}


TRAINED_OUTPUTS = {"model_dir": "model/", "train_log": "train_log.jsonl", "provenance_json": "train_provenance.json",
                   "status_json": "status.json"}

TRAIN = Stage(
    name="train", kind="train",
    priority=PRIORITY["train"],
    grid=lambda c: [key for key in run_keys(c) if not is_released(c, key["run"])],
    identity=_train_identity,
    inputs=_train_inputs,
    outputs=TRAINED_OUTPUTS,
    runtime=_train_runtime,
    log="train.log",
)


def _released_identity(layout, key: dict) -> dict:
    """A released checkpoint as it is: no triplets, no recipe but the max lengths an MLM checkpoint
    is made into a SparseEncoder with."""
    base, _ = split_run_name(key["run"])
    recipe = layout.config["recipe"]
    return {"run": key["run"], "k": key["k"], "load": load_identity(layout, base), "released": True,
            "query_max_length": recipe["query_max_length"], "document_max_length": recipe["document_max_length"],
            "norms": layout.get("norms", backbone=base).id}


# A backbone with `evaluate_only: true`: the same outputs as train, made from the released checkpoint.
RELEASED = Stage(
    name="released", kind="train",
    priority=PRIORITY["released"],
    grid=lambda c: [key for key in run_keys(c) if is_released(c, key["run"])],
    identity=_released_identity,
    inputs=lambda layout, item: {"norms_json": layout.get("norms", backbone=item.fields["run"]).path("norms.json")},
    outputs=TRAINED_OUTPUTS,
    runtime=lambda layout, item: {"entry": load_entry(layout.config, item.fields["run"]), **job_location(layout)},
    log="train.log",
)


# ------------------------------------------------------------------------------ the step-0 probe

# Every backbone at step 0, per (mode, k) its probe measures, the checkpoint loaded once (the
# norm job reads it first: its download, its tokenizer check).
PROBE = Stage(
    name="probe", kind="probe",
    priority=PRIORITY["probe"],
    grid=lambda c: [{"backbone": b} for b in c["backbones"]],
    identity=probe_identity,
    inputs=probe_inputs,
    outputs={"probe_json": "probe.json", "provenance_json": "provenance.json"},
    runtime=probe_runtime,
)


# ------------------------------------------------------------------------------ index, evaluate

def _encoding(config: dict) -> dict:
    """The index stage's settings (``evaluation`` keys that decide the vectors)."""
    ev = config["evaluation"]
    return {"batch_size": ev["encode_batch_size"], "precision": ev["encode_precision"],
            "query_max_length": ev["query_max_length"], "document_max_length": ev["document_max_length"]}


def _index_grid(config: dict, shares_corpus: bool) -> list[dict]:
    return [{**key, "dataset": d} for key in run_keys(config) for d in _evaluated(config)
            if (docs_dataset(config, d) != d) == shares_corpus]


def _index_identity(layout, key: dict) -> dict:
    return {"train": _train(layout, key).id, "data": eval_data_identity(layout, key["dataset"]), **_encoding(layout.config)}


def _index_inputs(layout, item) -> dict:
    return {"model_dir": _train(layout, item.fields).path("model"), "data_dir": eval_dir(layout, item.fields["dataset"])}


def _index_folder(layout, key: dict) -> dict:
    return {**_train(layout, key).fields, "dataset": key["dataset"]}


INDEX = Stage(
    name="index", kind="index",
    priority=PRIORITY["index"],
    grid=lambda c: _index_grid(c, shares_corpus=False),
    folder_fields=_index_folder,
    identity=_index_identity,
    inputs=_index_inputs,
    outputs={"docs_npz": "docs.npz", "queries_npz": "queries.npz"},
    # shards live beside the outputs but are no outputs (a restarted job resumes from them), and
    # docs.npz does not depend on the shard size
    runtime=lambda layout, item: {"shard_dir": item.path("doc_shards"),
                                  "shard_size": layout.config["evaluation"]["encode_shard_size"] or 0},
)

# A dataset sharing another's corpus (MS MARCO Dev and TREC DL 2019 on full collections): its
# queries only, scored against the other's docs.npz.
INDEX_QUERIES = Stage(
    name="index_queries", kind="index",
    priority=PRIORITY["index_queries"],
    grid=lambda c: _index_grid(c, shares_corpus=True),
    folder_fields=_index_folder,
    identity=_index_identity,
    inputs=_index_inputs,
    outputs={"queries_npz": "queries.npz"},
)


def _evaluate_identity(layout, key: dict) -> dict:
    queries = layout.get("index", **key)
    docs = layout.get("index", **model_key(key), dataset=docs_dataset(layout.config, key["dataset"]))
    return {"run": key["run"], "k": key["k"], "dataset": key["dataset"], "train": queries.fields["train_id"],
            "docs": docs.id, "queries": queries.id, **_scoring(layout.config, key["dataset"]),
            "collapse_max_active_share": layout.config["evaluation"]["collapse_max_active_share"]}


def _evaluate_inputs(layout, item) -> dict:
    model, dataset = model_key(item.fields), item.fields["dataset"]
    return {"data_dir": eval_dir(layout, dataset), "docs_npz": docs_npz(layout, model, dataset),
            "queries_npz": layout.get("index", **model, dataset=dataset).path("queries.npz"),
            "train_status": layout.get("train", **model).path("status.json")}


EVALUATE = Stage(
    name="evaluate", kind="evaluate",
    priority=PRIORITY["evaluate"],
    grid=lambda c: [{**key, "dataset": d} for key in run_keys(c) for d in _evaluated(c)],
    folder_fields=lambda layout, key: dict(layout.get("index", **key).fields),
    identity=_evaluate_identity,
    inputs=_evaluate_inputs,
    outputs={"run_trec": "run.trec", "metrics_tsv": "metrics.tsv", "perquery_tsv": "perquery.tsv",
             "status_json": "status.json", "provenance_json": "provenance.json"},
    remade_if_changed=True,
)


def _pooled_identity(layout, key: dict) -> dict:
    names = pooled_flops_datasets(layout.config)
    model = model_key(key)
    return {"run": key["run"], "k": key["k"], "datasets": names,
            "docs": [layout.get("index", **model, dataset=docs_dataset(layout.config, d)).id for d in names],
            "queries": [layout.get("index", **model, dataset=d).id for d in names]}


def _pooled_inputs(layout, item) -> dict:
    model = model_key(item.fields)
    names = item.identity["datasets"]
    return {"docs_npz": [docs_npz(layout, model, d) for d in names],
            "queries_npz": [layout.get("index", **model, dataset=d).path("queries.npz") for d in names]}


# FLOPs and active dims pooled over report.flops_datasets (NanoBEIR) as sentence-transformers'
# SparseNanoBEIREvaluator pools them; only when it names several datasets.
POOLED_FLOPS = Stage(
    name="pooled_flops", kind="pooled",
    priority=PRIORITY["pooled_flops"],
    grid=lambda c: run_keys(c) if pooled_flops_datasets(c) else [],
    folder_fields=lambda layout, key: dict(_train(layout, key).fields),
    identity=_pooled_identity,
    inputs=_pooled_inputs,
    outputs={"metrics_tsv": "metrics.tsv", "provenance_json": "provenance.json"},
    remade_if_changed=True,
)

BM25 = Stage(
    name="bm25", kind="bm25",
    priority=PRIORITY["bm25"],
    grid=lambda c: [{"dataset": d} for d in _evaluated(c)] if c["report"]["bm25"] else [],
    identity=lambda layout, key: {"dataset": key["dataset"], "data": eval_data_identity(layout, key["dataset"]),
                                  **_scoring(layout.config, key["dataset"]),
                                  "settings": layout.config["report"]["bm25_settings"]},
    inputs=lambda layout, item: {"data_dir": eval_dir(layout, item.fields["dataset"])},
    outputs={"run_trec": "run.trec", "metrics_tsv": "metrics.tsv", "perquery_tsv": "perquery.tsv",
             "provenance_json": "provenance.json"},
    remade_if_changed=True,
)


# ------------------------------------------------------------------------------ the config itself

# Top-level keys that say where things are read from or how jobs run: in no result.
RUNTIME_CONFIG_KEYS = ("mirror", "cache_dir", "datasets_file", "use_gpu", "train_processes")


def results_config(config: dict) -> dict:
    """The config as it decides results (every report's settings among them): its runtime-only
    settings left out, the dataset registry reduced to the entries it uses."""
    out = {k: v for k, v in config.items() if k not in RUNTIME_CONFIG_KEYS and not k.startswith("_")}
    out["recipe"] = results_recipe(config)
    out["training_data"] = {k: v for k, v in config["training_data"].items() if k != "name"}  # a mirror folder name
    out["evaluation"] = {k: v for k, v in config["evaluation"].items() if k not in RUNTIME_EVALUATION_KEYS}
    out["datasets"] = {name: config["_datasets"][name] for name in used_datasets(config)}
    return out


# The config every report of the results folder was made with, in its canonical form: an input
# of every report rule, so that a settings change re-runs the reports (and only that: a config
# whose keys are merely written in another order is the same folder), and the folder every
# report names as its config (results/configs/<id>/config.yaml).
CONFIG = Stage(
    name="config_snapshot", kind="configs",
    grid=lambda c: [{}],
    # the backbones' order too: it is the tables' row order, which no hash of a mapping keeps
    identity=lambda layout, key: {"config": results_config(layout.config), "files": layout.config_files,
                                  "backbone_order": list(layout.config["backbones"])},
    outputs={"config_yaml": "config.yaml"},
    remade_if_changed=True,
)

# The registry: one line per stage (the Layout builds outputs in this order).
STAGES = (MLM_REFIT, NORM, TRIPLETS, DATASET, POOL, PROBE, TRAIN, RELEASED, INDEX, INDEX_QUERIES, EVALUATE, POOLED_FLOPS, BM25,
          CONFIG)
