"""Efficiency measures of sparse vectors: SPLADE's FLOPs (Formal et al., "SPLADE: Sparse Lexical and
Expansion Model for First Stage Ranking", SIGIR 2021; the FLOPS regulariser's quantity, Paria et
al., ICLR 2020) and mean active dimensions, per dataset and pooled over the NanoBEIR datasets as
sentence-transformers' ``SparseNanoBEIREvaluator`` pools them.

FLOPs: ``sum_j p_q(j) p_d(j)``, p = fraction of rows with a non-zero weight on term j: the mean,
over all query-document pairs, of the number of terms both have active. Stored zeros do not
count. Every number here is an exact integer sum divided once, so it is correctly rounded.

How ``SparseNanoBEIREvaluator`` (sentence-transformers 6.2,
``sparse_encoder/evaluation/sparse_nano_beir.py``) reports FLOPs
-----------------------------------------------------------------------------------------------
Per dataset, its ``SparseInformationRetrievalEvaluator`` keeps, for queries and for the corpus,
a *count vector* (``util.compute_count_vector``: for each vocabulary term, the number of encoded
rows with a non-zero weight on it) and the number of rows encoded (``count_lengths``). Its
``avg_flops`` is ``dot(count_query / n_query, count_corpus / n_corpus)``: ``sum_j p_q(j) p_d(j)``,
the same number as :func:`lsrbench.metrics.flops`.

Across the datasets, ``SparseNanoBEIREvaluator.__call__`` does **not** average the 13 per-dataset
FLOPs ("a weighted mean would not be accurate", its comment says). It sums the count vectors
of all datasets (``total_query_count``, ``total_corpus_count``), divides them by the total
number of queries and the total number of documents over all datasets
(``sum(len(evaluator.queries))``, ``sum(len(evaluator.corpus))``), and takes the dot product::

    pooled = sum_j (sum_i cq_i(j) / sum_i nq_i) * (sum_i cd_i(j) / sum_i nd_i)

i.e. the FLOPs of one collection made of all 13 query sets and all 13 corpora, where every query
is scored against every document of every dataset. The queries counted are the evaluator's
(only judged queries with non-empty text, which is what lsrbench's datasets hold), the
documents its corpus (non-empty text). Query and document vectors of all datasets must share one
vocabulary (one model). sentence-transformers computes this in float32 (int32 counts divided
by a Python int, then ``torch.dot``); :func:`pooled_flops` computes the same quantity exactly
(integer sums, one division), so the two agree to float32 rounding.

The other pooled sparsity statistics (``query_active_dims``, ``corpus_active_dims`` and the
sparsity ratios) are the per-dataset values weighted by the number of queries / documents,
which equals the mean active dims over all rows pooled: :func:`pooled_active_dims`.
"""

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
    """``(count vector, rows)``: per column, the number of rows with a non-zero value, as
    sentence-transformers' ``compute_count_vector`` (int64). Duplicates in a non-canonical matrix
    count once (summed on a copy, never in the caller's matrix); stored zeros do not count. Chunk
    by chunk: no temporary as large as the matrix."""
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
    """FLOPs pooled across datasets exactly as ``SparseNanoBEIREvaluator`` pools them.

    ``per_dataset``: one ``(queries_csr, docs_csr)`` per dataset (rows = encoded queries /
    documents, columns = vocabulary). Returns ``sum_j (CQ(j) / NQ) * (CD(j) / ND)`` with ``CQ``,
    ``CD`` the count vectors summed over all datasets and ``NQ``, ``ND`` the total numbers of
    queries and documents: not the mean of the per-dataset FLOPs. A side with no rows at all gives 0.0.
    """
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
