"""The numba kernels of the exact top-k search, the numpy code's arithmetic in the same order. ``contract``
(FMA) only in the approximate first passes, whose rounding bound holds for any order."""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["block_scores", "candidates", "exhaustive", "exact", "stream_scan"]

_fast = numba.njit(cache=True, nogil=True, fastmath={"contract"})
_jit = numba.njit(cache=True, nogil=True)
_GROUP = 64  # documents per group of the streaming scan: scanned only when its maximum reaches the threshold


@_fast
def dense_rows(r, c0, c1, lo, hi, d_slot, d_w, dense):  # pragma: no cover - compiled
    """r[:c1-c0] = the sum of the dense rows d_slot[lo:hi] (documents c0..c1-1) weighted by d_w, four at a time."""
    n = c1 - c0
    for d in range(n):
        r[d] = 0.0
    j = lo
    while j + 4 <= hi:
        a = dense[d_slot[j], c0:c1]
        b = dense[d_slot[j + 1], c0:c1]
        c = dense[d_slot[j + 2], c0:c1]
        e = dense[d_slot[j + 3], c0:c1]
        wa, wb, wc, we = d_w[j], d_w[j + 1], d_w[j + 2], d_w[j + 3]
        for d in range(n):
            r[d] += a[d] * wa + b[d] * wb + c[d] * wc + e[d] * we
        j += 4
    while j < hi:
        a = dense[d_slot[j], c0:c1]
        wa = d_w[j]
        for d in range(n):
            r[d] += a[d] * wa
        j += 1


@_fast
def block_scores(rows, maxima, size, d_ptr, d_slot, d_w, s_ptr, s_term, s_w, dense, indptr, docs, weights,
                 chunk, chunk2):  # pragma: no cover - compiled
    """``rows[i, d]``: float32 approximate score of document d for query i; ``maxima[i, b]``: max of block b.
    Dense rows and postings are added chunk by chunk so each chunk stays in cache."""
    n_docs = rows.shape[1]
    for c0 in range(0, n_docs, chunk):
        c1 = min(n_docs, c0 + chunk)
        for i in range(rows.shape[0]):
            dense_rows(rows[i, c0:c1], c0, c1, d_ptr[i], d_ptr[i + 1], d_slot, d_w, dense)
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


@_jit
def candidates(row, hot, size, tail_start, cut):  # pragma: no cover - compiled
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


@_jit
def exhaustive(acc, terms, qw, dense_slot, dense, indptr, docs, weights):  # pragma: no cover - compiled
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


@_jit
def exact(cand, terms, qw, dense_slot, dense, indptr, docs, weights, out):  # pragma: no cover - compiled
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


# -- the streaming first pass ----------------------------------------------------------------------
@_fast
def chunk_scores(r, c0, c1, i, d_ptr, d_slot, d_w, s_ptr, s_term, s_w, dense, indptr, docs, weights,
                 cursor):  # pragma: no cover - compiled
    """r[:c1-c0] = float32 approximate scores of documents c0..c1-1 for query i (advances ``cursor``)."""
    dense_rows(r, c0, c1, d_ptr[i], d_ptr[i + 1], d_slot, d_w, dense)
    for j in range(s_ptr[i], s_ptr[i + 1]):
        w = s_w[j]
        p = cursor[j]
        stop = indptr[s_term[j] + 1]
        while p < stop and docs[p] < c1:
            r[docs[p] - c0] += np.float32(weights[p]) * w
            p += 1
        cursor[j] = p


@_jit
def heap_offer(h, hn, top_k, s):  # pragma: no cover - compiled
    """Offer ``s`` to ``h``, a min-heap of the k largest scores so far holding ``hn`` of them; the new count."""
    if hn < top_k:
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
            if small >= top_k:
                break
            if small + 1 < top_k and h[small + 1] < h[small]:
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
def scan_chunk(r, n, c0, i, top_k, slack, heap, heap_n, cand_doc, cand_score, cand_n,  # pragma: no cover - compiled
               thr):
    """Append query i's documents of the chunk with ``0 < s >= t`` (``t`` the heap's k-th score less
    ``slack[i]``) to its candidates; False when they no longer fit."""
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
            hn = heap_offer(h, hn, top_k, s)
            if hn == top_k:
                t = np.float64(h[0]) - slack[i]
    thr[i], heap_n[i], cand_n[i] = t, hn, cn
    return ok


@_fast
def stream_scan(n_docs, d_ptr, d_slot, d_w, s_ptr, s_term, s_w, dense, indptr, docs, weights, ex_ptr, ex_doc,
                chunk, top_k, slack, heap, heap_n, cand_doc, cand_score, cand_n, overflow):  # pragma: no cover - compiled
    """One pass over the documents for a block of queries: chunk scores in a cache-resident buffer, excluded
    documents at -inf, each chunk scanned into a top-k heap and candidates; ``overflow[i]`` when they did not
    fit."""
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
            if not scan_chunk(r, c1 - c0, c0, i, top_k, slack, heap, heap_n, cand_doc, cand_score, cand_n, thr):
                overflow[i] = True
