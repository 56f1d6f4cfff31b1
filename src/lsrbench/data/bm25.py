"""BM25 through ``bm25s``: the reference row (analyzer ``anserini``: Lucene's EnglishAnalyzer as Anserini builds
it, written here because no Python package ships it; checked against Lucene), pseudo-query negatives and pooled
subsets (bm25s' own analysis)."""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Sequence

import numpy as np

from lsrbench.data.beir import Dataset

__all__ = ["bm25_topk", "pooled_subset", "bm25_run", "lucene_english_tokens", "LUCENE_ENGLISH_STOP_WORDS", "ANALYZERS"]

# Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET (the set Anserini's default analyzer removes).
LUCENE_ENGLISH_STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these "
    "they this to was will with".split())
ANALYZERS = ("anserini", "bm25s")
_MAX_TOKEN = 255  # StandardTokenizer's default maxTokenLength: longer tokens are cut into pieces
_APOSTROPHES = ("'", "\u2019", "\uff07")


@functools.lru_cache(maxsize=1)
def _stemmer():
    from nltk.stem.porter import PorterStemmer

    return PorterStemmer(mode=PorterStemmer.MARTIN_EXTENSIONS)


@functools.lru_cache(maxsize=1 << 20)  # a corpus repeats its words: stem each distinct one once
def _porter(token: str) -> str:
    return _stemmer().stem(token, to_lowercase=False)


def _lower(token: str) -> str:
    """Java's Character.toLowerCase per character (no final-sigma rule, one char per char)."""
    return "".join(low if len(low := c.lower()) == 1 else ("i" if c == "\u0130" else c) for c in token)


def _segments(text: str) -> list[str]:
    """UAX#29 word segments, except that a run of Thai, Lao, Khmer or Myanmar letters stays one
    segment (StandardTokenizer's SOUTHEAST_ASIAN tokens)."""
    import regex

    merged: list[str] = []
    south_east_asian = regex.compile(r"[\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}]+")
    for segment in regex.split(r"(?wV1)\b", text):
        if merged and south_east_asian.fullmatch(segment) and south_east_asian.fullmatch(merged[-1]):
            merged[-1] += segment
        else:
            merged.append(segment)
    return merged


def lucene_english_tokens(text: str) -> list[str]:
    """The terms Lucene's EnglishAnalyzer (Anserini's default) makes of ``text``."""
    import regex

    out = []
    for segment in _segments(text):
        if not regex.search(r"[\p{L}\p{Nd}]", segment):
            continue  # spaces and punctuation between words
        for lo in range(0, len(segment), _MAX_TOKEN):
            token = segment[lo:lo + _MAX_TOKEN]
            if len(token) >= 2 and token[-2] in _APOSTROPHES and token[-1] in "sS":
                token = token[:-2]  # EnglishPossessiveFilter
            token = _lower(token)
            if token and token not in LUCENE_ENGLISH_STOP_WORDS:
                out.append(_porter(token))
    return out


def _tokenize(texts: list[str], analyzer: str) -> list[list[str]]:
    if analyzer == "anserini":
        return [lucene_english_tokens(t) for t in texts]
    if analyzer != "bm25s":
        raise ValueError(f"unknown BM25 analyzer {analyzer!r} (one of {', '.join(ANALYZERS)})")
    import bm25s

    return bm25s.tokenize(texts, lower=True, stopwords="en", stemmer=None, return_ids=False, show_progress=False)


def bm25_topk(corpus_texts: Sequence[str], query_texts: Sequence[str], top_k: int,
              k1: float = 0.9, b: float = 0.4, analyzer: str = "bm25s") -> tuple[np.ndarray, np.ndarray]:
    """Top-``top_k`` BM25 documents per query (``bm25s`` ``lucene`` scoring): ``(indices, scores)``, best first,
    ties by corpus position, padded with -1 and 0 past the positive scores."""
    import bm25s
    import scipy.sparse as sp

    corpus_texts = list(corpus_texts)
    query_texts = list(query_texts)
    if top_k < 0:
        raise ValueError(f"top_k must be >= 0, got {top_k}")
    n_docs, n_queries = len(corpus_texts), len(query_texts)
    indices = np.full((n_queries, top_k), -1, dtype=np.int64)
    scores = np.zeros((n_queries, top_k), dtype=np.float32)
    if n_docs == 0 or n_queries == 0 or top_k == 0:
        return indices, scores

    corpus_tokens = _tokenize(corpus_texts, analyzer)
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
    for qi, tokens in enumerate(_tokenize(query_texts, analyzer)):
        for token in tokens:
            token_id = vocab.get(token) if token else None
            if token_id is not None:
                rows.append(qi)
                cols.append(token_id)
    query_term = sp.csr_matrix(
        (np.ones(len(rows), dtype=np.float32), (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
        shape=(n_queries, term_doc.shape[0]),
    )  # duplicate query terms sum up, as in bm25s' own scoring

    depth = min(top_k, n_docs)
    chunk = max(1, min(512, (1 << 25) // n_docs))
    for start in range(0, n_queries, chunk):
        dense = (query_term[start:start + chunk] @ term_doc).toarray()
        kth = np.partition(dense, n_docs - depth, axis=1)[:, n_docs - depth]
        for r, row in enumerate(dense):
            cand = np.flatnonzero((row >= kth[r]) & (row > 0))
            order = np.lexsort((cand, -row[cand]))[:depth]
            chosen = cand[order]
            indices[start + r, :len(chosen)] = chosen
            scores[start + r, :len(chosen)] = row[chosen]
    return indices, scores


def pooled_subset(dataset: Dataset, depth: int, seed: int = 0) -> Dataset:
    """The corpus shrunk as NanoBEIR does: every judged document plus each query's top-``depth`` BM25 documents,
    in corpus order; deterministic (``seed`` is unused)."""
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


def bm25_run(dataset: Dataset, top_k: int, skip_identical_ids: bool = False, k1: float = 0.9, b: float = 0.4,
             analyzer: str = "anserini") -> dict[str, list[tuple[str, float]]]:
    """The BM25 reference run: ``{query id: [(doc id, score), ...]}``, at most ``top_k`` each;
    ``skip_identical_ids`` as in the search. Defaults: Anserini's."""
    doc_ids, query_ids = list(dataset.corpus), list(dataset.queries)
    idx, scores = bm25_topk([dataset.corpus[d] for d in doc_ids], [dataset.queries[q] for q in query_ids], top_k + 1,
                            k1=k1, b=b, analyzer=analyzer)
    results = {}
    for qi, qid in enumerate(query_ids):
        hits = [(doc_ids[i], float(s)) for i, s in zip(idx[qi], scores[qi])
                if i >= 0 and not (skip_identical_ids and doc_ids[i] == qid)]
        results[qid] = hits[:top_k]
    return results
