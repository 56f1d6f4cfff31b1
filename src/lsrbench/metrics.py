"""Effectiveness (through ir_measures) and efficiency (FLOPs, active dimensions) measures."""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping, Sequence

import ir_measures
import numpy as np
import scipy.sparse as sp

from .errors import InputError

__all__ = ["flops", "mean_active_dims", "evaluate_run", "read_qrels_tsv", "parse_measures"]

QRELS_HEADER = ["query-id", "corpus-id", "score"]
_HEADER_TEXT = "\t".join(QRELS_HEADER)


def _active_counts(matrix: sp.spmatrix | sp.sparray, who: str) -> tuple[np.ndarray, int]:
    """Per-column count of rows with a non-zero weight, and the number of rows."""
    if not sp.issparse(matrix):
        raise ValueError(f"{who}: expected a scipy sparse matrix, got {type(matrix).__name__}")
    csr = sp.csr_matrix(matrix)  # no copy of a CSR matrix: it is only read
    if csr.shape[0] == 0:
        raise ValueError(f"{who}: matrix has no rows")
    # Duplicates would count a term twice in one row (summed on a copy, never in the caller's
    # matrix); stored zeros are not active. Chunk by chunk: no temporary as large as the matrix.
    if not csr.has_canonical_format:
        csr = csr.copy()
        csr.sum_duplicates()
    counts = np.zeros(csr.shape[1], dtype=np.int64)
    for lo in range(0, csr.nnz, 1 << 24):
        active = csr.data[lo : lo + (1 << 24)] != 0
        counts += np.bincount(csr.indices[lo : lo + (1 << 24)][active], minlength=csr.shape[1])
    return counts, csr.shape[0]


def flops(queries: sp.spmatrix | sp.sparray, docs: sp.spmatrix | sp.sparray) -> float:
    """SPLADE's FLOPs: ``sum_j p_q(j) * p_d(j)``, p = fraction of rows with a non-zero on term j.

    Equals the mean, over all query-document pairs, of the number of terms both have active
    (sentence-transformers' ``SparseInformationRetrievalEvaluator`` avg_flops). Stored zeros do
    not count. Computed as an exact integer sum divided once, so it is correctly rounded.
    """
    cq, n_q = _active_counts(queries, "flops")
    cd, n_d = _active_counts(docs, "flops")
    if cq.shape[0] != cd.shape[0]:
        raise ValueError(f"flops: queries have {cq.shape[0]} columns, documents {cd.shape[0]}")
    # Python ints: sum_j cq*cd can exceed 2**63 on large collections.
    shared = sum(int(a) * int(b) for a, b in zip(cq[cq > 0].tolist(), cd[cq > 0].tolist()))
    return shared / (n_q * n_d)


def mean_active_dims(matrix: sp.spmatrix | sp.sparray) -> float:
    """Mean number of non-zero entries per row (stored zeros do not count)."""
    counts, n_rows = _active_counts(matrix, "mean_active_dims")
    return int(counts.sum()) / n_rows


def parse_measures(names: Sequence[str]) -> list[ir_measures.Measure]:
    """Parse measure names with ir_measures; unknown or invalid ones raise ``InputError(None, "measures", ...)``.

    Parameters (cutoff, rel, ...) are only validated when an evaluator is built, so each measure
    is also tried on a one-query toy qrels here, to fail before any real work.
    """
    measures: list[ir_measures.Measure] = []
    for name in names:
        try:
            m = ir_measures.parse_measure(name)
            ir_measures.evaluator([m], {"q": {"d": 1}})
        except Exception as exc:  # ir_measures raises NameError/ValueError/KeyError/AssertionError
            detail = " ".join(str(exc).split()) or type(exc).__name__
            raise InputError(None, "measures", f"unknown or unsupported measure {name!r} ({detail})") from None
        if m not in measures:
            measures.append(m)
    return measures


def evaluate_run(
    run: Mapping[str, Mapping[str, float]],
    qrels: Mapping[str, Mapping[str, int]],
    measures: Sequence[str],
) -> tuple[dict[str, float], list[tuple[str, str, float]]]:
    """Evaluate ``run`` against ``qrels`` with ir_measures.

    Returns ``(aggregate, per_query)``: ``aggregate`` maps each measure name (as ir_measures
    prints it, e.g. ``"nDCG@10"``) to its value; ``per_query`` lists ``(qid, measure, value)``
    sorted by qid then measure order. The population is exactly the queries in ``qrels``: a
    judged query that is absent from the run (or retrieved nothing) scores the measure's default
    (0), and run queries without judgments are ignored, so the mean is over all judged queries
    whatever the provider does with missing queries. Each measure is aggregated by its own
    aggregator (mean for all the usual ones).

    Note that the providers re-sort each query by score and ignore ranks, and break score ties
    differently (pytrec_eval: doc id descending; msmarco, used for RR@k: doc id ascending).
    """
    parsed = parse_measures(measures)
    if not qrels:
        raise ValueError("evaluate_run: qrels is empty")
    qrels = {str(q): {str(d): int(r) for d, r in docs.items()} for q, docs in qrels.items()}
    judged_run = {str(q): {str(d): float(s) for d, s in docs.items()} for q, docs in run.items() if str(q) in qrels}

    values: dict[tuple[str, ir_measures.Measure], float] = {}
    for metric in ir_measures.iter_calc(parsed, qrels, judged_run):
        if metric.query_id in qrels:
            values[(metric.query_id, metric.measure)] = float(metric.value)

    aggregate: dict[str, float] = {}
    per_query: list[tuple[str, str, float]] = []
    aggregators = {m: m.aggregator() for m in parsed}
    for qid in sorted(qrels):
        for m in parsed:
            v = values.get((qid, m), float(m.DEFAULT))
            aggregators[m].add(v)
            per_query.append((qid, str(m), v))
    for m in parsed:
        aggregate[str(m)] = float(aggregators[m].result())
    return aggregate, per_query


def read_qrels_tsv(path: str | os.PathLike) -> dict[str, dict[str, int]]:
    """Read BEIR's ``qrels/<split>.tsv`` (header ``query-id<TAB>corpus-id<TAB>score``).

    Parsed with the same ``csv`` settings as BEIR's ``GenericDataLoader``; a repeated
    (query, document) pair keeps the last score, as there. A wrong header, a row without
    exactly three fields, or a non-integer score raises ``InputError(path, "line N", ...)``.
    """
    path = str(path)
    if not os.path.exists(path):
        raise InputError(path, None, "file not found")
    qrels: dict[str, dict[str, int]] = {}
    reader = None
    try:
        # utf-8-sig: a leading BOM would otherwise make a correct header look wrong.
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
            header = next(reader, None)
            if header != QRELS_HEADER:
                raise InputError(path, "line 1", f"expected header {_HEADER_TEXT!r}, got {header!r}")
            for row in reader:
                if not row:
                    continue
                where = f"line {reader.line_num}"
                if len(row) != 3:
                    raise InputError(path, where, f"expected 3 tab-separated fields, got {len(row)}")
                qid, docid, score = row
                if not qid or not docid:
                    raise InputError(path, where, "empty query-id or corpus-id")
                try:
                    rel = int(score)
                except ValueError:
                    raise InputError(path, where, f"score {score!r} is not an integer") from None
                qrels.setdefault(qid, {})[docid] = rel
    except UnicodeDecodeError as exc:
        raise InputError(path, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except csv.Error as exc:
        line = reader.line_num if reader is not None else "?"
        raise InputError(path, f"line {line}", f"malformed TSV ({exc})") from None
    return qrels
