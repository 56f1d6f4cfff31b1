"""Which documents an evaluated dataset is scored against, and where the evaluated data and a
model's vectors of one config are, as the addressed outputs of a
:class:`~lsrbench.dag.layout.Layout` (the stages and the report rules read them the same way)."""

from __future__ import annotations

from lsrbench.config.evaluated import pool_depth_of
from lsrbench.names import SEED

__all__ = ["docs_dataset", "model_key", "docs_npz", "eval_dir", "eval_data_identity", "eval_info",
           "corpus_sharing_datasets"]


def docs_dataset(config: dict, dataset: str) -> str:
    """The evaluated dataset whose ``docs.npz`` ``dataset`` is scored against: the first of
    ``evaluation.datasets`` with the same corpus (:func:`lsrbench.data.sources.corpus_key`) when
    full collections are evaluated, so MS MARCO's 8.8M passages are encoded once per run for MS
    MARCO Dev and TREC DL 2019; itself when each dataset is pooled (its own subset of documents)."""
    if pool_depth_of(config) or dataset not in config["_datasets"]:
        return dataset
    from lsrbench.data.sources import first_with_corpus

    return first_with_corpus(config["_datasets"], config["evaluation"]["datasets"], dataset)


def corpus_sharing_datasets(config: dict) -> list[str]:
    """Evaluated datasets that reuse another dataset's ``docs.npz`` (only their queries are encoded)."""
    return [d for d in config["evaluation"]["datasets"] if docs_dataset(config, d) != d]


def model_key(key: dict) -> dict:
    """The key of the model (train folder) an output of ``key`` is made from: ``run``, ``k`` and,
    with several training seeds, ``seed``."""
    return {name: key[name] for name in ("run", "k", SEED) if name in key}


def docs_npz(layout, key: dict, dataset: str) -> str:
    """The docs.npz of the model of ``key`` that ``dataset`` is scored against (another dataset's
    on a shared corpus)."""
    return layout.get("index", **model_key(key), dataset=docs_dataset(layout.config, dataset)).path("docs.npz")


def _evaluated_folder(layout, dataset: str):
    if pool_depth_of(layout.config, dataset):
        return layout.get("pool", dataset=dataset)
    return layout.get("data", dataset=dataset)


def eval_dir(layout, dataset: str) -> str:
    """The BEIR folder a dataset is indexed and evaluated on: pooled, or the full one."""
    folder = _evaluated_folder(layout, dataset)
    return folder.path("eval" if folder.kind == "pool" else "full")


def eval_info(layout, dataset: str) -> str:
    """The record of the evaluated data's size: the pool's eval.json, the dataset's info.json."""
    folder = _evaluated_folder(layout, dataset)
    return folder.path("eval.json" if folder.kind == "pool" else "info.json")


def eval_data_identity(layout, dataset: str) -> str:
    """The identity of the evaluated data: ``<data id>`` or, pooled, ``<data id>/<pool folder>``."""
    folder = _evaluated_folder(layout, dataset)
    data = layout.get("data", dataset=dataset)
    return data.id if folder.kind == "data" else f"{data.id}/{folder.id}"
