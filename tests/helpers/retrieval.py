"""The reference every retrieval test compares with: exact top-k by brute force in float64."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

WEIGHTS = np.array([0.5, 1.0, 1.5, 2.0], dtype=np.float32)


def random_sparse(rng, n_rows, vocab, density):
    """Sparse float32 matrix with weights from a small set, so that many dot products tie exactly."""
    mask = rng.random((n_rows, vocab)) < density
    dense = np.where(mask, rng.choice(WEIGHTS, size=(n_rows, vocab)), 0).astype(np.float32)
    return sp.csr_matrix(dense)


def brute_force(Q, D, k, exclude=None):
    """Exact top-k by float64 dense products: ties by lower document index, only scores > 0."""
    scores = Q.toarray().astype(np.float64) @ D.toarray().astype(np.float64).T
    out = []
    for i, row in enumerate(scores):
        if exclude is not None and exclude[i]:
            row = row.copy()
            row[list(exclude[i])] = 0.0
        idx = np.arange(row.shape[0])
        order = np.lexsort((idx, -row))
        order = order[row[order] > 0][:k]
        out.append((order, row[order]))
    return out


def assert_same_topk(got, want):
    assert len(got) == len(want)
    for (gi, gs), (wi, ws) in zip(got, want):
        np.testing.assert_array_equal(gi, wi)
        np.testing.assert_array_equal(gs, ws)  # exact: all partial sums are representable
