"""Exact top-k retrieval by unnormalised dot product over an inverted index, and TREC run files.

Written here rather than borrowed (PISA, Anserini, torch) because it is exact (float64 scores
summed in a fixed order, only provably safe pruning), deterministic (ties broken by document
index), needs only numpy/scipy (numba, when installed, compiles the inner loops; the results are
the same without it), and can run shard by shard later: per-shard top-k lists merged by the same
(score, index) order give the same result as one pass. ``benchmark/retrieval.py`` measures it
against scipy's ``Q @ D.T``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from .atomic import atomic_open
from .errors import InputError

__all__ = ["InvertedIndex", "exact_topk", "search", "write_trec_run", "read_trec_run"]


class InvertedIndex:
    """Term -> postings (document indices ascending, weights), i.e. the CSC form of a docs matrix.

    Optionally the most frequent terms are stored as dense rows instead (``dense_terms``, one
    row of ``dense_weights`` per term, 0 where a document lacks the term) and their postings
    ranges in ``indptr`` are empty: a term found in a large share of the documents costs less
    as a dense row (4 bytes per document) than as postings (8 bytes per posting), and dense rows
    let a block of queries score them with one matrix product. :meth:`from_csr` chooses them.
    """

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
        """Build from a (n_docs x vocab) sparse matrix; duplicates are summed, postings sorted by doc.

        ``dense="auto"`` stores as dense rows the terms found in at least 1/16 of the documents,
        most frequent first, while the extra memory stays within a fifth of the postings' bytes
        (none below 1,024 documents); a list of term ids stores exactly those; ``None`` none.

        Built chunk by chunk of documents (about ``chunk_postings`` postings each; by default a
        64th of the collection, between 64Ki and 4Mi) straight into the final arrays, so the build
        needs little more memory than the index itself (the chunk's temporaries take about 60
        bytes per posting). ``docs`` is only read, a chunk of rows at a time: given a matrix whose
        arrays are memory maps of its file (``load_sparse(path, mmap=True)``, as the evaluate
        stage does), the process holds one copy of the postings, the index's, not two.
        """
        if not sp.issparse(docs):
            raise ValueError(f"InvertedIndex.from_csr: expected a scipy sparse matrix, got {type(docs).__name__}")
        csr = sp.csr_matrix(docs)  # no copy when docs already is a CSR matrix
        if not csr.has_canonical_format:
            csr = csr.copy()
            csr.sum_duplicates()
        n_docs, vocab = csr.shape
        dtype = csr.data.dtype if csr.data.dtype in (np.float32, np.float64) else np.dtype(np.float64)
        idx_dtype = np.int32 if n_docs <= np.iinfo(np.int32).max else np.int64
        # Document frequencies chunk by chunk: bincount of all indices at once would convert them
        # to int64 first, a temporary as large as the postings.
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

    def _dense_f32(self) -> np.ndarray:
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


def _select_topk(cand: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top ``k`` of ``cand`` (ascending doc indices) by score desc, then doc index asc."""
    if cand.shape[0] > k:
        if k == 0:
            return cand[:0], scores[:0]
        cut = cand.shape[0] - k
        kth = np.partition(scores, cut)[cut]  # the k-th largest score
        above = np.flatnonzero(scores > kth)
        # argpartition alone would pick an arbitrary subset of the documents tied at the
        # boundary; taking them in candidate order keeps the lowest doc indices.
        tied = np.flatnonzero(scores == kth)[: k - above.shape[0]]
        keep = np.concatenate([above, tied])
        cand, scores = cand[keep], scores[keep]
    order = np.lexsort((cand, -scores))
    return cand[order], scores[order]


_EMPTY = (np.zeros(0, np.int64), np.zeros(0, np.float64))
_SCORE_CHUNK = 1024  # documents per chunk of the compiled dense pass (the dense rows' chunk stays in cache)
_POSTINGS_CHUNK = 1 << 17  # documents per chunk of the compiled postings pass (the row's chunk stays in cache)
_U32 = float(np.finfo(np.float32).eps) / 2
_U64 = float(np.finfo(np.float64).eps) / 2


