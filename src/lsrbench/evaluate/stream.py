"""The streaming first pass of the exact top-k search: candidates are documents scoring at least the running
k-th approximate score less ``2 delta``, without a score row per query. Exact because a true top-k document
scores at least the final cut; faster from about 1000 documents per result (``benchmark/peers.py``)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from lsrbench.evaluate.kernels import kernels as compiled_kernels
from lsrbench.evaluate.topk import BlockTerms, query_terms, rounding_bound, select_topk

__all__ = ["stream_block", "STREAM_DOCS_PER_RESULT", "MIN_CANDIDATES"]

STREAM_DOCS_PER_RESULT = 1000  # "auto" streams from n_docs >= 1000 k on (measured crossover: 300 < x <= 1000)
MIN_CANDIDATES = 16_384  # candidate buffer per query: max(8 k, this, k + 128) documents
_CHUNK_BYTES = 16 << 10  # bytes of a query's chunk of scores (L1/L2-resident)
_DENSE_CHUNK_BYTES = 1 << 20  # bytes of the dense rows' chunk (L2-resident across the block's queries)


def stream_block(q: sp.csr_matrix, index, top_k: int, excluded, lo: int, hi: int, results) -> list[int]:
    """Fill ``results[i]`` for the queries of ``lo <= i < hi`` the streaming pass settles; return the others'
    indices."""
    kern = compiled_kernels()
    m = hi - lo
    bt = BlockTerms(q[lo:hi], index)
    terms_w = [query_terms(q, i) for i in range(lo, hi)]
    slack = np.array([2.0 * rounding_bound(index, t, w, int(n)) for (t, w), n in zip(terms_w, bt.n_sum)])
    ex = [np.unique(e) if e is not None else np.zeros(0, np.int64) for e in excluded[lo:hi]]
    ex_ptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum([e.shape[0] for e in ex], out=ex_ptr[1:])
    ex_doc = np.concatenate(ex) if m else np.zeros(0, np.int64)
    n_dense = max(1, index.dense_terms.shape[0])
    chunk = max(256, min(_CHUNK_BYTES // 4, _DENSE_CHUNK_BYTES // (4 * n_dense)))
    cap = max(8 * top_k, MIN_CANDIDATES, top_k + 128)
    heap = np.empty((m, top_k), dtype=np.float32)
    heap_n = np.zeros(m, dtype=np.int64)
    cand_doc = np.empty((m, cap), dtype=np.int64)
    cand_score = np.empty((m, cap), dtype=np.float32)
    cand_n = np.zeros(m, dtype=np.int64)
    overflow = np.zeros(m, dtype=np.bool_)
    kern.stream(index.n_docs, bt.d_ptr, bt.d_slot, bt.d_w, bt.s_ptr, bt.s_term, bt.s_w, index.dense_f32(),
                index.indptr, index.doc_indices, index.weights, ex_ptr, ex_doc, chunk, top_k, slack,
                heap, heap_n, cand_doc, cand_score, cand_n, overflow)
    left = []
    for j in range(m):
        terms, q_w = terms_w[j]
        cut = float(heap[j].min()) - slack[j] if heap_n[j] == top_k else -np.inf
        if terms.shape[0] == 0 or overflow[j] or not (cut > 0 and np.isfinite(cut)):
            left.append(lo + j)
            continue
        n = cand_n[j]
        cand = cand_doc[j, :n][cand_score[j, :n].astype(np.float64) >= cut]  # ascending: appended in order
        scores = np.zeros(cand.shape[0], dtype=np.float64)
        kern.exact(cand, terms, q_w, index.dense_slot, index.dense_weights, index.indptr, index.doc_indices,
                   index.weights, scores)
        keep = scores > 0
        results[lo + j] = select_topk(cand[keep], scores[keep], top_k)
    return left
