"""Compiled kernels of the streaming first pass (:mod:`lsrbench.evaluate.stream`). Imported only by
:func:`lsrbench.evaluate.kernels.kernels` when numba is present and enabled; there is no numpy twin
(without numba the search takes the score-rows pass, with the same results).

A chunk's approximate scores use the arithmetic of ``kernels._k_block_scores`` (dense rows four at
a time, then postings through per-term cursors, float32, contraction allowed): the rounding bound
of :func:`lsrbench.evaluate.topk.rounding_bound` holds for any order of the sum anyway.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["stream_scan"]

_fast = numba.njit(cache=True, nogil=True, fastmath={"contract"})
_jit = numba.njit(cache=True, nogil=True)
_GROUP = 64  # documents per group: a group is scanned only when its maximum reaches the threshold


@_fast
def chunk_scores(r, c0, c1, i, d_ptr, d_slot, d_w, s_ptr, s_term, s_w, dense, indptr, docs, weights,
                 cursor):  # pragma: no cover - compiled
    """r[:c1-c0] = float32 approximate scores of documents c0..c1-1 for query i (advances ``cursor``)."""
    n = c1 - c0
    for d in range(n):
        r[d] = 0.0
    j = d_ptr[i]
    end = d_ptr[i + 1]
    while j + 4 <= end:
        a = dense[d_slot[j], c0:c1]
        b = dense[d_slot[j + 1], c0:c1]
        c = dense[d_slot[j + 2], c0:c1]
        e = dense[d_slot[j + 3], c0:c1]
        wa, wb, wc, we = d_w[j], d_w[j + 1], d_w[j + 2], d_w[j + 3]
        for d in range(n):
            r[d] += a[d] * wa + b[d] * wb + c[d] * wc + e[d] * we
        j += 4
    while j < end:
        a = dense[d_slot[j], c0:c1]
        wa = d_w[j]
        for d in range(n):
            r[d] += a[d] * wa
        j += 1
    for j in range(s_ptr[i], s_ptr[i + 1]):
        w = s_w[j]
        p = cursor[j]
        stop = indptr[s_term[j] + 1]
        while p < stop and docs[p] < c1:
            r[docs[p] - c0] += np.float32(weights[p]) * w
            p += 1
        cursor[j] = p


@_jit
def heap_offer(h, hn, k, s):  # pragma: no cover - compiled
    """Offer ``s`` to ``h``, a min-heap of the k largest scores so far holding ``hn`` of them; the new count."""
    if hn < k:
        x = hn
        h[x] = s
        while x > 0:
            parent = (x - 1) // 2
            if h[parent] <= h[x]:
                break
            h[parent], h[x] = h[x], h[parent]
            x = parent
        return hn + 1
    if s > h[0]:
        h[0] = s
        x = 0
        while True:
            small = 2 * x + 1
            if small >= k:
                break
            if small + 1 < k and h[small + 1] < h[small]:
                small += 1
            if h[small] >= h[x]:
                break
            h[small], h[x] = h[x], h[small]
            x = small
    return hn


@_jit
def compact(cand_doc, cand_score, i, n, t):  # pragma: no cover - compiled
    """Keep query i's candidates scoring >= t (in order); their number."""
    w = 0
    for x in range(n):
        if cand_score[i, x] >= t:
            cand_doc[i, w] = cand_doc[i, x]
            cand_score[i, w] = cand_score[i, x]
            w += 1
    return w


@_jit
def scan_chunk(r, n, c0, i, k, slack, heap, heap_n, cand_doc, cand_score, cand_n, thr):  # pragma: no cover - compiled
    """Append query i's documents of the chunk with ``0 < s >= t`` to its candidates, where ``t`` =
    (the k-th largest approximate score so far) - ``slack[i]`` rises as the heap fills; False when
    its candidates no longer fit (even after compaction)."""
    cap = cand_doc.shape[1]
    t, hn, cn, h = thr[i], heap_n[i], cand_n[i], heap[i]
    ok = True
    for g0 in range(0, n, _GROUP):
        g1 = min(n, g0 + _GROUP)
        gm = r[g0]
        for d in range(g0 + 1, g1):
            gm = max(gm, r[d])
        if not (gm > 0 and gm >= t):
            continue
        if cn + _GROUP > cap:
            cn = compact(cand_doc, cand_score, i, cn, t)
            if cn + _GROUP > cap:
                ok = False
                break
        for d in range(g0, g1):
            s = r[d]
            if not (s > 0 and s >= t):
                continue
            cand_doc[i, cn] = c0 + d
            cand_score[i, cn] = s
            cn += 1
            hn = heap_offer(h, hn, k, s)
            if hn == k:
                t = np.float64(h[0]) - slack[i]
    thr[i], heap_n[i], cand_n[i] = t, hn, cn
    return ok


@_fast
def stream_scan(n_docs, d_ptr, d_slot, d_w, s_ptr, s_term, s_w, dense, indptr, docs, weights, ex_ptr, ex_doc,
                chunk, k, slack, heap, heap_n, cand_doc, cand_score, cand_n, overflow):  # pragma: no cover - compiled
    """One pass over the documents, chunk by chunk, for a block of queries (terms as in
    :class:`lsrbench.evaluate.topk.BlockTerms`): each query's chunk scores are computed in a
    cache-resident buffer, its excluded documents (``ex_doc[ex_ptr[i]:ex_ptr[i+1]]``, ascending)
    set to -inf, and the chunk scanned (:func:`scan_chunk`). ``heap[i]`` ends with the k largest
    approximate scores (``heap_n[i]`` of them), ``cand_*[i, :cand_n[i]]`` with the candidates in
    ascending document order; ``overflow[i]`` marks a query whose candidates did not fit."""
    r = np.empty(chunk, dtype=np.float32)
    cursor = np.empty(s_term.shape[0], dtype=np.int64)
    for j in range(s_term.shape[0]):
        cursor[j] = indptr[s_term[j]]
    ex_cur = ex_ptr[:-1].copy()
    thr = np.full(d_ptr.shape[0] - 1, -np.inf)
    for c0 in range(0, n_docs, chunk):
        c1 = min(n_docs, c0 + chunk)
        for i in range(d_ptr.shape[0] - 1):
            if overflow[i]:
                continue
            chunk_scores(r, c0, c1, i, d_ptr, d_slot, d_w, s_ptr, s_term, s_w, dense, indptr, docs, weights, cursor)
            p = ex_cur[i]
            while p < ex_ptr[i + 1] and ex_doc[p] < c1:
                r[ex_doc[p] - c0] = -np.inf
                p += 1
            ex_cur[i] = p
            if not scan_chunk(r, c1 - c0, c0, i, k, slack, heap, heap_n, cand_doc, cand_score, cand_n, thr):
                overflow[i] = True
