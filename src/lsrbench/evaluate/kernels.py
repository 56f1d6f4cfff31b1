"""Compiled kernels of the exact top-k search (:mod:`lsrbench.evaluate.retrieval`), through numba
when it is installed: the same arithmetic as the numpy code they replace, in the same order, one
pass instead of several array temporaries, so the results are identical with or without numba.
Set ``LSRBENCH_NUMBA=0`` to use numpy only."""

from __future__ import annotations

import os

import numpy as np

__all__ = ["kernels"]

# The same arithmetic as the numpy code they replace, in the same order, one pass instead of
# several array temporaries: the results are identical with or without numba. Set
# LSRBENCH_NUMBA=0 to use numpy only.

_COMPILED = None


def kernels():
    """The compiled kernels (compiled on first use, cached on disk), or None."""
    global _COMPILED
    if _COMPILED is None:
        _COMPILED = False
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
                from lsrbench.evaluate.stream_kernels import stream_scan

                _COMPILED = SimpleNamespace(block_scores=fast(_k_block_scores), exact=jit(_k_exact),
                                           exhaustive=jit(_k_exhaustive), candidates=jit(_k_candidates),
                                           stream=stream_scan)
    return _COMPILED or None


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
