"""The inverted index of a documents matrix, frequent terms kept as dense rows, built chunk by chunk so it is
the only copy of the postings in memory."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

__all__ = ["InvertedIndex"]


class InvertedIndex:
    """Term -> postings (CSC form of a docs matrix); the most frequent terms optionally as dense rows (cheaper
    than postings, and scored for a block of queries by one matrix product)."""

    def __init__(
        self,
        indptr: np.ndarray,
        doc_indices: np.ndarray,
        weights: np.ndarray,
        n_docs: int,
        dense_terms: np.ndarray | None = None,
        dense_weights: np.ndarray | None = None,
    ):
        """Wrap ready-made CSC arrays (and optional dense rows); use :meth:`from_csr` to build from a documents matrix."""
        self.indptr = indptr
        self.doc_indices = doc_indices
        self.weights = weights
        self.n_docs = int(n_docs)
        self.vocab_size = int(indptr.shape[0] - 1)
        if dense_terms is None:
            dense_terms = np.zeros(0, dtype=np.int64)
            dense_weights = np.zeros((0, self.n_docs), dtype=weights.dtype if weights.dtype in (np.float32, np.float64) else np.float64)
        self.dense_terms = np.asarray(dense_terms, dtype=np.int64)
        self.dense_weights = dense_weights
        if self.dense_weights.shape != (self.dense_terms.shape[0], self.n_docs):
            raise ValueError(f"InvertedIndex: dense_weights has shape {self.dense_weights.shape}, expected "
                             f"({self.dense_terms.shape[0]}, {self.n_docs})")
        self.dense_slot = np.full(self.vocab_size, -1, dtype=np.int64)
        self.dense_slot[self.dense_terms] = np.arange(self.dense_terms.shape[0])
        if np.any(self.indptr[self.dense_terms + 1] != self.indptr[self.dense_terms]):
            raise ValueError("InvertedIndex: a dense term also has postings")
        # Per-term largest |weight|: bounds the rounding error of the float32 first pass.
        self.term_absmax = np.zeros(self.vocab_size, dtype=np.float64)
        lengths = np.diff(self.indptr)
        nonempty = np.flatnonzero(lengths)
        if nonempty.size:  # max |w| as max(max w, -min w): no full-size temporary
            self.term_absmax[nonempty] = np.maximum(np.maximum.reduceat(self.weights, self.indptr[nonempty]),
                                                    -np.minimum.reduceat(self.weights, self.indptr[nonempty]))
        if self.dense_terms.size and self.n_docs:
            self.term_absmax[self.dense_terms] = np.maximum(self.dense_weights.max(axis=1), -self.dense_weights.min(axis=1))
        self._dense32 = None

    @classmethod
    def from_csr(cls, docs: sp.spmatrix | sp.sparray, dense: str | Sequence[int] | None = "auto",
                 chunk_postings: int | None = None) -> "InvertedIndex":
        """Build from a (n_docs x vocab) sparse matrix (duplicates summed), chunk by chunk into the final
        arrays; ``docs`` is only read, so a memory-mapped matrix is never copied. ``dense="auto"``: terms in at
        least 1/16 of the documents while the extra memory stays within a fifth of the postings."""
        if not sp.issparse(docs):
            raise ValueError(f"InvertedIndex.from_csr: expected a scipy sparse matrix, got {type(docs).__name__}")
        csr = sp.csr_matrix(docs)  # no copy when docs already is a CSR matrix
        if not csr.has_canonical_format:
            csr = csr.copy()
            csr.sum_duplicates()
        n_docs, vocab = csr.shape
        dtype = csr.data.dtype if csr.data.dtype in (np.float32, np.float64) else np.dtype(np.float64)
        idx_dtype = np.int32 if n_docs <= np.iinfo(np.int32).max else np.int64
        # Document frequencies chunk by chunk: one bincount would make an int64 copy of all postings.
        df = np.zeros(vocab, dtype=np.int64)
        for lo in range(0, csr.nnz, 1 << 24):
            df += np.bincount(csr.indices[lo : lo + (1 << 24)], minlength=vocab)
        if isinstance(dense, str):
            if dense != "auto":
                raise ValueError(f"InvertedIndex.from_csr: dense must be 'auto', a list of terms or None, got {dense!r}")
            dense_terms = _auto_dense_terms(df, n_docs, dtype.itemsize + np.dtype(idx_dtype).itemsize, dtype.itemsize)
        elif dense is None:
            dense_terms = np.zeros(0, dtype=np.int64)
        else:
            dense_terms = np.unique(np.asarray(list(dense), dtype=np.int64))
            if dense_terms.size and (dense_terms[0] < 0 or dense_terms[-1] >= vocab):
                raise ValueError("InvertedIndex.from_csr: dense term id out of range")
        slot = np.full(vocab, -1, dtype=np.int32)
        slot[dense_terms] = np.arange(dense_terms.shape[0], dtype=np.int32)
        sparse_df = df.copy()
        sparse_df[dense_terms] = 0
        indptr = np.zeros(vocab + 1, dtype=np.int64)
        np.cumsum(sparse_df, out=indptr[1:])
        doc_indices = np.empty(int(indptr[-1]), dtype=idx_dtype)
        weights = np.empty(int(indptr[-1]), dtype=dtype)
        dense_weights = np.zeros((dense_terms.shape[0], n_docs), dtype=dtype)
        write = indptr[:-1].copy()
        if chunk_postings is None:
            chunk_postings = min(1 << 22, max(1 << 16, csr.nnz // 64))
        rows_per_chunk = max(1, int(chunk_postings * n_docs // max(1, csr.nnz)))
        terms = np.arange(vocab, dtype=np.int32 if vocab <= np.iinfo(np.int32).max else np.int64)
        for lo in range(0, n_docs, rows_per_chunk):
            hi = min(n_docs, lo + rows_per_chunk)
            part = csr[lo:hi].tocsc()  # scipy's counting sort: per term, documents ascending
            counts = np.diff(part.indptr).astype(np.int64)
            cols = np.repeat(terms, counts)
            rows = part.indices.astype(idx_dtype) + lo
            vals = part.data.astype(dtype, copy=False)
            slots = slot[cols]
            to_dense = slots >= 0
            if dense_terms.size and to_dense.any():
                dense_weights[slots[to_dense], rows[to_dense]] = vals[to_dense]
                keep = ~to_dense
                cols, rows, vals = cols[keep], rows[keep], vals[keep]
                counts[dense_terms] = 0
            first = np.cumsum(counts) - counts  # where each term starts among this chunk's kept postings
            dest = write[cols] + (np.arange(cols.shape[0]) - first[cols])
            doc_indices[dest] = rows
            weights[dest] = vals
            write += counts
        return cls(indptr, doc_indices, weights, n_docs, dense_terms, dense_weights)

    def postings(self, term: int) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(doc_indices, weights)`` of one term (for a dense term: its non-zero entries)."""
        slot = self.dense_slot[term]
        if slot >= 0:
            row = self.dense_weights[slot]
            docs = np.flatnonzero(row).astype(self.doc_indices.dtype)
            return docs, row[docs]
        lo, hi = self.indptr[term], self.indptr[term + 1]
        return self.doc_indices[lo:hi], self.weights[lo:hi]

    @property
    def nbytes(self) -> int:
        """Bytes held by the index arrays."""
        return int(self.indptr.nbytes + self.doc_indices.nbytes + self.weights.nbytes + self.dense_weights.nbytes
                   + self.dense_slot.nbytes + self.term_absmax.nbytes
                   + (self._dense32.nbytes if self._dense32 is not None and self._dense32 is not self.dense_weights else 0))

    def dense_f32(self) -> np.ndarray:
        """The dense rows as float32 (the first pass's matrix product); shared when already float32."""
        if self._dense32 is None:
            self._dense32 = (self.dense_weights if self.dense_weights.dtype == np.float32
                             else self.dense_weights.astype(np.float32))
        return self._dense32


def _auto_dense_terms(lengths: np.ndarray, n_docs: int, posting_bytes: int, value_bytes: int) -> np.ndarray:
    """Terms worth a dense row: df >= n_docs/16, most frequent first, extra bytes <= 1/5 of the postings'."""
    if n_docs < 1024 or lengths.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(-lengths, kind="stable")
    df = lengths[order]
    order = order[df * 16 >= n_docs]
    extra = np.cumsum(n_docs * value_bytes - lengths[order] * posting_bytes)
    budget = int(lengths.sum()) * posting_bytes // 5
    return np.sort(order[extra <= budget])
