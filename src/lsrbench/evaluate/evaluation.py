"""The evaluate stage's work for one (run, dataset): exact retrieval, ir_measures, FLOPs and active dims, the
collapse status, as tidy rows."""

from __future__ import annotations

import math
import time

from lsrbench.errors import InputError
from lsrbench.names import COLLAPSED, DOC_DIMS, FLOPS, QUERY_DIMS

__all__ = ["load_vectors", "evaluate_vectors", "checked_rows"]


def load_vectors(docs_npz: str, queries_npz: str, dataset, data_dir: str):
    """The run's document (memory-mapped) and query vectors, checked to be exactly ``dataset``'s."""
    from lsrbench.index.sparse import load_sparse

    docs, doc_ids = load_sparse(docs_npz, mmap=True)
    if len(doc_ids) != len(dataset.corpus) or doc_ids != list(dataset.corpus):
        raise InputError(docs_npz, "ids", f"its {len(doc_ids)} documents are not the {len(dataset.corpus)} of {data_dir}")
    queries, query_ids = load_sparse(queries_npz)
    if docs.shape[1] != queries.shape[1]:
        raise InputError(queries_npz, "shape", f"vocabulary {queries.shape[1]} differs from the documents' {docs.shape[1]}")
    return docs, doc_ids, queries, query_ids


def evaluate_vectors(dataset, docs, doc_ids, queries, query_ids, *, top_k: int, measures: list[str],
                     skip_identical_ids: bool, empty_results: str = "zero") -> dict:
    """Retrieve, score and measure: ``{"results", "rows", "per_query", "search_seconds"}``; ``empty_results``
    decides what short lists count for."""
    from lsrbench.evaluate.flops import flops, mean_active_dims
    from lsrbench.evaluate.metrics import evaluate_run
    from lsrbench.evaluate.retrieval import search

    start = time.time()
    results = search(queries, query_ids, docs, doc_ids, top_k=top_k, skip_identical_ids=skip_identical_ids)
    search_s = time.time() - start
    aggregate, per_query = evaluate_run({q: dict(hits) for q, hits in results.items()}, dataset.qrels, measures,
                                        empty_results=empty_results, corpus_ids=doc_ids, depth=top_k,
                                        skip_identical_ids=skip_identical_ids)
    rows = list(aggregate.items())
    rows += [(FLOPS, flops(queries, docs)), (QUERY_DIMS, mean_active_dims(queries)), (DOC_DIMS, mean_active_dims(docs))]
    return {"results": results, "rows": rows, "per_query": per_query, "search_seconds": search_s}


def checked_rows(rows: list[tuple[str, float]], collapsed: bool, metrics_out: str) -> list[tuple[str, float]]:
    """The rows with the ``collapsed`` flag appended; a non-finite value is an error naming it."""
    rows = [*rows, (COLLAPSED, 1.0 if collapsed else 0.0)]
    for measure, value in rows:
        if not math.isfinite(value):
            raise InputError(metrics_out, measure, f"non-finite value {value}")
    return rows
