"""BM25 (Robertson and Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond", 2009)
through ``bm25s``: the reference row of every table, the hard negatives of pseudo-query triplets,
and the NanoBEIR-style pooled evaluation subsets (judged documents plus each query's BM25 top
candidates, as the NanoBEIR collections were built)."""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from lsrbench.data.beir import Dataset

__all__ = ["bm25_topk", "pooled_subset", "bm25_run"]


def bm25_topk(corpus_texts: Sequence[str], query_texts: Sequence[str], k: int,
              k1: float = 0.9, b: float = 0.4) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` BM25 documents for each query, via ``bm25s``.

    Analysis: lower-casing, bm25s' default token pattern (``\\w\\w+``), bm25s' English
    stopword list removed, no stemming; scoring is bm25s' ``lucene`` variant with the given
    ``k1``/``b``. Returns ``(indices, scores)`` of shape ``(len(query_texts), k)``: corpus
    positions (int64) and scores (float32), best first, ties broken by lower corpus
    position, so the result is deterministic. Only documents with a positive score are
    returned: rows with fewer matches are padded with index ``-1`` and score ``0``.
    """
    import bm25s
    import scipy.sparse as sp

    corpus_texts = list(corpus_texts)
    query_texts = list(query_texts)
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    n_docs, n_queries = len(corpus_texts), len(query_texts)
    indices = np.full((n_queries, k), -1, dtype=np.int64)
    scores = np.zeros((n_queries, k), dtype=np.float32)
    if n_docs == 0 or n_queries == 0 or k == 0:
        return indices, scores

    def tokenize(texts):
        return bm25s.tokenize(texts, lower=True, stopwords="en", stemmer=None,
                              return_ids=False, show_progress=False)

    corpus_tokens = tokenize(corpus_texts)
    if not any(corpus_tokens):
        return indices, scores  # no indexable term anywhere: nothing can match
    retriever = bm25s.BM25(k1=k1, b=b, method="lucene")
    retriever.index(corpus_tokens, show_progress=False)
    vocab = retriever.vocab_dict
    table = retriever.scores
    term_doc = sp.csr_matrix(
        (table["data"], table["indices"], table["indptr"]),
        shape=(len(table["indptr"]) - 1, n_docs),
    )

    rows, cols = [], []
    for qi, tokens in enumerate(tokenize(query_texts)):
        for token in tokens:
            token_id = vocab.get(token) if token else None
            if token_id is not None:
                rows.append(qi)
                cols.append(token_id)
    query_term = sp.csr_matrix(
        (np.ones(len(rows), dtype=np.float32), (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
        shape=(n_queries, term_doc.shape[0]),
    )  # duplicate query terms sum up, as in bm25s' own scoring

    kk = min(k, n_docs)
    chunk = max(1, min(512, (1 << 25) // n_docs))
    for start in range(0, n_queries, chunk):
        dense = (query_term[start:start + chunk] @ term_doc).toarray()
        kth = np.partition(dense, n_docs - kk, axis=1)[:, n_docs - kk]
        for r, row in enumerate(dense):
            cand = np.flatnonzero((row >= kth[r]) & (row > 0))
            order = np.lexsort((cand, -row[cand]))[:kk]
            chosen = cand[order]
            indices[start + r, :len(chosen)] = chosen
            scores[start + r, :len(chosen)] = row[chosen]
    return indices, scores


def pooled_subset(dataset: Dataset, depth: int, seed: int = 0) -> Dataset:
    """Shrink the corpus the way NanoBEIR does: judged documents plus BM25 top-``depth``.

    Keeps every document named in the qrels (any relevance, 0 included) and each query's
    top-``depth`` BM25 documents over the full corpus (:func:`bm25_topk`, k1=0.9, b=0.4),
    in original corpus order. Queries and qrels are unchanged. The result is fully
    deterministic; ``seed`` is accepted for interface stability and does not affect it.
    """
    del seed
    if depth < 0:
        raise ValueError(f"depth must be >= 0, got {depth}")
    doc_ids = list(dataset.corpus)
    keep = {doc_id for judged in dataset.qrels.values() for doc_id in judged}
    if depth > 0:
        top, _ = bm25_topk(list(dataset.corpus.values()), list(dataset.queries.values()), depth)
        keep.update(doc_ids[i] for i in np.unique(top[top >= 0]))
    corpus = {doc_id: text for doc_id, text in dataset.corpus.items() if doc_id in keep}
    return replace(dataset, corpus=corpus)


def bm25_run(dataset: Dataset, top_k: int, skip_identical_ids: bool = False) -> dict[str, list[tuple[str, float]]]:
    """The BM25 reference run of a dataset: ``{query id: [(doc id, score), ...]}``, best first, at
    most ``top_k`` documents each; with ``skip_identical_ids`` a document whose id equals the query
    id is never returned and the list is still filled to ``top_k``."""
    doc_ids, query_ids = list(dataset.corpus), list(dataset.queries)
    idx, scores = bm25_topk([dataset.corpus[d] for d in doc_ids], [dataset.queries[q] for q in query_ids], top_k + 1)
    results = {}
    for qi, qid in enumerate(query_ids):
        hits = [(doc_ids[i], float(s)) for i, s in zip(idx[qi], scores[qi])
                if i >= 0 and not (skip_identical_ids and doc_ids[i] == qid)]
        results[qid] = hits[:top_k]
    return results
