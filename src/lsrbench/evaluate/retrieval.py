"""Exact top-k retrieval by dot product over an inverted index, ties broken by document index. Written here
rather than borrowed (PISA, Anserini) because it must be exact and deterministic with numpy/scipy alone;
``benchmark/retrieval.py`` measures it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import scipy.sparse as sp

from lsrbench.evaluate.inverted_index import InvertedIndex
from lsrbench.evaluate.kernels import kernels as compiled_kernels
from lsrbench.evaluate.stream import STREAM_DOCS_PER_RESULT, stream_block
from lsrbench.evaluate.topk import EMPTY, BlockTerms, query_terms, rounding_bound, select_topk

__all__ = ["InvertedIndex", "exact_topk", "search", "FIRST_PASSES"]


_SCORE_CHUNK = 1024  # documents per chunk of the compiled dense pass (stays in cache)
_POSTINGS_CHUNK = 1 << 17  # documents per chunk of the compiled postings pass
FIRST_PASSES = ("rows", "stream", "auto")


def exact_topk(
    queries: sp.spmatrix | sp.sparray,
    index: InvertedIndex,
    top_k: int,
    exclude: Sequence[Iterable[int] | None] | None = None,
    *,
    threads: int = 1,
    query_block: int | None = None,
    first_pass: str = "rows",
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The exact top ``top_k`` documents (score > 0) of each query row: ``(doc_indices, scores)`` by score
    descending then index, float64 sums in ascending term order. A float32 first pass bounds the k-th score, and
    every document within twice a rigorous rounding bound of it is scored exactly, so the result equals scoring
    every document. ``first_pass``: ``rows``, ``stream`` or ``auto``, same results."""
    if first_pass not in FIRST_PASSES:
        raise ValueError(f"exact_topk: first_pass must be one of {', '.join(FIRST_PASSES)}, got {first_pass!r}")
    if not sp.issparse(queries):
        raise ValueError(f"exact_topk: expected a scipy sparse matrix, got {type(queries).__name__}")
    if top_k < 0:
        raise ValueError(f"exact_topk: top_k must be >= 0, got {top_k}")
    q = sp.csr_matrix(queries, copy=True)
    q.sum_duplicates()
    if q.shape[1] != index.vocab_size:
        raise ValueError(f"exact_topk: queries have {q.shape[1]} columns, index vocabulary is {index.vocab_size}")
    excluded = _excluded(exclude, q.shape[0], index.n_docs)
    n_q = q.shape[0]
    results: list[tuple[np.ndarray, np.ndarray]] = [EMPTY] * n_q
    if query_block is None:
        per_query = 4 * max(1, index.n_docs) * max(1, threads)
        query_block = int(min(64, max(8, (index.doc_indices.nbytes + index.weights.nbytes
                                           + index.dense_weights.nbytes) // 5 // per_query)))
    blocks = [(lo, min(n_q, lo + max(1, query_block))) for lo in range(0, n_q, max(1, query_block))]
    stream = _use_stream(first_pass, index.n_docs, top_k)

    def run(block):
        lo, hi = block
        left = stream_block(q, index, top_k, excluded, lo, hi, results) if stream else range(lo, hi)
        for i in _runs(left):  # the score-rows pass: every query of the block, or those the stream left
            _search_block(q, index, top_k, excluded, i[0], i[1], results)

    if threads > 1 and len(blocks) > 1:
        from concurrent.futures import ThreadPoolExecutor

        with _blas_threads(1), ThreadPoolExecutor(threads) as pool:
            for _ in pool.map(run, blocks):
                pass
    else:
        for block in blocks:
            run(block)
    return results


def _excluded(exclude, n_q: int, n_docs: int) -> list:
    if exclude is not None and len(exclude) != n_q:
        raise ValueError(f"exact_topk: {len(exclude)} exclude sets for {n_q} queries")
    excluded = [None] * n_q
    for i, ex in enumerate(exclude or ()):
        if ex:
            arr = np.fromiter(ex, dtype=np.int64)
            if arr.size and (arr.min() < 0 or arr.max() >= n_docs):
                raise ValueError(f"exact_topk: exclude[{i}] has a document index outside [0, {n_docs})")
            excluded[i] = arr
    return excluded


def _use_stream(first_pass: str, n_docs: int, top_k: int) -> bool:
    if first_pass == "rows" or top_k <= 0 or n_docs < 4 * top_k or compiled_kernels() is None:
        return False
    return first_pass == "stream" or n_docs >= STREAM_DOCS_PER_RESULT * top_k


def _runs(indices) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for i in indices:
        if out and out[-1][1] == i:
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i, i + 1))
    return out


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


def _search_block(q, index: InvertedIndex, top_k: int, excluded, lo: int, hi: int, results) -> None:
    n_docs = index.n_docs
    prune = top_k > 0 and n_docs >= 4 * top_k  # at least 4k blocks (of one document or more)
    rows = None
    if prune:
        qb = q[lo:hi]
        kernels = compiled_kernels()
        size = max(1, n_docs // (16 * top_k))  # >= 4k blocks whose maxima bound the k-th best score
        maxima = np.empty((hi - lo, n_docs // size), dtype=np.float32)
        if kernels is not None:
            rows = np.empty((hi - lo, n_docs), dtype=np.float32)
            bt = BlockTerms(qb, index)
            kernels.block_scores(rows, maxima, size, bt.d_ptr, bt.d_slot, bt.d_w, bt.s_ptr, bt.s_term, bt.s_w,
                                 index.dense_f32(), index.indptr, index.doc_indices, index.weights,
                                 _SCORE_CHUNK, max(size, _POSTINGS_CHUNK // size * size))
            n_sum = bt.n_sum
        else:
            if index.dense_terms.size:
                rows = qb[:, index.dense_terms].toarray().astype(np.float32) @ index.dense_f32()
            else:
                rows = np.zeros((hi - lo, n_docs), dtype=np.float32)
            for i in range(lo, hi):
                terms, q_w = query_terms(q, i)
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
        terms, q_w = query_terms(q, i)
        if terms.shape[0] == 0 or n_docs == 0 or top_k == 0:
            results[i] = EMPTY
            continue
        res = None
        if prune:
            res = _pruned(index, terms, q_w, top_k, excluded[i], rows[i - lo], maxima[i - lo], size, int(n_sum[i - lo]))
        if res is None:
            res = _exhaustive(index, terms, q_w, top_k, excluded[i])
        results[i] = res


def _exhaustive(index: InvertedIndex, terms, q_w, top_k, ex) -> tuple[np.ndarray, np.ndarray]:
    acc = np.zeros(index.n_docs, dtype=np.float64)
    kernels = compiled_kernels()
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
                acc[docs] += index.weights[lo:hi].astype(np.float64) * w
    if ex is not None:
        acc[ex] = 0.0
    cand = np.flatnonzero(acc > 0)
    return select_topk(cand.astype(np.int64, copy=False), acc[cand], top_k)


def _pruned(index: InvertedIndex, terms, q_w, top_k, ex, row, maxima, size,
            n_sum) -> tuple[np.ndarray, np.ndarray] | None:
    """Candidates from the approximate ``row`` and block ``maxima``, scored exactly, top k; None when the bound
    is not positive."""
    kernels = compiled_kernels()
    m = maxima.shape[0]
    if ex is not None:
        row[ex] = -np.inf
        for blk in np.unique(ex // size).tolist():
            if blk < m:
                maxima[blk] = row[blk * size : (blk + 1) * size].max()
    delta = rounding_bound(index, terms, q_w, n_sum)
    lower = float(np.partition(maxima, m - top_k)[m - top_k])  # k distinct documents score >= lower
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
    return select_topk(cand[keep].astype(np.int64, copy=False), scores[keep], top_k)


def search(
    queries: sp.spmatrix | sp.sparray,
    query_ids: Sequence[str],
    docs: sp.spmatrix | sp.sparray,
    doc_ids: Sequence[str],
    top_k: int = 1000,
    skip_identical_ids: bool = False,
    threads: int = 1,
    first_pass: str = "rows",
) -> dict[str, list[tuple[str, float]]]:
    """The top ``top_k`` documents of every query as ``{qid: [(docid, score), ...]}`` (empty when nothing
    scored); ``skip_identical_ids`` skips a document with the query's id and still fills ``top_k``."""
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
    hits = exact_topk(queries, InvertedIndex.from_csr(docs), top_k, exclude, threads=threads, first_pass=first_pass)
    return {
        qid: [(doc_ids[j], float(s)) for j, s in zip(idx.tolist(), scores.tolist())]
        for qid, (idx, scores) in zip(query_ids, hits)
    }
