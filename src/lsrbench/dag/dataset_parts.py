"""Which datasets a config reads, and where (and as what) an evaluated one is: the parts of the
stage declarations (:mod:`lsrbench.dag.declarations`, :mod:`lsrbench.dag.refit_stage`) that say it,
in a module of their own so that every declaration module shares them."""

from __future__ import annotations


__all__ = ["pooled_flops_datasets", "used_datasets", "docs_dataset", "pool_depth_of", "eval_dir",
           "eval_data_identity"]


def pooled_flops_datasets(config: dict) -> list[str]:
    """The datasets whose FLOPs are pooled per run: report.flops_datasets when it names several
    (one dataset's pooled FLOPs are its own, so then there is nothing to pool)."""
    names = list(config["report"].get("flops_datasets") or [])
    return names if len(names) > 1 else []


def used_datasets(config: dict) -> list[str]:
    """Every dataset the run reads: the evaluated ones, the pseudo-queries' corpus, the MLM re-fits' texts."""
    td = config["training_data"]
    extra = [td["dataset"]] if td["source"] == "pseudo_queries" else []
    extra += [e["mlm_refit"]["dataset"] for e in config["backbones"].values() if e.get("mlm_refit")]
    return list(dict.fromkeys(list(config["evaluation"]["datasets"]) + extra))


def docs_dataset(config: dict, dataset: str) -> str:
    """The evaluated dataset whose ``docs.npz`` ``dataset`` is scored against: the first of
    ``evaluation.datasets`` with the same corpus (:func:`lsrbench.data.sources.corpus_key`) when
    full collections are evaluated (``pool_depth: null``), so MS MARCO's 8.8M passages are encoded
    once per run for MS MARCO Dev and TREC DL 2019; itself when each dataset is pooled (its own
    subset of documents)."""
    if config["evaluation"]["pool_depth"] or dataset not in config["_datasets"]:
        return dataset
    from lsrbench.data.sources import first_with_corpus

    return first_with_corpus(config["_datasets"], config["evaluation"]["datasets"], dataset)


def pool_depth_of(config: dict, dataset: str):
    """The pool depth of an evaluated dataset (None: the full collection, or not evaluated)."""
    return config["evaluation"]["pool_depth"] if dataset in config["evaluation"]["datasets"] else None


def eval_dir(layout, dataset: str) -> str:
    """The BEIR folder a dataset is indexed and evaluated on: pooled, or the full one."""
    if pool_depth_of(layout.config, dataset):
        return layout.get("pool", dataset=dataset).path("eval")
    return layout.get("data", dataset=dataset).path("full")


def eval_data_identity(layout, dataset: str) -> str:
    """The identity of the evaluated data: ``<data id>`` or ``<data id>/pool<depth>``."""
    data = layout.get("data", dataset=dataset)
    depth = pool_depth_of(layout.config, dataset)
    return f"{data.id}/pool{depth}" if depth else data.id
