"""The index stage's encode into CSR vectors: the fast path (:mod:`lsrbench.index.fast_splade`) or
sentence-transformers' own, the same vectors. A vector depends by rounding on its batch, so :class:`EncodePlan`
fixes the one-shot call's batches and shards are runs of whole batches: bit for bit the one-shot result."""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from lsrbench.index.fast_splade import FastSplade

log = logging.getLogger(__name__)

__all__ = ["EncodePlan", "encode_texts", "fast_path_available", "torch_sparse_to_csr"]

def torch_sparse_to_csr(tensor, n_cols: int) -> sp.csr_matrix:
    """A torch sparse COO (or dense) [rows, vocab] tensor as a float32 scipy CSR without a dense copy."""
    if tensor.is_sparse:
        t = tensor.coalesce().cpu()
        rows, cols = t.indices().numpy()
        vals = t.values().float().numpy()
        keep = vals != 0
        m = sp.csr_matrix((vals[keep], (rows[keep], cols[keep])), shape=(t.shape[0], n_cols), dtype=np.float32)
    else:
        m = sp.csr_matrix(tensor.detach().float().cpu().numpy())
    m.sum_duplicates()
    m.sort_indices()
    return m


def encode_texts(model, texts: list[str], kind: str, batch_size: int = 32, chunk: int = 4096,
                 progress=None) -> sp.csr_matrix:
    """Encode ``texts`` as queries or documents to a float32 CSR in input order, equal to ``encode_query`` /
    ``encode_document``."""
    return EncodePlan(model, texts, kind, batch_size, chunk).encode_all(progress)


class EncodePlan:
    """How :func:`encode_texts` encodes ``texts``: the path, the row ``order`` and the ``unit`` no batch
    boundary splits; any unit-aligned run of ``order`` encodes exactly as the one-shot call."""

    def __init__(self, model, texts, kind: str, batch_size: int = 32, chunk: int = 4096):
        if kind not in ("query", "document"):
            raise ValueError(f"encode_texts: kind must be 'query' or 'document', got {kind!r}")
        if batch_size <= 0:
            raise ValueError(f"encode_texts: batch_size must be positive, got {batch_size}")
        self.model, self.kind, self.batch_size, self.chunk = model, kind, batch_size, chunk
        self.texts = list(texts)
        self._fast = FastSplade.build(model, kind, batch_size)
        n = len(self.texts)
        if self._fast is not None:
            self.path, self.unit, self.vocab = "fast", batch_size, self._fast.vocab
            # sentence-transformers' order over the whole corpus, so the batches are those of one call.
            self.order = np.argsort([-model._input_length(s) for s in self.texts]).astype(np.int64, copy=False)
        else:
            # consecutive chunks of ``chunk`` texts, as sentence-transformers is called: whole chunks reproduce them.
            self.path, self.unit, self.vocab = "plain", chunk, None
            self.order = np.arange(n, dtype=np.int64)

    def shard_rows(self, shard_size: int | None) -> int:
        """Rows per shard: ``shard_size`` rounded down to whole units (at least one); the whole corpus for None
        or 0."""
        n = len(self.texts)
        if not shard_size or shard_size <= 0:
            return max(1, n)
        return max(self.unit, int(shard_size) // self.unit * self.unit)

    def shards(self, shard_size: int | None) -> list[np.ndarray]:
        """``order`` cut into runs of :meth:`shard_rows` rows (the last one shorter)."""
        size = self.shard_rows(shard_size)
        return [self.order[lo : lo + size] for lo in range(0, len(self.texts), size)]

    def encode_all(self, progress=None) -> sp.csr_matrix:
        """Every text, rows in input order: what :func:`encode_texts` returns (``progress``: see :meth:`encode`)."""
        part = self.encode(self.order, progress)
        if self.path == "plain":  # the order is the input order
            return part
        indptr = np.zeros(len(self.texts) + 1, dtype=np.int64)
        indptr[1:][self.order] = np.diff(part.indptr)
        np.cumsum(indptr, out=indptr)
        indices = np.empty(part.nnz, dtype=np.int32)
        data = np.empty(part.nnz, dtype=np.float32)
        from lsrbench.index.sparse import scatter_rows

        scatter_rows(indptr, indices, data, self.order, part)
        return sp.csr_matrix((data, indices, indptr), shape=part.shape)

    def encode(self, rows, progress=None) -> sp.csr_matrix:
        """Float32 CSR of ``texts[rows]`` for a unit-aligned run ``rows``; ``progress`` advances per batch or
        chunk."""
        rows = np.asarray(rows, dtype=np.int64)
        subset = [self.texts[i] for i in rows.tolist()]
        if self._fast is not None:
            return self._fast.encode(subset, progress)
        return _encode_plain(self.model, subset, self.kind, self.batch_size, self.chunk, progress)


def fast_path_available(model, kind: str = "document") -> bool:
    """Whether :func:`encode_texts` takes the fast path for ``model`` (runs the probe check)."""
    return FastSplade.build(model, kind, 8) is not None


def _encode_plain(model, texts: list[str], kind: str, batch_size: int, chunk: int, progress=None) -> sp.csr_matrix:
    import torch

    encode = model.encode_query if kind == "query" else model.encode_document
    # The width from the encoded tensors: before a first forward a SparseEncoder reports the hidden size.
    parts = []
    with torch.inference_mode():
        for start in range(0, len(texts), chunk):
            emb = encode(texts[start : start + chunk], batch_size=batch_size, convert_to_tensor=True, show_progress_bar=False)
            parts.append(torch_sparse_to_csr(emb, emb.shape[1]))
            if progress is not None:
                progress.advance(emb.shape[0])
    if not parts:
        return sp.csr_matrix((0, _vocab_size(model)), dtype=np.float32)
    return sp.vstack(parts, format="csr")


def _vocab_size(model) -> int:
    return int(model[0].auto_model.config.vocab_size)
