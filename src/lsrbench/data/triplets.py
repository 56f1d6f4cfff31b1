"""Training triplets from ``pseudo_queries`` (a random span of a document is the query, the document the
positive, a BM25 hard negative: test queries never trained on), ``hf`` columns or ``ir_datasets`` docpairs;
deterministic per source, ``n`` and seed."""

from __future__ import annotations

import itertools
import json
import math
import os
from pathlib import Path

import numpy as np

from lsrbench.atomic import atomic_open
from lsrbench.data.beir import iter_jsonl
from lsrbench.data.bm25 import bm25_topk
from lsrbench.errors import InputError

__all__ = [
    "TRIPLET_KEYS", "pseudo_query_triplets", "write_triplets", "read_triplets", "hf_triplets",
    "ir_datasets_triplets", "sample_indices",
]

TRIPLET_KEYS = ("query", "positive", "negative")


def pseudo_query_triplets(
    corpus: dict[str, str],
    n: int,
    seed: int,
    span_words: tuple[int, int] = (4, 12),
    negative_depth: tuple[int, int] = (5, 50),
) -> list[dict]:
    """``n`` (pseudo-query, positive, negative) triplets from ``corpus``: a span of ``span_words`` words of a
    drawn document, and a negative drawn from BM25 ranks ``negative_depth`` (a random document when there is
    none), all from ``default_rng(seed)``."""
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


# --------------------------------------------------------------------------- drawing from the sources


def sample_indices(total: int, n: int, seed: int) -> np.ndarray:
    """``n`` distinct row numbers out of ``total``, in random order: the first ``n`` of
    ``numpy.random.default_rng(seed).permutation(total)``."""
    return np.random.default_rng(seed).permutation(total)[:n]


def hf_triplets(repo: str, *, subset: str | None, split: str = "train", revision: str | None,
                columns: dict[str, str] | None = None, n: int, seed: int,
                cache_dir: str | os.PathLike | None = None) -> list[dict]:
    """``n`` triplets from the text columns of a Hugging Face dataset (rows :func:`sample_indices`); errors name
    ``hf:<repo>@<revision>`` and the row."""
    from lsrbench.data.hf import hf_label, load_hf_split

    label = hf_label(repo, revision)
    where = f"{subset or 'default'}[{split}]"
    cols = {**{k: k for k in TRIPLET_KEYS}, **(columns or {})}
    ds = load_hf_split(repo, subset, split, revision, cache_dir, label, where)
    missing = [f"'{c}' (for {k})" for k, c in cols.items() if c not in ds.column_names]
    if missing:
        raise InputError(label, where, f"missing column {', '.join(missing)} (columns: {', '.join(ds.column_names)})")
    if n > len(ds):
        raise InputError(label, where, f"has {len(ds)} rows, fewer than the {n} triplets asked for "
                                       "(training_data.n_triplets)")
    rows = sample_indices(len(ds), n, seed)
    picked = ds.select(rows.tolist()).select_columns(list(dict.fromkeys(cols.values())))
    values = {k: list(picked[c]) for k, c in cols.items()}
    triplets = []
    for i, row in enumerate(rows.tolist()):
        triplet = {}
        for key in TRIPLET_KEYS:
            value = values[key][i]
            if not isinstance(value, str) or not value.strip():
                raise InputError(label, f"{where} row {row + 1}",
                                 f"column '{cols[key]}' ({key}) must be a non-empty string, got {value!r}")
            triplet[key] = value
        triplets.append(triplet)
    return triplets


def _reservoir(items, n: int, rng: np.random.Generator) -> list[tuple[int, object]]:
    """A uniform sample of ``n`` ``(position, item)`` in one pass (Algorithm L)."""
    it = iter(items)
    sample = list(itertools.islice(enumerate(it), n))
    if len(sample) < n or n == 0:
        return sample
    pos = n - 1
    w = math.exp(math.log(1.0 - rng.random()) / n)
    while True:
        skip = math.floor(math.log(1.0 - rng.random()) / math.log1p(-w)) if w < 1.0 else 0
        nxt = next(itertools.islice(it, skip, skip + 1), None)
        if nxt is None:
            return sample
        pos += skip + 1
        sample[int(rng.integers(n))] = (pos, nxt)
        w *= math.exp(math.log(1.0 - rng.random()) / n)


def ir_datasets_triplets(dataset_id: str, *, n: int, seed: int) -> list[dict]:
    """``n`` triplets from an ``ir_datasets`` id's docpairs, reservoir-sampled with ``seed`` then shuffled;
    errors name ``docpair #N``."""
    import ir_datasets

    from lsrbench.data.ir_datasets_source import record_text

    label = f"ir_datasets:{dataset_id}"
    try:
        ds = ir_datasets.load(dataset_id)
    except KeyError:
        raise InputError(label, None, f"unknown ir_datasets id '{dataset_id}'") from None
    for part in ("docpairs", "queries", "docs"):
        if not getattr(ds, f"has_{part}")():
            raise InputError(label, None, f"dataset provides no {part}")
    rng = np.random.default_rng(seed)
    sample = _reservoir(ds.docpairs_iter(), n, rng)
    if len(sample) < n:
        raise InputError(label, "docpairs", f"has {len(sample)} pairs, fewer than the {n} triplets asked for "
                                            "(training_data.n_triplets)")
    sample = [sample[i] for i in rng.permutation(len(sample))]

    query_ids = {str(p.query_id) for _, p in sample}
    queries = {}
    for q in ds.queries_iter():
        if str(q.query_id) in query_ids:
            queries[str(q.query_id)] = record_text(q, "query")
    doc_ids = {str(d) for _, p in sample for d in (p.doc_id_a, p.doc_id_b)}
    try:
        found = ds.docs_store().get_many(doc_ids)
        docs = {str(k): record_text(v, "doc") for k, v in found.items()}
    except NotImplementedError:
        docs = {str(d.doc_id): record_text(d, "doc") for d in ds.docs_iter() if str(d.doc_id) in doc_ids}
    triplets = []
    for pos, pair in sample:
        at = f"docpair #{pos + 1}"
        qid, pos_id, neg_id = str(pair.query_id), str(pair.doc_id_a), str(pair.doc_id_b)
        if qid not in queries:
            raise InputError(label, at, f"unknown query id '{qid}'")
        for doc_id in (pos_id, neg_id):
            if doc_id not in docs:
                raise InputError(label, at, f"unknown document id '{doc_id}'")
        triplets.append({"query": queries[qid], "positive": docs[pos_id], "negative": docs[neg_id]})
    return triplets


