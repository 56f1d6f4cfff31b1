"""Exact top-k retrieval by unnormalised dot product over an inverted index, and TREC run files.

Written here rather than borrowed (PISA, Anserini, torch) because it is exact (float64 scores,
no pruning), deterministic (ties broken by document index), needs only numpy/scipy, and can run
shard by shard later: per-shard top-k lists merged by the same (score, index) order give the
same result as one pass.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from .atomic import atomic_open
from .errors import InputError

__all__ = ["InvertedIndex", "exact_topk", "search", "write_trec_run", "read_trec_run"]


class InvertedIndex:
    """Term -> postings (document indices ascending, weights), i.e. the CSC form of a docs matrix."""

    def __init__(self, indptr: np.ndarray, doc_indices: np.ndarray, weights: np.ndarray, n_docs: int):
        """Wrap ready-made CSC arrays; use :meth:`from_csr` to build from a documents matrix."""
        self.indptr = indptr
        self.doc_indices = doc_indices
        self.weights = weights
        self.n_docs = int(n_docs)
        self.vocab_size = int(indptr.shape[0] - 1)

    @classmethod
    def from_csr(cls, docs: sp.spmatrix | sp.sparray) -> "InvertedIndex":
        """Build from a (n_docs x vocab) sparse matrix; duplicates are summed, postings sorted by doc."""
        if not sp.issparse(docs):
            raise ValueError(f"InvertedIndex.from_csr: expected a scipy sparse matrix, got {type(docs).__name__}")
        csc = sp.csc_matrix(docs, copy=True)
        csc.sum_duplicates()
        weights = csc.data
        if weights.dtype not in (np.float32, np.float64):
            weights = weights.astype(np.float64)
        return cls(csc.indptr.astype(np.int64, copy=False), csc.indices, weights, csc.shape[0])

    def postings(self, term: int) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(doc_indices, weights)`` of one term."""
        lo, hi = self.indptr[term], self.indptr[term + 1]
        return self.doc_indices[lo:hi], self.weights[lo:hi]


