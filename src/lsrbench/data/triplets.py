"""Training triplets: the sources of ``training_data`` and the triplet file format.

Sources (``training_data.source`` of a run config, dispatched by :func:`build_triplets`):

* ``pseudo_queries`` (the tiny default): cropped pseudo-queries from a corpus, below;
* ``hf``: (query, positive, negative) text columns of a Hugging Face dataset
  (:func:`hf_triplets`), e.g. ``sentence-transformers/msmarco-bm25``, subset ``triplet``
  (columns ``query``, ``positive``, ``negative``; 502,931 rows, split ``train``), or any of the
  ``sentence-transformers/msmarco-<model>`` hard-negative sets with the same ``triplet``
  subset. ``columns`` maps other column names. Sets that hold ids only (the ``triplet-ids``
  subsets, ``sentence-transformers/msmarco``'s ``query_id``/``positive_id``/``negative_id``) are
  not supported: they need a corpus lookup;
* ``ir_datasets``: the docpairs of an ``ir_datasets`` id (:func:`ir_datasets_triplets`), e.g.
  ``msmarco-passage/train/triples-small``: ``(query_id, doc_id_a, doc_id_b)`` resolved to text
  through the id's queries and docs store.

``n`` triplets are drawn with ``seed``: the same source, ``n`` and seed give the same list, in
the same order. With a mirror (``lsrbench prefetch``), ``<mirror>/data/<name>/triplets.jsonl``
holds the drawn triplets and ``source.json`` what they were drawn from; the triplets stage reads
them instead of the source when ``source.json`` matches the run's ``training_data``, ``n`` and
seed (:func:`mirrored_triplets`).

Pseudo-queries
--------------
The tiny default setup trains on Vaswani, which has only test queries; those must never be
trained on. Instead each triplet is built from the corpus alone (a cropping scheme in the
spirit of Contriever's "random cropping"): a random contiguous span of a document's words
is the pseudo-query, the document is the positive, and a BM25 hard negative for the
pseudo-query is the negative.

Triplet files are JSON lines with exactly the keys ``query``, ``positive``, ``negative``.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
from pathlib import Path

import numpy as np

from lsrbench.atomic import atomic_open
from lsrbench.data.beir import iter_jsonl
from lsrbench.data.bm25 import bm25_topk
from lsrbench.errors import InputError
from lsrbench.names import SAFE_NAME, is_commit

__all__ = [
    "TRIPLET_KEYS", "TRAINING_SOURCES", "pseudo_query_triplets", "write_triplets", "read_triplets",
    "hf_triplets", "ir_datasets_triplets", "check_training_data", "training_name", "build_triplets",
    "mirrored_triplets", "write_mirror_triplets", "sample_indices",
]

TRIPLET_KEYS = ("query", "positive", "negative")
TRAINING_SOURCES = ("pseudo_queries", "hf", "ir_datasets")
# training_data keys that decide which triplets are drawn (besides n and seed)
_SOURCE_KEYS = {"pseudo_queries": ("dataset",), "hf": ("repo", "subset", "split", "revision", "columns"),
                "ir_datasets": ("id",)}


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
      inclusive; :func:`lsrbench.data.bm25.bm25_topk`, k1=0.9, b=0.4) of the pseudo-query over
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


# --------------------------------------------------------------------------- configured sources


def check_training_data(td: dict, config_file: str | os.PathLike) -> None:
    """Validate ``training_data`` beyond its schema; errors name ``training_data.<key>``."""
    def bad(key: str, message: str) -> InputError:
        return InputError(config_file, f"training_data.{key}", message)

    if not isinstance(td, dict):
        raise InputError(config_file, "training_data", "must be a mapping")
    source = td.get("source")
    if source not in TRAINING_SOURCES:
        raise bad("source", f"unknown source {source!r}; expected one of: {', '.join(TRAINING_SOURCES)}")
    for key in ("name", "dataset", "repo", "subset", "split", "id"):
        if key in td and (not isinstance(td[key], str) or not td[key].strip()):
            raise bad(key, f"must be a non-empty string, got {td[key]!r}")
    if "name" in td and not SAFE_NAME.match(td["name"]):
        raise bad("name", f"'{td['name']}' is not a valid folder name (letters, digits, '.', '_', '-')")
    required = {"pseudo_queries": ("dataset",), "hf": ("repo",), "ir_datasets": ("id",)}[source]
    for key in required:
        if key not in td:
            raise bad(key, f"missing (required for source '{source}')")
    for key in ("repo", "subset", "split", "revision", "columns", "id", "dataset"):
        if key in td and key not in _SOURCE_KEYS[source]:
            raise bad(key, f"not used by source '{source}'")
    if source == "hf":
        if "revision" not in td:
            raise bad("revision", "missing: pin the dataset's commit (40 hex digits), or null for a local folder")
        rev = td["revision"]
        if rev is None and not Path(td["repo"]).is_dir():
            raise bad("revision", f"null is only allowed for a local folder, and '{td['repo']}' is not one: "
                                  "pin the hub dataset's commit (40 hex digits)")
        if rev is not None and not is_commit(rev):
            raise bad("revision", f"must be a full commit hash (40 hex digits), got {rev!r}")
        columns = td.get("columns", {})
        if not isinstance(columns, dict) or any(k not in TRIPLET_KEYS or not isinstance(v, str) or not v
                                                for k, v in columns.items()):
            raise bad("columns", f"must map some of {', '.join(TRIPLET_KEYS)} to column names, got {columns!r}")


def training_name(td: dict) -> str:
    """The folder name of the training triplets in a mirror: ``name``, or one derived from the
    source (``sentence-transformers--msmarco-bm25--triplet``, ``msmarco-passage--train--triples-small``)."""
    if td.get("name"):
        return td["name"]
    if td["source"] == "pseudo_queries":
        return f"pseudo-queries--{td['dataset']}"
    if td["source"] == "hf":
        base = Path(td["repo"]).name if Path(td["repo"]).is_dir() else td["repo"]
        parts = [base] + ([td["subset"]] if td.get("subset") else [])
    else:
        parts = [td["id"]]
    name = re.sub(r"[^A-Za-z0-9._-]+", "--", "--".join(parts)).strip(".-_") or "training"
    return name if SAFE_NAME.match(name) else f"t{name}"


def sample_indices(total: int, n: int, seed: int) -> np.ndarray:
    """``n`` distinct row numbers out of ``total``, in random order: the first ``n`` of
    ``numpy.random.default_rng(seed).permutation(total)``."""
    return np.random.default_rng(seed).permutation(total)[:n]


def hf_triplets(repo: str, *, subset: str | None, split: str = "train", revision: str | None,
                columns: dict[str, str] | None = None, n: int, seed: int,
                cache_dir: str | os.PathLike | None = None) -> list[dict]:
    """``n`` triplets from a Hugging Face dataset: ``load_dataset(repo, subset, split=split,
    revision=revision)``, rows :func:`sample_indices` ``(len, n, seed)``, text columns
    ``columns`` (default ``query``/``positive``/``negative``). Errors name ``hf:<repo>@<revision>``
    and ``<subset>[<split>]`` (``row N``: 1-based row of the dataset)."""
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
    """A uniform sample of ``n`` ``(position, item)`` from an iterable in one pass (Algorithm L:
    random skips, so the random draws are O(n log(N/n)), not one per item)."""
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
    """``n`` triplets from the docpairs of an ``ir_datasets`` id (``query_id, doc_id_a, doc_id_b``:
    query, positive, negative), drawn uniformly in one pass over the pairs with
    ``numpy.random.default_rng(seed)`` (reservoir sampling, then shuffled), texts looked up in
    the id's queries and docs store. Errors name ``ir_datasets:<id>`` and ``docpair #N``."""
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


