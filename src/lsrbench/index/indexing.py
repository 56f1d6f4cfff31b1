"""The index stage's work for one (run, dataset): a trained model's vectors of the evaluated
corpus and its queries, as CSR ``.npz`` files with their ids (:mod:`lsrbench.index.sparse`)."""

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
    """Encode ``dataset`` (a :class:`lsrbench.data.beir.Dataset`) with the SparseEncoder in
    ``model_dir``. Without ``docs_out`` only the queries (a dataset scored against another
    dataset's documents).

    With ``shard_size`` (documents per shard; None or 0: one shot) the corpus is encoded in
    resumable shards kept in ``shard_dir`` (default: ``doc_shards/`` beside ``docs_out``; not an
    output, so it survives a failed job): a restarted job encodes only the shards that are
    missing, and ``docs_out`` is the same file, byte for byte, as a one-shot encode's
    (:mod:`lsrbench.index.shards`). The shards are removed once both outputs are written. Queries
    are encoded in one shot. ``precision``: ``fp32``, ``bf16`` or ``auto``
    (:func:`lsrbench.model.encoder.encode_autocast`; bf16 vectors differ from fp32 ones at bf16
    rounding). ``query_max_length`` / ``document_max_length``: the evaluation's token lengths
    (:func:`lsrbench.model.encoder.set_encode_lengths`), not the training lengths saved with the
    model; None keeps those. ``name``: the dataset's name in the progress lines. ``collapse_check``
    (``documents``, ``max_active_share``, ``max_empty_share``; None: none): the sample checked before
    the rest of the corpus is encoded (:mod:`lsrbench.index.density`). Returns
    ``{"documents": {"shards", "shard_rows", "reused", "encoded"},
    "precision": <resolved>, "lengths": {"query_length", "document_length"}}``.
    """
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
    """Encode the sample of ``texts`` (:func:`lsrbench.index.density.sample_rows`) on its own and check it."""
    from lsrbench.index.density import sample_rows
    from lsrbench.index.encode import encode_texts

    rows = sample_rows(len(texts), check["documents"])
    with autocast:
        sample = encode_texts(model, [texts[i] for i in rows.tolist()], "document", batch_size)
    _check(sample, len(texts), check, model_dir)


def _check(sample, corpus: int, check: dict, model_dir: str) -> None:
    """Log the sample's density and the docs.npz it sizes; stop (one line) outside the band."""
    from lsrbench.index.density import check_density, density, density_line

    found = density(sample)
    log.info("collapse check: %s", density_line(found, corpus))
    check_density(found, corpus, check["max_active_share"], check["max_empty_share"], model_dir)


def zero_non_finite(matrix, path: str):
    """A collapsed run's model can emit NaN/inf weights; the train stage has already recorded it as
    collapsed (its status.json, read by evaluate), so those weights are zeroed rather than failing
    the DAG, and the count is logged."""
    import numpy as np

    bad = ~np.isfinite(matrix.data)
    if bad.any():
        log.warning("%s: %d non-finite weights set to 0 (collapsed model)", path, int(bad.sum()))
        matrix.data[bad] = 0
        matrix.eliminate_zeros()
    return matrix
