"""The pool stage: the evaluated subset with ``evaluation.pool_depth`` (judged documents plus each query's BM25
top), in its own ``pool<depth>`` folder."""

from __future__ import annotations

import logging

from lsrbench.config.evaluated import evaluated, pool_depth_of
from lsrbench.dag.stage import Stage
from lsrbench.provenance import write_json
from lsrbench.stages.dataset import corpus_store, dataset_counts

log = logging.getLogger(__name__)

__all__ = ["STAGE", "pool"]


def pool(dataset: str, full_dir: str, pool_depth: int, eval_dir: str, eval_info: str,
         corpus_store: str | None = None) -> None:
    """The evaluated subset of a dataset (every judged document plus each query's top ``pool_depth`` BM25
    candidates) in BEIR layout."""
    from lsrbench.data.beir import read_written_folder, written_split
    from lsrbench.data.bm25 import pooled_subset
    from lsrbench.data.store import write_beir_folder

    ds = read_written_folder(full_dir)
    evaluated = pooled_subset(ds, pool_depth)
    write_beir_folder(evaluated, eval_dir, split=written_split(full_dir), corpus_store=corpus_store)
    counts = dataset_counts(dataset, evaluated)
    log.info("pool %s: %d documents (%d in the full corpus, depth %d), %d queries, %d judgments", dataset,
             counts["documents"], len(ds.corpus), pool_depth, counts["queries"], counts["judgments"])
    write_json(eval_info, counts | {"pool_depth": pool_depth, "full_documents": len(ds.corpus)})


STAGE = Stage(
    name="pool", kind="pool", job=pool,
    priority=4,
    grid=lambda c: [{"dataset": d} for d in evaluated(c) if pool_depth_of(c, d)],
    identity=lambda layout, key: {"data": layout.get("data", **key).id,
                                  "pool_depth": pool_depth_of(layout.config, key["dataset"])},
    # inside the dataset's folder, named by its depth, not by a hash
    folder_fields=lambda layout, key: layout.get("data", **key).fields,
    inputs=lambda layout, item: {"full_dir": layout.get("data", dataset=item.fields["dataset"]).path("full")},
    outputs={"eval_dir": "eval/", "eval_info": "eval.json"},
    runtime=lambda layout, item: {"corpus_store": corpus_store(layout)},
)