def _source_record(td: dict, n: int, seed: int) -> dict:
    return {"source": td["source"], **{k: td[k] for k in _SOURCE_KEYS[td["source"]] if k in td},
            "n": int(n), "seed": int(seed)}


def mirrored_triplets(td: dict, n: int, seed: int, mirror: str | os.PathLike | None) -> list[dict] | None:
    """The prefetched triplets of ``<mirror>/data/<training_name>/``, or None when there are none.

    A folder whose ``source.json`` names another source, ``n`` or seed is an error (a stale
    mirror silently training on other data would be worse): re-run ``lsrbench prefetch``."""
    if not mirror:
        return None
    folder = Path(mirror) / "data" / training_name(td)
    path, meta_path = folder / "triplets.jsonl", folder / "source.json"
    if not path.is_file():
        return None
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(meta_path, None, f"unreadable prefetch record ({e}); re-run lsrbench prefetch") from None
    wanted = _source_record(td, n, seed)
    if meta != wanted:
        diff = sorted(k for k in set(meta) | set(wanted) if meta.get(k) != wanted.get(k))
        raise InputError(meta_path, ", ".join(diff),
                         f"the mirror's triplets were drawn from {meta}, the config asks for {wanted}: "
                         "re-run lsrbench prefetch for this config")
    triplets = read_triplets(path)
    if len(triplets) != n:
        raise InputError(path, None, f"{len(triplets)} triplets, {n} expected; re-run lsrbench prefetch")
    return triplets


