"""The index stage: a trained model's vectors of one evaluated dataset's corpus and queries, at the evaluation's
token lengths, the documents in resumable shards."""

from __future__ import annotations

from lsrbench.config.evaluated import evaluated
from lsrbench.config.grid import run_keys
from lsrbench.dag.evaluated import docs_dataset, eval_data_identity, eval_dir, model_key
from lsrbench.dag.stage import Stage

__all__ = ["STAGE", "index", "index_grid", "index_identity", "index_inputs", "index_folder"]


def _encoding(config: dict) -> dict:
    ev = config["evaluation"]
    return {"batch_size": ev["encode_batch_size"], "precision": ev["encode_precision"],
            "query_max_length": ev["query_max_length"], "document_max_length": ev["document_max_length"]}


def index_grid(config: dict, shares_corpus: bool) -> list[dict]:
    """Every (model, evaluated dataset) whose corpus is another dataset's (``shares_corpus``) or its own."""
    return [{**key, "dataset": d} for key in run_keys(config) for d in evaluated(config)
            if (docs_dataset(config, d) != d) == shares_corpus]


def index_identity(layout, key: dict) -> dict:
    return {"train": layout.get("train", **model_key(key)).id, "data": eval_data_identity(layout, key["dataset"]),
            **_encoding(layout.config)}


def index_inputs(layout, item) -> dict:
    return {"model_dir": layout.get("train", **model_key(item.fields)).path("model"),
            "data_dir": eval_dir(layout, item.fields["dataset"])}


def index_folder(layout, key: dict) -> dict:
    return {**layout.get("train", **model_key(key)).fields, "dataset": key["dataset"]}


def collapse_check(config: dict) -> dict:
    """The index stage's collapse check (:mod:`lsrbench.index.density`) from the ``evaluation`` settings."""
    ev = config["evaluation"]
    return {"documents": ev["index_sample_documents"], "max_active_share": ev["index_max_active_share"],
            "max_empty_share": ev["index_max_empty_share"]}


def index(dataset: str, model_dir: str, data_dir: str, batch_size: int, precision: str, query_max_length: int,
          document_max_length: int, queries_npz: str, docs_npz: str | None = None, shard_size: int | None = None,
          shard_dir: str | None = None, collapse_check: dict | None = None) -> dict:
    """Encode the evaluated corpus and its queries at the evaluation's token lengths (queries only without
    ``docs_npz``); ``collapse_check``: the sample checked first."""
    from lsrbench.data.beir import read_written_folder
    from lsrbench.index.indexing import index_dataset

    return index_dataset(model_dir, read_written_folder(data_dir), batch_size, queries_npz, docs_npz,
                         shard_size=shard_size, shard_dir=shard_dir, precision=precision,
                         query_max_length=query_max_length, document_max_length=document_max_length, name=dataset,
                         collapse_check=collapse_check)


STAGE = Stage(
    name="index", kind="index", job=index,
    priority=2,
    model_job=True,
    grid=lambda c: index_grid(c, shares_corpus=False),
    folder_fields=index_folder,
    identity=index_identity,
    inputs=index_inputs,
    outputs={"docs_npz": "docs.npz", "queries_npz": "queries.npz"},
    # shards are no outputs (a restarted job resumes from them); neither the shard size nor the
    # collapse band changes what docs.npz holds
    runtime=lambda layout, item: {"shard_dir": item.path("doc_shards"),
                                  "shard_size": layout.config["evaluation"]["encode_shard_size"] or 0,
                                  "collapse_check": collapse_check(layout.config)},
)
