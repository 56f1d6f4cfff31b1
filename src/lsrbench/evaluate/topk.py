"""What both first passes of the exact search share: the final selection and its tie rule, a query's terms, and
the rounding bound that makes the float32 pass safe."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["EMPTY", "select_topk", "query_terms", "BlockTerms", "rounding_bound"]

EMPTY = (np.zeros(0, np.int64), np.zeros(0, np.float64))
_U32 = float(np.finfo(np.float32).eps) / 2
_U64 = float(np.finfo(np.float64).eps) / 2


def select_topk(cand: np.ndarray, scores: np.ndarray, top_k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top ``top_k`` of ``cand`` (ascending doc indices) by score desc, then doc index asc."""
    if cand.shape[0] > top_k:
        if top_k == 0:
            return cand[:0], scores[:0]
        cut = cand.shape[0] - top_k
        kth = np.partition(scores, cut)[cut]  # the k-th largest score
        above = np.flatnonzero(scores > kth)
        # Ties at the boundary are taken in candidate order, keeping the lowest doc indices (argpartition would not).
        tied = np.flatnonzero(scores == kth)[: top_k - above.shape[0]]
        keep = np.concatenate([above, tied])
        cand, scores = cand[keep], scores[keep]
    order = np.lexsort((cand, -scores))
    return cand[order], scores[order]


def query_terms(q: sp.csr_matrix, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Row ``i``'s term ids (int64, ascending) and float64 weights, explicit zeros dropped."""
    lo, hi = q.indptr[i], q.indptr[i + 1]
    terms = q.indices[lo:hi].astype(np.int64)
    q_w = q.data[lo:hi].astype(np.float64)
    nz = q_w != 0
    return terms[nz], q_w[nz]


class BlockTerms:
    """A block of queries' terms split into dense rows (``d_slot``) and postings (``s_term``), float32
    weights."""

    def __init__(self, qb: sp.csr_matrix, index):
        m = qb.shape[0]
        terms = qb.indices.astype(np.int64)
        slots = index.dense_slot[terms]
        is_dense = slots >= 0
        per_row = np.repeat(np.arange(m), np.diff(qb.indptr))
        self.d_ptr = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(np.bincount(per_row[is_dense], minlength=m), out=self.d_ptr[1:])
        self.s_ptr = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(np.bincount(per_row[~is_dense], minlength=m), out=self.s_ptr[1:])
        w32 = qb.data.astype(np.float32)
        self.d_slot, self.d_w = slots[is_dense], w32[is_dense]
        self.s_term, self.s_w = terms[~is_dense], w32[~is_dense]
        # Terms in each float32 sum of the compiled passes (+ the rounding of w and q).
        self.n_sum = np.diff(qb.indptr) + 4


def rounding_bound(index, terms: np.ndarray, q_w: np.ndarray, n_sum: int) -> float:
    """``delta``: the float32 first pass is within ``gamma_n * sum_t |q_t| max|w_t|`` of the real score and the
    float64 sum within ``gamma_m``; twice their sum bounds ``|approximate - exact|``."""
    bound = float(np.dot(np.abs(q_w), index.term_absmax[terms]))
    return 2.0 * (_gamma(n_sum, _U32) + _gamma(terms.shape[0] + 1, _U64)) * bound


def _gamma(n: int, u: float) -> float:
    return n * u / (1.0 - n * u)
