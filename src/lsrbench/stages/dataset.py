"""The dataset stage: a registry dataset in the canonical BEIR layout (``full/``) with its counts, in a folder
named by what its source holds, never where it is read from."""

from __future__ import annotations

import logging

from lsrbench.config.evaluated import used_datasets
from lsrbench.dag.stage import LateSetting, Stage
from lsrbench.provenance import write_json

log = logging.getLogger(__name__)

__all__ = ["STAGE", "dataset", "dataset_counts", "corpus_store"]


def _identity(layout, key: dict) -> dict:
    from lsrbench.config.entries import dataset_entry
    from lsrbench.data.sources import source_identity

    entry = dataset_entry(layout.config, key["dataset"])
    return {"dataset": entry.name, "source": source_identity(entry, layout.config.get("mirror"), layout.fingerprint),
            "split": entry.split, "unknown_docs": entry.unknown_docs, "empty_queries": entry.empty_queries}


def corpus_store(layout) -> str:
    """One copy of each distinct corpus file, hard-linked into the dataset folders."""
    return f"{layout.results}/data/.corpora"


def dataset(dataset: str, split: str, entry: dict, mirror, datasets_file: str, cache_dir: str, full_dir: str,
            info: str, corpus_store: str | None = None) -> None:
    """Bring a dataset into the canonical BEIR layout in ``full_dir`` (qrels as ``split``), its counts in
    ``info``."""
    from lsrbench.data.sources import dataset_origin, resolve_dataset
    from lsrbench.data.store import write_beir_folder

    ds = resolve_dataset(dataset, entry, mirror, datasets_file, cache_dir)
    # One hard-linked copy of each distinct corpus file in ``corpus_store``.
    write_beir_folder(ds, full_dir, split=split, corpus_store=corpus_store)
    counts = dataset_counts(dataset, ds)
    log.info("dataset %s: %d documents, %d queries, %d judgments", dataset, counts["documents"], counts["queries"],
             counts["judgments"])
    write_json(info, counts | {"split": split, "read_from": dataset_origin(dataset, entry, mirror, datasets_file)})


def dataset_counts(name: str, ds) -> dict:
    return {"name": name, "documents": len(ds.corpus), "queries": len(ds.queries),
            "dropped_queries": ds.dropped_queries, "unknown_doc_qrels": ds.unknown_doc_qrels,
            "empty_queries": ds.empty_queries, "judgments": sum(len(v) for v in ds.qrels.values())}


STAGE = Stage(
    name="dataset", kind="data", job=dataset,
    priority=4,
    grid=lambda c: [{"dataset": d} for d in used_datasets(c)],
    identity=_identity,
    late_settings=(LateSetting("empty_queries", ("datasets.schema.yaml", "*")),),
    outputs={"full_dir": "full/", "info": "info.json"},
    # the entry as written (a local folder's path) and where downloads go; datasets_file only names errors
    runtime=lambda layout, item: {"entry": layout.config["_datasets"][item.fields["dataset"]],
                                  "mirror": layout.config["mirror"], "cache_dir": layout.config["cache_dir"],
                                  "datasets_file": layout.config["datasets_file"], "corpus_store": corpus_store(layout)},
)
