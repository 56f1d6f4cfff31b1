"""The index stage: encode a corpus and its queries into sparse vectors (CSR) with a SparseEncoder.

Two paths give the same vectors:

* the **fast path** (used whenever the model is recognised): sentence-transformers' own
  tokenisation (same prompts, same query/document max lengths, same length-sorted batches),
  the backbone run to the *input of the MLM decoder* (captured generically, for any
  ``*ForMaskedLM`` family, by temporarily replacing ``get_output_embeddings().forward``), then the
  decoder applied in vocabulary chunks with padding masked and the max over tokens taken
  *before* the monotone ``log1p(relu(.))``. The full ``[batch, tokens, vocab]`` logits are never
  materialised and ``log1p`` runs on ``[batch, vocab]`` only. The CSR is built from the non-zeros
  of each pooled batch, without a dense round trip of the whole corpus.
* the **plain path**: ``SparseEncoder.encode_query`` / ``encode_document`` chunk by chunk.

The fast path is taken only for a SparseEncoder made of exactly a fill-mask ``Transformer`` and
``SpladePooling('max', 'relu')`` whose decoder is a linear map and nothing follows it: every
call first runs a small probe through both paths and falls back (with a warning) if the decoder
input cannot be captured or the probe vectors disagree.

**Shards.** A document's vector depends (by float rounding, ~1e-6) on the batch it is encoded
in: its padded length changes the shapes of the backbone's matrix products. So a corpus is not
cut into contiguous slices encoded one by one (that would give other numbers than one call);
:class:`EncodePlan` fixes the one-shot call's batches (the whole corpus's length order, cut into
``batch_size`` batches; on the plain path, consecutive chunks of ``chunk`` texts) and a shard is
a run of whole batches of it. Shards encoded separately, in any process and order, and placed
back by row give exactly (bit for bit) what :func:`encode_texts` gives in one call.
"""

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
    """Encode ``texts`` as queries (``kind='query'``) or documents to a float32 CSR (rows in input order).

    Equals ``model.encode_query`` / ``model.encode_document`` (same non-zero set, weights within
    1e-4, in practice equal to float32 rounding on CPU). ``chunk`` bounds how many texts the plain path hands
    to sentence-transformers at once; the fast path sorts all texts by length at once, as
    sentence-transformers does within one call.
    """
    return EncodePlan(model, texts, kind, batch_size, chunk).encode_all(progress)


class EncodePlan:
    """How :func:`encode_texts` encodes ``texts``: the fast or the plain path (checked once, with
    the probe), the order rows are encoded in, and the unit whose boundaries never split a batch.

    ``order`` lists every row once; :meth:`encode` of any run ``order[a:b]`` with ``a`` a multiple
    of ``unit`` gives those rows' vectors exactly as the one-shot call does (same batches).
    :meth:`shards` cuts ``order`` into such runs.
    """

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
            # The order sentence-transformers uses (``SparseEncoder._inference``) over the whole
            # corpus, so the batches, and hence the backbone's inputs, are those of one call.
            self.order = np.argsort([-model._input_length(s) for s in self.texts]).astype(np.int64, copy=False)
        else:
            # sentence-transformers is called on consecutive chunks of ``chunk`` texts (each sorted
            # by length inside the call): a run of whole chunks reproduces them.
            self.path, self.unit, self.vocab = "plain", chunk, None
            self.order = np.arange(n, dtype=np.int64)

    def shard_rows(self, shard_size: int | None) -> int:
        """Rows per shard: ``shard_size`` rounded down to a multiple of :attr:`unit` (at least one
        unit); the whole corpus for ``None`` or 0."""
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
        """Float32 CSR whose row ``j`` is the vector of ``texts[rows[j]]`` (``rows``: a unit-aligned run
        of ``order``). ``progress`` (a :class:`lsrbench.progress.Progress`) advances by the texts of
        each batch (fast path) or chunk (plain path) as they are encoded."""
        rows = np.asarray(rows, dtype=np.int64)
        subset = [self.texts[i] for i in rows.tolist()]
        if self._fast is not None:
            return self._fast.encode(subset, progress)
        return _encode_plain(self.model, subset, self.kind, self.batch_size, self.chunk, progress)


def fast_path_available(model, kind: str = "document") -> bool:
    """Whether :func:`encode_texts` takes the fast path for ``model`` (runs the probe check)."""
    return FastSplade.build(model, kind, 8) is not None


def _encode_plain(model, texts: list[str], kind: str, batch_size: int, chunk: int, progress=None) -> sp.csr_matrix:
    """sentence-transformers' own encode, chunk by chunk, to CSR."""
    import torch

    encode = model.encode_query if kind == "query" else model.encode_document
    # The width comes from the encoded tensors: before its first forward pass a SparseEncoder
    # reports the transformer's hidden size, not the vocabulary size.
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
