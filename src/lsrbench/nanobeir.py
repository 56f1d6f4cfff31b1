"""NanoBEIR: the 13 Nano datasets and FLOPs pooled across them as sentence-transformers does.

The datasets are entries of ``config/datasets.yaml`` (``NanoClimateFEVER`` ... ``NanoTouche2020``,
``source: hf``, the zeta-alpha-ai repositories at the revisions mteb's ``Nano*Retrieval`` tasks
pin, split ``train``), loaded by :func:`lsrbench.data.load_hf_dataset`. Their names are the
``Nano<Name>`` names of sentence-transformers' ``NanoBEIREvaluator``
(``DATASET_NAME_TO_HUMAN_READABLE``), listed in :data:`NANOBEIR_DATASETS`.

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

__all__ = ["NANOBEIR_DATASETS", "pooled_flops", "pooled_active_dims", "active_counts"]

# sentence-transformers' NanoBEIREvaluator names (DATASET_NAME_TO_HUMAN_READABLE, prefixed "Nano"),
# in its order; each is an entry of config/datasets.yaml.
NANOBEIR_DATASETS = (
    "NanoClimateFEVER", "NanoDBPedia", "NanoFEVER", "NanoFiQA2018", "NanoHotpotQA", "NanoMSMARCO",
    "NanoNFCorpus", "NanoNQ", "NanoQuoraRetrieval", "NanoSCIDOCS", "NanoArguAna", "NanoSciFact",
    "NanoTouche2020",
)


def active_counts(matrix) -> tuple[np.ndarray, int]:
    """``(count vector, rows)``: per column, the number of rows with a non-zero value (stored
    zeros do not count), as sentence-transformers' ``compute_count_vector``; int64."""
    m = sp.csr_matrix(matrix)
    nz = m.data != 0
    counts = np.bincount(m.indices[nz], minlength=m.shape[1]).astype(np.int64)
    return counts, m.shape[0]


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
        raise ValueError("pooled_flops needs at least one dataset")
    return total, rows


def pooled_flops(per_dataset: Sequence[tuple[sp.spmatrix, sp.spmatrix]]) -> float:
    """FLOPs pooled across datasets exactly as ``SparseNanoBEIREvaluator`` pools them.

    ``per_dataset``: one ``(queries_csr, docs_csr)`` per dataset (rows = encoded queries /
    documents, columns = vocabulary). Returns ``sum_j (CQ(j) / NQ) * (CD(j) / ND)`` with ``CQ``,
    ``CD`` the count vectors summed over all datasets and ``NQ``, ``ND`` the total numbers of
    queries and documents: not the mean of the per-dataset FLOPs. Exact (integer arithmetic,
    one division). A side with no rows at all gives 0.0.
    """
    per_dataset = list(per_dataset)
    cq, nq = _pooled_counts([q for q, _ in per_dataset], "queries")
    cd, nd = _pooled_counts([d for _, d in per_dataset], "documents")
    if cq.shape[0] != cd.shape[0]:
        raise ValueError(f"queries have {cq.shape[0]} columns, documents {cd.shape[0]}")
    if nq == 0 or nd == 0:
        return 0.0
    shared = sum(int(a) * int(b) for a, b in zip(cq.tolist(), cd.tolist()) if a and b)
    return float(Fraction(shared, nq * nd))


def pooled_active_dims(matrices: Sequence[sp.spmatrix]) -> float:
    """Mean active dims over all rows of all datasets: ``SparseNanoBEIREvaluator``'s
    row-weighted mean of the per-dataset ``query_active_dims`` / ``corpus_active_dims``."""
    counts, rows = _pooled_counts(list(matrices), "matrix")
    return float(Fraction(int(counts.sum()), rows)) if rows else 0.0
