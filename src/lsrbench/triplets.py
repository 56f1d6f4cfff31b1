"""Training triplets for corpora without training queries.

The tiny default setup trains on Vaswani, which has only test queries; those must never be
trained on. Instead each triplet is built from the corpus alone (a cropping scheme in the
spirit of Contriever's "random cropping"): a random contiguous span of a document's words
is the pseudo-query, the document is the positive, and a BM25 hard negative for the
pseudo-query is the negative.

Triplet files are JSON lines with exactly the keys ``query``, ``positive``, ``negative``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from .atomic import atomic_open
from .data import bm25_topk, iter_jsonl
from .errors import InputError

__all__ = ["TRIPLET_KEYS", "pseudo_query_triplets", "write_triplets", "read_triplets"]

TRIPLET_KEYS = ("query", "positive", "negative")


def pseudo_query_triplets(
    corpus: dict[str, str],
    n: int,
    seed: int,
    span_words: tuple[int, int] = (4, 12),
    negative_depth: tuple[int, int] = (5, 50),
) -> list[dict]:
    """Build ``n`` (pseudo-query, positive, negative) text triplets from ``corpus`` alone.

    * ``n`` documents are drawn uniformly (without replacement unless ``n`` exceeds the
      number of usable documents: those with at least ``span_words[0]`` words, or any
      non-empty document when none has that many);
    * the pseudo-query is a contiguous span of the document's whitespace-separated words,
      its length uniform in ``span_words`` (inclusive, capped at the document's length),
      its start uniform over the valid positions;
    * the negative is drawn uniformly from BM25 ranks ``negative_depth`` (1-based,
      inclusive; :func:`lsrbench.data.bm25_topk`, k1=0.9, b=0.4) of the pseudo-query over
      the whole corpus, after removing the positive and any document with the same text;
      when BM25 yields none in that range, a uniformly random other document is used.

    All randomness comes from ``numpy.random.default_rng(seed)``: the same corpus, ``n``
    and seed give the same list. BM25 retrieval is batched over all pseudo-queries.
    """
    span_lo, span_hi = (int(x) for x in span_words)
    neg_lo, neg_hi = (int(x) for x in negative_depth)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if not 1 <= span_lo <= span_hi:
        raise ValueError(f"span_words must satisfy 1 <= min <= max, got {span_words}")
    if not 1 <= neg_lo <= neg_hi:
        raise ValueError(f"negative_depth must satisfy 1 <= min <= max, got {negative_depth}")

    texts = list(corpus.values())
    words = [text.split() for text in texts]
    usable = np.array([i for i, w in enumerate(words) if len(w) >= span_lo], dtype=np.int64)
    if usable.size == 0:
        usable = np.array([i for i, w in enumerate(words) if w], dtype=np.int64)
    if usable.size == 0:
        raise ValueError("corpus has no document with any words")
    if len(set(texts)) < 2:
        raise ValueError("corpus needs at least two distinct documents to draw negatives")
    if n == 0:
        return []

    rng = np.random.default_rng(seed)
    picks = rng.choice(usable, size=n, replace=n > usable.size)
    queries = []
    for doc in picks:
        doc_words = words[doc]
        length = min(int(rng.integers(span_lo, span_hi + 1)), len(doc_words))
        start = int(rng.integers(0, len(doc_words) - length + 1))
        queries.append(" ".join(doc_words[start:start + length]))

    # Retrieve a little deeper than neg_hi: the positive and its exact duplicates are removed.
    depth = min(neg_hi + 5, len(texts))
    ranked, _ = bm25_topk(texts, queries, depth)

    triplets = []
    for query, doc, row in zip(queries, picks, ranked):
        positive = texts[doc]
        candidates = [int(i) for i in row if i >= 0 and texts[i] != positive]
        pool = candidates[neg_lo - 1:neg_hi]
        if pool:
            negative_index = pool[int(rng.integers(len(pool)))]
        else:
            while True:  # terminates: at least two distinct texts exist
                negative_index = int(rng.integers(len(texts)))
                if texts[negative_index] != positive:
                    break
        triplets.append({"query": query, "positive": positive, "negative": texts[negative_index]})
    return triplets


def write_triplets(path: str | os.PathLike, triplets: list[dict]) -> Path:
    """Write triplets as JSON lines (``query``, ``positive``, ``negative``), atomically."""
    path = Path(path)
    for i, triplet in enumerate(triplets):
        for key in TRIPLET_KEYS:
            if not isinstance(triplet.get(key), str):
                raise ValueError(f"triplet #{i + 1}: '{key}' must be a string")
    with atomic_open(path, "w", encoding="utf-8", newline="\n") as fh:
        for triplet in triplets:
            fh.write(json.dumps({key: triplet[key] for key in TRIPLET_KEYS}, ensure_ascii=False) + "\n")
    return path


def read_triplets(path: str | os.PathLike) -> list[dict]:
    """Read a triplet file written by :func:`write_triplets`; bad lines raise InputError."""
    path = Path(path)
    triplets = []
    for lineno, record in iter_jsonl(path):
        for key in TRIPLET_KEYS:
            if key not in record:
                raise InputError(path, f"line {lineno}", f"missing key '{key}'")
            if not isinstance(record[key], str):
                raise InputError(path, f"line {lineno}",
                                 f"key '{key}' must be a string, got {type(record[key]).__name__}")
        triplets.append({key: record[key] for key in TRIPLET_KEYS})
    if not triplets:
        raise InputError(path, None, "no triplets")
    return triplets