def _select_topk(cand: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top ``k`` of ``cand`` (ascending doc indices) by score desc, then doc index asc."""
    if cand.shape[0] > k:
        if k == 0:
            return cand[:0], scores[:0]
        cut = cand.shape[0] - k
        kth = np.partition(scores, cut)[cut]  # the k-th largest score
        above = np.flatnonzero(scores > kth)
        # argpartition alone would pick an arbitrary subset of the documents tied at the
        # boundary; taking them in candidate order keeps the lowest doc indices.
        tied = np.flatnonzero(scores == kth)[: k - above.shape[0]]
        keep = np.concatenate([above, tied])
        cand, scores = cand[keep], scores[keep]
    order = np.lexsort((cand, -scores))
    return cand[order], scores[order]


def exact_topk(
    queries: sp.spmatrix | sp.sparray,
    index: InvertedIndex,
    k: int,
    exclude: Sequence[Iterable[int] | None] | None = None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Exact top-``k`` documents of each query row by dot product.

    Returns one ``(doc_indices int64, scores float64)`` pair per query row, ordered by score
    descending then doc index ascending. A query gets at most ``k`` results and only documents
    with score > 0: an inverted index never visits documents that share no term with the query,
    so fewer than ``k`` (none for an empty query) is normal. Scores are accumulated in float64
    from float32 products, which float64 represents exactly, so results do not depend on how the
    postings are stored. ``exclude[i]`` holds document indices never returned for query ``i``.
    """
    if not sp.issparse(queries):
        raise ValueError(f"exact_topk: expected a scipy sparse matrix, got {type(queries).__name__}")
    if k < 0:
        raise ValueError(f"exact_topk: k must be >= 0, got {k}")
    q = sp.csr_matrix(queries, copy=True)
    q.sum_duplicates()
    if q.shape[1] != index.vocab_size:
        raise ValueError(f"exact_topk: queries have {q.shape[1]} columns, index vocabulary is {index.vocab_size}")
    if exclude is not None and len(exclude) != q.shape[0]:
        raise ValueError(f"exact_topk: {len(exclude)} exclude sets for {q.shape[0]} queries")

    n_docs = index.n_docs
    results: list[tuple[np.ndarray, np.ndarray]] = []
    for i in range(q.shape[0]):
        lo, hi = q.indptr[i], q.indptr[i + 1]
        terms = q.indices[lo:hi]
        q_w = q.data[lo:hi].astype(np.float64)
        nz = q_w != 0
        terms, q_w = terms[nz], q_w[nz]
        if terms.shape[0] == 0 or n_docs == 0:
            results.append((np.zeros(0, np.int64), np.zeros(0, np.float64)))
            continue
        starts, ends = index.indptr[terms], index.indptr[terms + 1]
        lengths = ends - starts
        total = int(lengths.sum())
        # Flat positions of all postings of the query's terms, without a Python loop per term.
        pos = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(total, dtype=np.int64)
        contrib = index.weights[pos].astype(np.float64) * np.repeat(q_w, lengths)
        # A dense accumulator costs O(n_docs) per query, but the postings touched number
        # about FLOPs x n_docs anyway, so sparse bookkeeping would not be cheaper.
        acc = np.bincount(index.doc_indices[pos], weights=contrib, minlength=n_docs)
        if exclude is not None and exclude[i]:
            ex = np.fromiter(exclude[i], dtype=np.int64)
            if ex.size and (ex.min() < 0 or ex.max() >= n_docs):
                raise ValueError(f"exact_topk: exclude[{i}] has a document index outside [0, {n_docs})")
            acc[ex] = 0.0
        cand = np.flatnonzero(acc > 0)
        results.append(_select_topk(cand.astype(np.int64, copy=False), acc[cand], k))
    return results


def search(
    queries: sp.spmatrix | sp.sparray,
    query_ids: Sequence[str],
    docs: sp.spmatrix | sp.sparray,
    doc_ids: Sequence[str],
    k: int = 1000,
    skip_identical_ids: bool = False,
) -> dict[str, list[tuple[str, float]]]:
    """Retrieve the top ``k`` documents of every query; return ``{qid: [(docid, score), ...]}``.

    Every query id is a key, with an empty list when nothing scored > 0. With
    ``skip_identical_ids`` a document whose id equals the query id is never returned and the
    list is still filled to ``k`` (BEIR's behaviour on ArguAna and Quora).
    """
    if len(query_ids) != queries.shape[0]:
        raise ValueError(f"search: {len(query_ids)} query ids for {queries.shape[0]} query rows")
    if len(doc_ids) != docs.shape[0]:
        raise ValueError(f"search: {len(doc_ids)} doc ids for {docs.shape[0]} document rows")
    if len(set(query_ids)) != len(query_ids):
        raise ValueError("search: duplicate query ids")
    exclude = None
    if skip_identical_ids:
        doc_pos = {d: j for j, d in enumerate(doc_ids)}
        exclude = [{doc_pos[qid]} if qid in doc_pos else None for qid in query_ids]
    hits = exact_topk(queries, InvertedIndex.from_csr(docs), k, exclude)
    return {
        qid: [(doc_ids[j], float(s)) for j, s in zip(idx.tolist(), scores.tolist())]
        for qid, (idx, scores) in zip(query_ids, hits)
    }


def _check_token(value: str, what: str) -> str:
    """Return ``value`` as str; raise ValueError if it would break the whitespace-separated format."""
    value = str(value)
    if not value or any(c.isspace() for c in value):
        raise ValueError(f"write_trec_run: {what} {value!r} is empty or contains whitespace")
    return value


def write_trec_run(path: str | os.PathLike, results: Mapping[str, Sequence[tuple[str, float]]], tag: str) -> None:
    """Write a 6-column TREC run (``qid Q0 docid rank score tag``) atomically.

    Each query's documents are stably sorted by score descending (given order kept among ties)
    and ranked from 1, so the rank column agrees with what trec_eval re-derives from scores.
    Scores are written with ``repr`` (shortest round-trip form), so reading them back gives the
    identical float64. Non-finite scores and whitespace in ids or tag raise ``ValueError``.
    """
    tag = _check_token(tag, "tag")
    with atomic_open(path, "w", encoding="utf-8", newline="\n") as fh:
        for qid, docs in results.items():
            qid = _check_token(qid, "query id")
            ranked = sorted(((str(d), float(s)) for d, s in docs), key=lambda ds: -ds[1])
            seen: set[str] = set()
            for rank, (docid, score) in enumerate(ranked, start=1):
                _check_token(docid, "document id")
                if not math.isfinite(score):
                    raise ValueError(f"write_trec_run: non-finite score for {qid}/{docid}")
                if docid in seen:
                    raise ValueError(f"write_trec_run: document {docid!r} twice for query {qid!r}")
                seen.add(docid)
                fh.write(f"{qid} Q0 {docid} {rank} {score!r} {tag}\n")


def read_trec_run(path: str | os.PathLike) -> dict[str, dict[str, float]]:
    """Read a 6-column TREC run into ``{qid: {docid: score}}``.

    Blank lines are skipped; anything else that is not ``qid Q0 docid rank score tag`` with an
    integer rank and a finite score, or repeats a (qid, docid) pair, raises
    ``InputError(path, "line N", ...)``.
    """
    path = str(path)
    if not os.path.exists(path):
        raise InputError(path, None, "file not found")
    run: dict[str, dict[str, float]] = {}
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, start=1):
                fields = line.split()
                if not fields:
                    continue
                where = f"line {n}"
                if len(fields) != 6:
                    raise InputError(path, where, f"expected 6 columns 'qid Q0 docid rank score tag', got {len(fields)}")
                qid, _, docid, rank, score_s, _ = fields
                try:
                    int(rank)
                except ValueError:
                    raise InputError(path, where, f"rank {rank!r} is not an integer") from None
                try:
                    score = float(score_s)
                except ValueError:
                    raise InputError(path, where, f"score {score_s!r} is not a number") from None
                if not math.isfinite(score):
                    raise InputError(path, where, f"score {score_s!r} is not finite")
                docs = run.setdefault(qid, {})
                if docid in docs:
                    raise InputError(path, where, f"document {docid!r} repeated for query {qid!r}")
                docs[docid] = score
    except UnicodeDecodeError as exc:
        raise InputError(path, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return run
