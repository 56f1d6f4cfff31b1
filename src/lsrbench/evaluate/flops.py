"""SPLADE's FLOPs (``sum_j p_q(j) p_d(j)``) and mean active dims, per dataset and pooled as
``SparseNanoBEIREvaluator`` pools them (count vectors summed, not a mean of FLOPs); exact integer sums divided
once."""

from __future__ import annotations

from fractions import Fraction
from typing import Sequence

import numpy as np
import scipy.sparse as sp

__all__ = ["NANOBEIR_DATASETS", "active_counts", "flops", "mean_active_dims", "pooled_flops", "pooled_active_dims"]

# sentence-transformers' NanoBEIREvaluator names (DATASET_NAME_TO_HUMAN_READABLE, prefixed "Nano"),
# in its order; each is an entry of config/datasets.yaml.
NANOBEIR_DATASETS = (
    "NanoClimateFEVER", "NanoDBPedia", "NanoFEVER", "NanoFiQA2018", "NanoHotpotQA", "NanoMSMARCO",
    "NanoNFCorpus", "NanoNQ", "NanoQuoraRetrieval", "NanoSCIDOCS", "NanoArguAna", "NanoSciFact",
    "NanoTouche2020",
)
_CHUNK = 1 << 24


def active_counts(matrix) -> tuple[np.ndarray, int]:
    """``(count vector, rows)``: per column the rows with a non-zero value (duplicates once, stored zeros not),
    chunk by chunk."""
    if not sp.issparse(matrix):
        raise ValueError(f"expected a scipy sparse matrix, got {type(matrix).__name__}")
    csr = sp.csr_matrix(matrix)  # no copy of a CSR matrix: it is only read
    if not csr.has_canonical_format:
        csr = csr.copy()
        csr.sum_duplicates()
    counts = np.zeros(csr.shape[1], dtype=np.int64)
    for lo in range(0, csr.nnz, _CHUNK):
        active = csr.data[lo : lo + _CHUNK] != 0
        counts += np.bincount(csr.indices[lo : lo + _CHUNK][active], minlength=csr.shape[1])
    return counts, csr.shape[0]


def _pooled_counts(matrices: Sequence, what: str) -> tuple[np.ndarray, int]:
    total, rows, width = None, 0, None
    for i, m in enumerate(matrices):
        counts, n = active_counts(m)
        if width is None:
            width, total = counts.shape[0], counts.copy()
        elif counts.shape[0] != width:
            raise ValueError(f"{what} #{i + 1} has {counts.shape[0]} columns, the first has {width}: "
                             "all datasets must be encoded by one model (one vocabulary)")
        else:
            total += counts
        rows += n
    if total is None:
        raise ValueError(f"{what}: at least one matrix is needed")
    return total, rows


def pooled_flops(per_dataset: Sequence[tuple[sp.spmatrix, sp.spmatrix]]) -> float:
    """FLOPs pooled across datasets as ``SparseNanoBEIREvaluator`` pools them: ``sum_j (CQ(j) / NQ) * (CD(j) /
    ND)`` over all ``(queries_csr, docs_csr)`` pairs; 0.0 for an empty side."""
    per_dataset = list(per_dataset)
    cq, nq = _pooled_counts([q for q, _ in per_dataset], "queries")
    cd, nd = _pooled_counts([d for _, d in per_dataset], "documents")
    if cq.shape[0] != cd.shape[0]:
        raise ValueError(f"queries have {cq.shape[0]} columns, documents {cd.shape[0]}")
    if nq == 0 or nd == 0:
        return 0.0
    # Python ints: sum_j cq*cd can exceed 2**63 on large collections.
    both = (cq > 0) & (cd > 0)
    shared = sum(int(a) * int(b) for a, b in zip(cq[both].tolist(), cd[both].tolist()))
    return float(Fraction(shared, nq * nd))


def pooled_active_dims(matrices: Sequence[sp.spmatrix]) -> float:
    """Mean active dims over all rows of all datasets: ``SparseNanoBEIREvaluator``'s row-weighted
    mean of the per-dataset ``query_active_dims`` / ``corpus_active_dims``."""
    counts, rows = _pooled_counts(list(matrices), "matrix")
    return float(Fraction(int(counts.sum()), rows)) if rows else 0.0


def flops(queries, docs) -> float:
    """SPLADE's FLOPs of one dataset: :func:`pooled_flops` of that dataset alone (the same number
    as sentence-transformers' ``SparseInformationRetrievalEvaluator`` avg_flops)."""
    for who, m in (("queries", queries), ("documents", docs)):
        if sp.issparse(m) and m.shape[0] == 0:
            raise ValueError(f"flops: {who} matrix has no rows")
    return pooled_flops([(queries, docs)])


def mean_active_dims(matrix) -> float:
    """Mean number of non-zero entries per row (stored zeros do not count)."""
    if sp.issparse(matrix) and matrix.shape[0] == 0:
        raise ValueError("mean_active_dims: matrix has no rows")
    return pooled_active_dims([matrix])