def exact_topk(
    queries: sp.spmatrix | sp.sparray,
    index: InvertedIndex,
    k: int,
    exclude: Sequence[Iterable[int] | None] | None = None,
    *,
    threads: int = 1,
    query_block: int | None = None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Exact top-``k`` documents of each query row by dot product.

    Returns one ``(doc_indices int64, scores float64)`` pair per query row, ordered by score
    descending then doc index ascending. A query gets at most ``k`` results and only documents
    with score > 0: an inverted index never visits documents that share no term with the query,
    so fewer than ``k`` (none for an empty query) is normal. Scores are accumulated in float64
    from float32 products, which float64 represents exactly, term by term in ascending term id
    (the order of ``scipy``'s sparse product), so results do not depend on how the postings are
    stored. ``exclude[i]`` holds document indices never returned for query ``i``.

    How (the result is the same as scoring every document): queries go in blocks of
    ``query_block``. A first pass scores every document approximately in float32 (the query's
    dense rows, then its postings; with numba in cache-sized chunks of documents, without it
    a matrix product for the block's dense rows and ``np.add.at`` for the postings); a lower
    bound ``L`` of the k-th best score is the k-th largest of the maxima of >= 4k blocks of
    documents (k distinct documents reach it); every document whose approximate score is within
    twice a rigorous rounding-error bound of ``L`` is then scored exactly, and the exact top-k is
    taken among those. When that bound is not positive
    (fewer than about k matching documents) the query is scored exactly everywhere instead.
    ``threads`` > 1 runs query blocks in parallel threads (numpy, BLAS and the compiled kernels
    release the GIL). ``query_block`` defaults to the largest block (at most 64) whose float32
    scores, one block per thread, take at most a fifth of the index's bytes.
    """
    if not sp.issparse(queries):
        raise ValueError(f"exact_topk: expected a scipy sparse matrix, got {type(queries).__name__}")
    if k < 0:
        raise ValueError(f"exact_topk: k must be >= 0, got {k}")
    q = sp.csr_matrix(queries, copy=True)
    q.sum_duplicates()
    if q.shape[1] != index.vocab_size:
        raise ValueError(f"exact_topk: queries have {q.shape[1]} columns, index vocabulary is {index.vocab_size}")
    if exclude is not None and len(exclude) != q.shape[0]:
        raise ValueError(f"exact_topk: {len(exclude)} exclude sets for {q.shape[0]} queries")
    excluded = [None] * q.shape[0]
    if exclude is not None:
        for i, ex in enumerate(exclude):
            if ex:
                arr = np.fromiter(ex, dtype=np.int64)
                if arr.size and (arr.min() < 0 or arr.max() >= index.n_docs):
                    raise ValueError(f"exact_topk: exclude[{i}] has a document index outside [0, {index.n_docs})")
                excluded[i] = arr

    n_q = q.shape[0]
    results: list[tuple[np.ndarray, np.ndarray]] = [_EMPTY] * n_q
    if query_block is None:
        per_query = 4 * max(1, index.n_docs) * max(1, threads)
        query_block = int(min(64, max(8, (index.doc_indices.nbytes + index.weights.nbytes
                                           + index.dense_weights.nbytes) // 5 // per_query)))
    blocks = [(lo, min(n_q, lo + max(1, query_block))) for lo in range(0, n_q, max(1, query_block))]
    if threads > 1 and len(blocks) > 1:
        from concurrent.futures import ThreadPoolExecutor

        with _blas_threads(1), ThreadPoolExecutor(threads) as pool:
            for _ in pool.map(lambda b: _search_block(q, index, k, excluded, b[0], b[1], results), blocks):
                pass
    else:
        for lo, hi in blocks:
            _search_block(q, index, k, excluded, lo, hi, results)
    return results


class _blas_threads:
    """Limit BLAS to ``n`` threads inside the block (threadpoolctl when present, else a no-op)."""

    def __init__(self, n: int):
        self.n, self.ctx = n, None

    def __enter__(self):
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            return self
        self.ctx = threadpool_limits(limits=self.n, user_api="blas")
        return self

    def __exit__(self, *exc):
        if self.ctx is not None:
            self.ctx.restore_original_limits()


def _query_terms(q: sp.csr_matrix, i: int) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = q.indptr[i], q.indptr[i + 1]
    terms = q.indices[lo:hi].astype(np.int64)
    q_w = q.data[lo:hi].astype(np.float64)
    nz = q_w != 0
    return terms[nz], q_w[nz]


def _search_block(q, index: InvertedIndex, k: int, excluded, lo: int, hi: int, results) -> None:
    n_docs = index.n_docs
    prune = k > 0 and n_docs >= 4 * k  # at least 4k blocks (of one document or more)
    rows = None
    if prune:
        # First pass: approximate float32 scores of every document for the whole block.
        qb = q[lo:hi]
        kernels = _kernels()
        size = max(1, n_docs // (16 * k))  # >= 4k blocks whose maxima bound the k-th best score
        maxima = np.empty((hi - lo, n_docs // size), dtype=np.float32)
        if kernels is not None:
            rows = np.empty((hi - lo, n_docs), dtype=np.float32)
            terms = qb.indices.astype(np.int64)
            slots = index.dense_slot[terms]
            is_dense = slots >= 0
            per_row = np.repeat(np.arange(hi - lo), np.diff(qb.indptr))
            d_ptr = np.zeros(hi - lo + 1, dtype=np.int64)
            np.cumsum(np.bincount(per_row[is_dense], minlength=hi - lo), out=d_ptr[1:])
            s_ptr = np.zeros(hi - lo + 1, dtype=np.int64)
            np.cumsum(np.bincount(per_row[~is_dense], minlength=hi - lo), out=s_ptr[1:])
            w32 = qb.data.astype(np.float32)
            kernels.block_scores(rows, maxima, size, d_ptr, slots[is_dense], w32[is_dense], s_ptr, terms[~is_dense],
                                 w32[~is_dense], index._dense_f32(), index.indptr, index.doc_indices, index.weights,
                                 _SCORE_CHUNK, max(size, _POSTINGS_CHUNK // size * size))
            n_sum = np.diff(qb.indptr) + 4  # terms in each float32 sum (+ the rounding of w and q)
        else:
            if index.dense_terms.size:
                rows = qb[:, index.dense_terms].toarray().astype(np.float32) @ index._dense_f32()
            else:
                rows = np.zeros((hi - lo, n_docs), dtype=np.float32)
            for i in range(lo, hi):
                terms, q_w = _query_terms(q, i)
                row = rows[i - lo]
                for t, w in zip(terms.tolist(), q_w.tolist()):
                    if index.dense_slot[t] < 0 and index.indptr[t + 1] > index.indptr[t]:
                        a, b = index.indptr[t], index.indptr[t + 1]
                        # Documents are unique within a term's postings: add.at adds once to each.
                        np.add.at(row, index.doc_indices[a:b], index.weights[a:b].astype(np.float32) * np.float32(w))
            n_sum = np.diff(qb.indptr) + index.dense_terms.shape[0] + 4
            m = maxima.shape[1]
            maxima[:] = rows[:, : m * size].reshape(hi - lo, m, size).max(axis=2)
    for i in range(lo, hi):
        terms, q_w = _query_terms(q, i)
        if terms.shape[0] == 0 or n_docs == 0 or k == 0:
            results[i] = _EMPTY
            continue
        res = None
        if prune:
            res = _pruned(index, terms, q_w, k, excluded[i], rows[i - lo], maxima[i - lo], size, int(n_sum[i - lo]))
        if res is None:
            res = _exhaustive(index, terms, q_w, k, excluded[i])
        results[i] = res


def _exhaustive(index: InvertedIndex, terms, q_w, k, ex) -> tuple[np.ndarray, np.ndarray]:
    """Score every document exactly (float64, ascending term order), then select."""
    acc = np.zeros(index.n_docs, dtype=np.float64)
    kernels = _kernels()
    if kernels is not None:
        kernels.exhaustive(acc, terms, q_w, index.dense_slot, index.dense_weights, index.indptr,
                           index.doc_indices, index.weights)
        terms = terms[:0]
    tmp = np.empty(index.n_docs, dtype=np.float64) if index.dense_terms.size else None
    for t, w in zip(terms.tolist(), q_w.tolist()):
        slot = index.dense_slot[t]
        if slot >= 0:
            np.multiply(index.dense_weights[slot], w, out=tmp, dtype=np.float64)
            acc += tmp
        else:
            lo, hi = index.indptr[t], index.indptr[t + 1]
            if hi > lo:
                docs = index.doc_indices[lo:hi]
                # Documents are unique within one term's postings, so this is one add per document.
                acc[docs] += index.weights[lo:hi].astype(np.float64) * w
    if ex is not None:
        acc[ex] = 0.0
    cand = np.flatnonzero(acc > 0)
    return _select_topk(cand.astype(np.int64, copy=False), acc[cand], k)


def _pruned(index: InvertedIndex, terms, q_w, k, ex, row, maxima, size, n_sum) -> tuple[np.ndarray, np.ndarray] | None:
    """Candidates from the approximate ``row`` (float32 sums of at most ``n_sum`` terms) and its block
    ``maxima`` (blocks of ``size`` documents), exact scores, top k; None when the candidates' bound
    is not positive (then score exhaustively)."""
    kernels = _kernels()
    m = maxima.shape[0]
    if ex is not None:
        row[ex] = -np.inf
        for blk in np.unique(ex // size).tolist():
            if blk < m:
                maxima[blk] = row[blk * size : (blk + 1) * size].max()
    # Rounding: the float32 pass sums at most n_sum products of float32 numbers (the weights and
    # the query weight each rounded to float32 once), so it is within gamma_n * sum_t |q_t| max|w_t|
    # of the real score; the exact float64 sum within gamma_m (u64) of the same. Twice their sum
    # bounds |approximate - exact| with room to spare.
    bound = float(np.dot(np.abs(q_w), index.term_absmax[terms]))
    delta = 2.0 * (_gamma(n_sum, _U32) + _gamma(terms.shape[0] + 1, _U64)) * bound
    lower = float(np.partition(maxima, m - k)[m - k])  # k distinct documents score >= lower
    cut = lower - 2.0 * delta
    if not cut > 0 or not np.isfinite(cut):
        return None
    # Only blocks whose maximum reaches the cut can hold candidates (plus the last partial block).
    hot = np.flatnonzero(maxima >= cut)
    if kernels is not None:
        cand = kernels.candidates(row, hot, size, m * size, np.float32(cut) if np.float32(cut) <= cut else
                                  np.nextafter(np.float32(cut), np.float32(-np.inf)))
    else:
        inner = row[: m * size].reshape(m, size)[hot]
        r_idx, c_idx = np.nonzero(inner >= cut)
        cand = hot[r_idx] * size + c_idx
        tail = m * size + np.flatnonzero(row[m * size :] >= cut)
        if tail.size:
            cand = np.concatenate([cand, tail])
    scores = np.zeros(cand.shape[0], dtype=np.float64)
    if kernels is not None:
        kernels.exact(cand, terms, q_w, index.dense_slot, index.dense_weights, index.indptr, index.doc_indices,
                      index.weights, scores)
        terms = terms[:0]
    for t, w in zip(terms.tolist(), q_w.tolist()):
        slot = index.dense_slot[t]
        if slot >= 0:
            vals = index.dense_weights[slot][cand]
        else:
            lo, hi = index.indptr[t], index.indptr[t + 1]
            if hi == lo:
                continue
            docs = index.doc_indices[lo:hi]
            pos = np.minimum(np.searchsorted(docs, cand), hi - lo - 1)
            vals = np.where(docs[pos] == cand, index.weights[lo:hi][pos], 0)
        # An absent term adds an exact 0 (+/-0.0), so the sum equals the ascending-term float64 sum.
        scores += vals.astype(np.float64) * w
    keep = scores > 0
    return _select_topk(cand[keep].astype(np.int64, copy=False), scores[keep], k)


# -- compiled kernels (numba, when installed) ---------------------------------------------------
# The same arithmetic as the numpy code they replace, in the same order, one pass instead of
# several array temporaries: the results are identical with or without numba. Set
# LSRBENCH_NUMBA=0 to use numpy only.

_KERNELS = None


def _kernels():
    """The compiled kernels (compiled on first use, cached on disk), or None."""
    global _KERNELS
    if _KERNELS is None:
        _KERNELS = False
        if os.environ.get("LSRBENCH_NUMBA", "1") != "0":
            try:
                import numba
            except ImportError:
                pass
            else:
                from types import SimpleNamespace

                jit = numba.njit(cache=True, nogil=True)
                # contract: a*b+c may become one FMA in the approximate first pass only (its
                # error bound holds for any order of the sum); the exact kernels keep IEEE order.
                fast = numba.njit(cache=True, nogil=True, fastmath={"contract"})
                _KERNELS = SimpleNamespace(block_scores=fast(_k_block_scores), exact=jit(_k_exact),
                                           exhaustive=jit(_k_exhaustive), candidates=jit(_k_candidates))
    return _KERNELS or None


def _k_block_scores(rows, maxima, size, d_ptr, d_slot, d_w, s_ptr, s_term, s_w, dense, indptr, docs, weights,
                    chunk, chunk2):  # pragma: no cover - compiled
    """rows[i, d] = float32 approximate score of document d for query i; maxima[i, b] = max of block b.

    Query i's dense terms are ``d_slot[d_ptr[i]:d_ptr[i+1]]`` (rows of ``dense``), its other terms
    ``s_term[s_ptr[i]:s_ptr[i+1]]`` (postings), with float32 weights ``d_w`` / ``s_w``.
    Dense pass: per chunk of ``chunk`` documents (the dense rows' chunk stays in the core's cache
    for the whole block of queries) each query adds its own dense rows, four at a time. Postings
    pass: per query and per ``chunk2`` documents (a multiple of ``size``; the row's chunk stays in
    cache), the postings of each of its terms that fall in the chunk, then that chunk's block
    maxima (blocks of ``size`` documents; a last partial block is left out).
    """
    n_docs = rows.shape[1]
    for c0 in range(0, n_docs, chunk):
        c1 = min(n_docs, c0 + chunk)
        n = c1 - c0
        for i in range(rows.shape[0]):
            r = rows[i, c0:c1]
            for d in range(n):
                r[d] = 0.0
            j = d_ptr[i]
            end = d_ptr[i + 1]
            while j + 4 <= end:
                a = dense[d_slot[j], c0:c1]
                b = dense[d_slot[j + 1], c0:c1]
                c = dense[d_slot[j + 2], c0:c1]
                e = dense[d_slot[j + 3], c0:c1]
                wa = d_w[j]
                wb = d_w[j + 1]
                wc = d_w[j + 2]
                we = d_w[j + 3]
                for d in range(n):
                    r[d] += a[d] * wa + b[d] * wb + c[d] * wc + e[d] * we
                j += 4
            while j < end:
                a = dense[d_slot[j], c0:c1]
                wa = d_w[j]
                for d in range(n):
                    r[d] += a[d] * wa
                j += 1
    cursor = np.empty(s_term.shape[0], dtype=np.int64)
    for j in range(s_term.shape[0]):
        cursor[j] = indptr[s_term[j]]
    n_blocks = maxima.shape[1]
    for i in range(rows.shape[0]):
        r = rows[i]
        for c0 in range(0, n_docs, chunk2):
            c1 = min(n_docs, c0 + chunk2)
            for j in range(s_ptr[i], s_ptr[i + 1]):
                w = s_w[j]
                p = cursor[j]
                stop = indptr[s_term[j] + 1]
                while p < stop and docs[p] < c1:
                    r[docs[p]] += np.float32(weights[p]) * w
                    p += 1
                cursor[j] = p
            for blk in range(c0 // size, min(n_blocks, c1 // size)):
                m = r[blk * size]
                for d in range(blk * size + 1, (blk + 1) * size):
                    if r[d] > m:
                        m = r[d]
                maxima[i, blk] = m


def _k_candidates(row, hot, size, tail_start, cut):  # pragma: no cover - compiled
    """Ascending indices d with row[d] >= cut, looking only in blocks ``hot`` and from ``tail_start`` on."""
    n = 0
    for b in hot:
        for d in range(b * size, (b + 1) * size):
            if row[d] >= cut:
                n += 1
    for d in range(tail_start, row.shape[0]):
        if row[d] >= cut:
            n += 1
    out = np.empty(n, dtype=np.int64)
    n = 0
    for b in hot:
        for d in range(b * size, (b + 1) * size):
            if row[d] >= cut:
                out[n] = d
                n += 1
    for d in range(tail_start, row.shape[0]):
        if row[d] >= cut:
            out[n] = d
            n += 1
    return out


def _k_exhaustive(acc, terms, qw, dense_slot, dense, indptr, docs, weights):  # pragma: no cover - compiled
    """acc[d] = sum over the query's terms in ascending order of float64(w) * q (exact products)."""
    for j in range(terms.shape[0]):
        t = terms[j]
        w = qw[j]
        s = dense_slot[t]
        if s >= 0:
            for d in range(acc.shape[0]):
                acc[d] += np.float64(dense[s, d]) * w
        else:
            for p in range(indptr[t], indptr[t + 1]):
                acc[docs[p]] += np.float64(weights[p]) * w


def _k_exact(cand, terms, qw, dense_slot, dense, indptr, docs, weights, out):  # pragma: no cover - compiled
    """out[i] = exact score of document cand[i] (cand ascending); postings searched by galloping."""
    n = cand.shape[0]
    for j in range(terms.shape[0]):
        t = terms[j]
        w = qw[j]
        s = dense_slot[t]
        if s >= 0:
            for i in range(n):
                out[i] += np.float64(dense[s, cand[i]]) * w
            continue
        lo = indptr[t]
        hi = indptr[t + 1]
        p = lo
        for i in range(n):
            if p >= hi:
                break
            d = cand[i]
            if docs[p] < d:
                step = 1
                while p + step < hi and docs[p + step] < d:
                    step *= 2
                a = p + step // 2 + 1
                b = min(p + step, hi)
                while a < b:
                    mid = (a + b) // 2
                    if docs[mid] < d:
                        a = mid + 1
                    else:
                        b = mid
                p = a
            if p < hi and docs[p] == d:
                out[i] += np.float64(weights[p]) * w


def _gamma(n: int, u: float) -> float:
    return n * u / (1.0 - n * u)


def search(
    queries: sp.spmatrix | sp.sparray,
    query_ids: Sequence[str],
    docs: sp.spmatrix | sp.sparray,
    doc_ids: Sequence[str],
    k: int = 1000,
    skip_identical_ids: bool = False,
    threads: int = 1,
) -> dict[str, list[tuple[str, float]]]:
    """Retrieve the top ``k`` documents of every query; return ``{qid: [(docid, score), ...]}``.

    Every query id is a key, with an empty list when nothing scored > 0. With
    ``skip_identical_ids`` a document whose id equals the query id is never returned and the
    list is still filled to ``k`` (BEIR's behaviour on ArguAna and Quora). ``threads`` as in
    :func:`exact_topk`.
    """
    if len(query_ids) != queries.shape[0]:
        raise ValueError(f"search: {len(query_ids)} query ids for {queries.shape[0]} query rows")
    if len(doc_ids) != docs.shape[0]:
        raise ValueError(f"search: {len(doc_ids)} doc ids for {docs.shape[0]} document rows")
    if len(set(query_ids)) != len(query_ids):
        raise ValueError("search: duplicate query ids")
    exclude = None
    if skip_identical_ids:
        doc_pos = {d: j for j, d in enumerate(doc_ids)}
        exclude = [{doc_pos[qid]} if qid in doc_pos else None for qid in query_ids]
    hits = exact_topk(queries, InvertedIndex.from_csr(docs), k, exclude, threads=threads)
    return {
        qid: [(doc_ids[j], float(s)) for j, s in zip(idx.tolist(), scores.tolist())]
        for qid, (idx, scores) in zip(query_ids, hits)
    }


def _check_token(value: str, what: str) -> str:
    """Return ``value`` as str; raise ValueError if it would break the whitespace-separated format."""
    value = str(value)
    if not value or any(c.isspace() for c in value):
        raise ValueError(f"write_trec_run: {what} {value!r} is empty or contains whitespace")
    return value


def write_trec_run(path: str | os.PathLike, results: Mapping[str, Sequence[tuple[str, float]]], tag: str) -> None:
    """Write a 6-column TREC run (``qid Q0 docid rank score tag``) atomically.

    Each query's documents are stably sorted by score descending (given order kept among ties)
    and ranked from 1, so the rank column agrees with what trec_eval re-derives from scores.
    Scores are written with ``repr`` (shortest round-trip form), so reading them back gives the
    identical float64. Non-finite scores and whitespace in ids or tag raise ``ValueError``.
    """
    tag = _check_token(tag, "tag")
    with atomic_open(path, "w", encoding="utf-8", newline="\n") as fh:
        for qid, docs in results.items():
            qid = _check_token(qid, "query id")
            ranked = sorted(((str(d), float(s)) for d, s in docs), key=lambda ds: -ds[1])
            seen: set[str] = set()
            for rank, (docid, score) in enumerate(ranked, start=1):
                _check_token(docid, "document id")
                if not math.isfinite(score):
                    raise ValueError(f"write_trec_run: non-finite score for {qid}/{docid}")
                if docid in seen:
                    raise ValueError(f"write_trec_run: document {docid!r} twice for query {qid!r}")
                seen.add(docid)
                fh.write(f"{qid} Q0 {docid} {rank} {score!r} {tag}\n")


def read_trec_run(path: str | os.PathLike) -> dict[str, dict[str, float]]:
    """Read a 6-column TREC run into ``{qid: {docid: score}}``.

    Blank lines are skipped; anything else that is not ``qid Q0 docid rank score tag`` with an
    integer rank and a finite score, or repeats a (qid, docid) pair, raises
    ``InputError(path, "line N", ...)``.
    """
    path = str(path)
    if not os.path.exists(path):
        raise InputError(path, None, "file not found")
    run: dict[str, dict[str, float]] = {}
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, start=1):
                fields = line.split()
                if not fields:
                    continue
                where = f"line {n}"
                if len(fields) != 6:
                    raise InputError(path, where, f"expected 6 columns 'qid Q0 docid rank score tag', got {len(fields)}")
                qid, _, docid, rank, score_s, _ = fields
                try:
                    int(rank)
                except ValueError:
                    raise InputError(path, where, f"rank {rank!r} is not an integer") from None
                try:
                    score = float(score_s)
                except ValueError:
                    raise InputError(path, where, f"score {score_s!r} is not a number") from None
                if not math.isfinite(score):
                    raise InputError(path, where, f"score {score_s!r} is not finite")
                docs = run.setdefault(qid, {})
                if docid in docs:
                    raise InputError(path, where, f"document {docid!r} repeated for query {qid!r}")
                docs[docid] = score
    except UnicodeDecodeError as exc:
        raise InputError(path, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return run
