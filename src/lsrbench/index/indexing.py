"""The index stage's work for one (run, dataset): the vectors of the evaluated corpus and its queries as
``.npz`` files."""

from __future__ import annotations

import logging
from pathlib import Path

from lsrbench.hashing import sha256_texts, sha256_tree

log = logging.getLogger(__name__)

__all__ = ["index_dataset", "zero_non_finite"]


def index_dataset(model_dir: str, dataset, batch_size: int, queries_out: str, docs_out: str | None = None,
                  shard_size: int | None = None, shard_dir: str | None = None, precision: str = "fp32",
                  query_max_length: int | None = None, document_max_length: int | None = None,
                  name: str | None = None, collapse_check: dict | None = None) -> dict:
    """Encode ``dataset`` with the model in ``model_dir`` (queries only without ``docs_out``), the corpus in
    resumable shards with ``shard_size``, at the evaluation's token lengths and ``precision``, after the density
    check of a sample. Returns the shard counts, resolved precision and lengths."""
    from lsrbench.index.encode import EncodePlan, encode_texts
    from lsrbench.index.shards import discard_shards, encode_to_npz
    from lsrbench.index.sparse import save_sparse
    from lsrbench.model.encoder import default_device, encode_autocast, load_trained_encoder, set_encode_lengths
    from lsrbench.progress import Progress

    model = load_trained_encoder(model_dir, default_device())
    lengths = set_encode_lengths(model, query_max_length, document_max_length)
    autocast, precision = encode_autocast(model.device, precision)
    doc_ids, query_ids = list(dataset.corpus), list(dataset.queries)
    stats, shards = None, 0
    if docs_out:
        doc_texts = [dataset.corpus[i] for i in doc_ids]
        plan = EncodePlan(model, doc_texts, "document", batch_size)
        shards = len(plan.shards(shard_size))
        # a corpus no larger than the sample, in one shot: the sample is the corpus, checked before it is written
        whole = bool(collapse_check) and collapse_check["documents"] >= len(doc_texts) and shards <= 1
        if collapse_check and collapse_check["documents"] and not whole:
            _check_sample(model, doc_texts, batch_size, autocast, collapse_check, model_dir)
        progress = Progress(f"index {name or Path(docs_out).parent.name} documents", len(doc_texts), "docs", logger=log)
        log.info("encoding %d documents on %s (%s, %s path, batch %d, %d shard(s))", len(doc_texts), model.device,
                 precision, plan.path, batch_size, shards)
        if shards > 1:
            shard_dir = shard_dir or str(Path(docs_out).parent / "doc_shards")
            key_parts = {"model_sha256": sha256_tree(model_dir), "texts_sha256": sha256_texts(doc_ids, doc_texts),
                         "precision": precision, "lengths": lengths}
            with autocast:
                stats = encode_to_npz(plan, doc_ids, docs_out, shard_size, shard_dir, key_parts,
                                      fix=lambda m: zero_non_finite(m, docs_out), progress=progress)
        else:  # one shot
            with autocast:
                docs = plan.encode_all(progress)
            if whole:
                _check(docs, len(doc_texts), collapse_check, model_dir)
            save_sparse(docs_out, zero_non_finite(docs, docs_out), doc_ids)
            del docs
            stats = {"shards": 1, "shard_rows": len(doc_ids), "reused": 0, "encoded": 1}
        del plan
    progress = Progress(f"index {name or Path(queries_out).parent.name} queries", len(query_ids), "queries", logger=log)
    with autocast:
        queries = encode_texts(model, [dataset.queries[i] for i in query_ids], "query", batch_size, progress=progress)
    save_sparse(queries_out, zero_non_finite(queries, queries_out), query_ids)
    if shards > 1:
        discard_shards(shard_dir)
    return {"documents": stats, "precision": precision, "lengths": lengths}


def _check_sample(model, texts: list[str], batch_size: int, autocast, check: dict, model_dir: str) -> None:
    from lsrbench.index.density import sample_rows
    from lsrbench.index.encode import encode_texts

    rows = sample_rows(len(texts), check["documents"])
    with autocast:
        sample = encode_texts(model, [texts[i] for i in rows.tolist()], "document", batch_size)
    _check(sample, len(texts), check, model_dir)


def _check(sample, corpus: int, check: dict, model_dir: str) -> None:
    from lsrbench.index.density import check_density, density, density_line

    found = density(sample)
    log.info("collapse check: %s", density_line(found, corpus))
    check_density(found, corpus, check["max_active_share"], check["max_empty_share"], model_dir)


def zero_non_finite(matrix, path: str):
    """Zero the NaN/inf weights of a collapsed run's vectors (already recorded as collapsed) instead of failing
    the DAG; the count is logged."""
    import numpy as np

    bad = ~np.isfinite(matrix.data)
    if bad.any():
        log.warning("%s: %d non-finite weights set to 0 (collapsed model)", path, int(bad.sum()))
        matrix.data[bad] = 0
        matrix.eliminate_zeros()
    return matrix