def write_mirror_triplets(td: dict, n: int, seed: int, mirror: str | os.PathLike, triplets: list[dict]) -> Path:
    """Write drawn triplets and their ``source.json`` to ``<mirror>/data/<training_name>/``."""
    folder = Path(mirror) / "data" / training_name(td)
    write_triplets(folder / "triplets.jsonl", triplets)
    with atomic_open(folder / "source.json", "w", encoding="utf-8") as fh:
        json.dump(_source_record(td, n, seed), fh, indent=1, sort_keys=True)
        fh.write("\n")
    return folder


def draw_source_triplets(td: dict, n: int, seed: int, cache_dir: str | os.PathLike) -> list[dict]:
    """Triplets of an ``hf`` or ``ir_datasets`` source, from the source itself."""
    if td["source"] == "hf":
        return hf_triplets(td["repo"], subset=td.get("subset"), split=td.get("split", "train"),
                           revision=td.get("revision"), columns=td.get("columns"), n=n, seed=seed,
                           cache_dir=Path(cache_dir) / "hf-datasets")
    if td["source"] == "ir_datasets":
        from lsrbench.data.ir_datasets_source import downloads_of

        with downloads_of(td["id"]):
            return ir_datasets_triplets(td["id"], n=n, seed=seed)
    raise ValueError(f"draw_source_triplets: source {td['source']!r} is built from a dataset folder")


def build_triplets(training_data: dict, n: int, seed: int, out: str | os.PathLike, *,
                   mirror: str | os.PathLike | None = None, cache_dir: str | os.PathLike = "cache",
                   config_file: str | os.PathLike = "config", full_dir: str | os.PathLike | None = None,
                   dataset_entry: dict | None = None) -> Path:
    """The triplets stage: write ``n`` triplets (``seed``) of ``training_data`` to ``out``.

    ``pseudo_queries`` crops them from the BEIR folder ``full_dir`` (``dataset_entry`` gives its
    split); the other sources read the mirror when it holds them (:func:`mirrored_triplets`),
    their source otherwise.
    """
    check_training_data(training_data, config_file)
    if training_data["source"] == "pseudo_queries":
        from lsrbench.data.beir import load_beir_folder

        entry = dataset_entry or {}
        ds = load_beir_folder(full_dir, split=entry.get("split", "test"), unknown_docs=entry.get("unknown_docs", "error"))
        if len({text for text in ds.corpus.values() if text.split()}) < 2:
            raise InputError(Path(full_dir) / "corpus.jsonl", None, "pseudo-queries need at least two distinct "
                             "documents with words (training_data.dataset)")
        return write_triplets(out, pseudo_query_triplets(ds.corpus, n, seed))
    triplets = mirrored_triplets(training_data, n, seed, mirror)
    if triplets is None:
        from lsrbench.downloads import FetchFailed

        try:
            triplets = draw_source_triplets(training_data, n, seed, cache_dir)
        except FetchFailed as failed:
            key = "id" if training_data["source"] == "ir_datasets" else "repo"
            raise failed.at(config_file, f"training_data.{key}") from None
    return write_triplets(out, triplets)
