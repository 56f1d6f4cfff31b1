"""Datasets in one canonical on-disk form: BEIR's layout.

A dataset folder holds ``corpus.jsonl`` (``{"_id", "title", "text"}`` per line),
``queries.jsonl`` (``{"_id", "text"}``) and ``qrels/<split>.tsv`` (header
``query-id<TAB>corpus-id<TAB>score``, integer scores, graded relevance and 0 allowed).

Every loader returns a :class:`Dataset` and validates its input, raising
:class:`~lsrbench.errors.InputError` with the file and the line (or record) at fault.
Conventions follow BEIR's own loader and evaluation:

* a non-empty title is joined to the text as ``title + " " + text``;
* queries without any judgment in the split are dropped (counted in
  ``Dataset.dropped_queries``), since BEIR evaluates only judged queries.

Unlike BEIR's loader (which silently accepts them) this module rejects qrels that name
unknown queries or documents by default. Real BEIR data has a few dangling document ids
(ArguAna's ``qrels/test.tsv`` names ``test-free-speech-debate-yfsdfkhbwu-con03b``, absent
from its corpus), so loaders take ``unknown_docs``:

* ``"error"`` (default): raise :class:`InputError` naming the qrels line;
* ``"keep"``: keep the judgment, as BEIR's evaluation does (a relevant document no system
  can retrieve; this reproduces BEIR's published numbers);
* ``"drop"``: drop the judgment.

Either way the number of such judgments is recorded in ``Dataset.unknown_doc_qrels``.

Sources (``source:`` of an entry of ``config/datasets.yaml``, dispatched by :func:`resolve_dataset`):

* ``beir``: a local BEIR folder (``path``) or BEIR's public zip (``name``);
* ``ir_datasets``: any ``ir_datasets`` id with docs, queries and qrels (``id``), e.g.
  ``msmarco-passage/dev/small``, ``msmarco-passage/trec-dl-2019/judged`` or ``beir/scifact/test``;
* ``hf``: a Hugging Face datasets repository in the NanoBEIR layout (:func:`load_hf_dataset`):
  configs ``corpus`` (``_id``, ``text``, optional ``title``), ``queries`` (``_id``, ``text``) and
  ``qrels`` (``query-id``, ``corpus-id``, optional ``score``, default 1), all under one split
  (``train`` for the zeta-alpha-ai ``Nano*`` repositories, ``Nano<Name>`` for
  ``sentence-transformers/NanoBEIR-en``), at a pinned ``revision``.

Corpora shared between datasets (MS MARCO's 8.8M passages serve both the dev set and TREC DL
2019) are written once: :func:`write_beir_folder` with a ``corpus_store`` keeps one copy of each
distinct ``corpus.jsonl`` (by content hash) and hard-links it into every dataset folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Iterable, Iterator, Sequence

import numpy as np

from .atomic import atomic_dir, atomic_open
from .errors import InputError

__all__ = [
    "Dataset",
    "BEIR_URL",
    "load_beir_folder",
    "load_ir_datasets",
    "load_beir_download",
    "extract_beir_zip",
    "resolve_dataset",
    "write_beir_folder",
    "load_hf_dataset",
    "corpus_key",
    "pooled_subset",
    "bm25_topk",
    "iter_jsonl",
    "UNKNOWN_DOCS_POLICIES",
]

BEIR_URL = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/{name}.zip"
SOURCES = ("beir", "ir_datasets", "hf")
HF_SUBSETS = ("corpus", "queries", "qrels")
_REVISION = re.compile(r"^[0-9a-f]{40}$")
UNKNOWN_DOCS_POLICIES = ("error", "keep", "drop")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass
class Dataset:
    """An evaluation collection held in memory.

    ``corpus`` and ``queries`` keep the source order; ``qrels`` maps query id -> doc id ->
    integer relevance and only names ids present in ``corpus`` and ``queries`` (documents
    absent from the corpus only when loaded with ``unknown_docs="keep"``); every query in
    ``queries`` has at least one judgment.
    """

    corpus: dict[str, str]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    name: str
    dropped_queries: int = 0  # queries in the source without a judgment in this split
    unknown_doc_qrels: int = 0  # judgments naming documents absent from the corpus (kept or dropped)


# --------------------------------------------------------------------------- reading helpers


def iter_jsonl(path: str | os.PathLike) -> Iterator[tuple[int, dict]]:
    """Yield ``(line number, object)`` for each non-blank line of a JSON-lines file.

    Lines are decoded one by one so a bad byte or bad JSON is reported with its line.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(path, None, "file not found")
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InputError(
                    path, f"line {lineno}",
                    f"not valid UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1})",
                ) from None
            if lineno == 1:
                line = line.lstrip("\ufeff")
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(path, f"line {lineno}", f"malformed JSON: {e.msg} (column {e.colno})") from None
            if not isinstance(record, dict):
                raise InputError(path, f"line {lineno}", f"expected a JSON object, got {type(record).__name__}")
            yield lineno, record


def _get_id(record: dict, path: Path, lineno: int) -> str:
    if "_id" not in record:
        raise InputError(path, f"line {lineno}", "missing field '_id'")
    value = record["_id"]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(path, f"line {lineno}", f"field '_id' must be a string, got {type(value).__name__}")
    value = str(value)
    if not value.strip():
        raise InputError(path, f"line {lineno}", "field '_id' is empty")
    return value


def _get_str(record: dict, key: str, path: Path, lineno: int, required: bool) -> str:
    if key not in record or record[key] is None:
        if required:
            raise InputError(path, f"line {lineno}", f"missing field '{key}'")
        return ""
    value = record[key]
    if not isinstance(value, str):
        raise InputError(path, f"line {lineno}", f"field '{key}' must be a string, got {type(value).__name__}")
    return value


def _join_title(title: str, text: str) -> str:
    """BEIR's convention: ``title + " " + text`` when the title is non-empty."""
    return " ".join(part for part in (title, text) if part)


def _read_corpus_jsonl(path: Path) -> dict[str, str]:
    corpus: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for lineno, record in iter_jsonl(path):
        doc_id = _get_id(record, path, lineno)
        text = _get_str(record, "text", path, lineno, required=True)
        title = _get_str(record, "title", path, lineno, required=False)
        if doc_id in corpus:
            raise InputError(path, f"line {lineno}",
                             f"duplicate document id '{doc_id}' (first on line {first_line[doc_id]})")
        corpus[doc_id] = _join_title(title, text)
        first_line[doc_id] = lineno
    if not corpus:
        raise InputError(path, None, "corpus is empty (no documents)")
    return corpus


def _read_queries_jsonl(path: Path) -> dict[str, str]:
    queries: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for lineno, record in iter_jsonl(path):
        query_id = _get_id(record, path, lineno)
        text = _get_str(record, "text", path, lineno, required=True)
        if query_id in queries:
            raise InputError(path, f"line {lineno}",
                             f"duplicate query id '{query_id}' (first on line {first_line[query_id]})")
        queries[query_id] = text
        first_line[query_id] = lineno
    if not queries:
        raise InputError(path, None, "no queries")
    return queries


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _read_qrels_tsv(path: Path) -> Iterator[tuple[str, str, int, str]]:
    """Yield ``(query id, doc id, relevance, "line N")``; the header line is skipped."""
    with open(path, "rb") as fh:
        seen_first = False
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            where = f"line {lineno}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InputError(path, where, f"not valid UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1})") from None
            cols = [c.strip() for c in line.lstrip("\ufeff").rstrip("\r\n").split("\t")]
            if not seen_first:
                seen_first = True
                if len(cols) == 3 and not _is_int(cols[2]):
                    continue  # header: query-id, corpus-id, score
            if len(cols) != 3:
                raise InputError(path, where, f"expected 3 tab-separated columns (query-id, corpus-id, score), got {len(cols)}")
            query_id, doc_id, score = cols
            if not query_id or not doc_id:
                raise InputError(path, where, "empty query-id or corpus-id")
            if not _is_int(score):
                raise InputError(path, where, f"score '{score}' is not an integer")
            yield query_id, doc_id, int(score), where


def _assemble(
    name: str,
    corpus: dict[str, str],
    queries: dict[str, str],
    qrel_rows: Iterable[tuple[str, str, int, str]],
    *,
    qrels_file: str | os.PathLike,
    corpus_label: str,
    queries_label: str,
    unknown_docs: str,
) -> Dataset:
    """Check qrels against corpus and queries; drop unjudged queries (BEIR convention)."""
    if unknown_docs not in UNKNOWN_DOCS_POLICIES:
        raise ValueError(f"unknown_docs must be one of {UNKNOWN_DOCS_POLICIES}, got {unknown_docs!r}")
    qrels: dict[str, dict[str, int]] = {}
    where_seen: dict[tuple[str, str], str] = {}
    unknown = 0
    for query_id, doc_id, rel, where in qrel_rows:
        if query_id not in queries:
            raise InputError(qrels_file, where, f"unknown query id '{query_id}' (not in {queries_label})")
        if doc_id not in corpus:
            if unknown_docs == "error":
                raise InputError(qrels_file, where, f"unknown document id '{doc_id}' (not in {corpus_label})")
            unknown += 1
            if unknown_docs == "drop":
                continue
        judged = qrels.setdefault(query_id, {})
        if doc_id in judged:
            if judged[doc_id] != rel:
                raise InputError(qrels_file, where,
                                 f"conflicting judgment for query '{query_id}' and document '{doc_id}' "
                                 f"({rel} here, {judged[doc_id]} on {where_seen[(query_id, doc_id)]})")
            continue
        judged[doc_id] = rel
        where_seen[(query_id, doc_id)] = where
    if not qrels:
        raise InputError(qrels_file, None, "no judgments left for any query")
    kept = {qid: text for qid, text in queries.items() if qid in qrels}
    return Dataset(corpus=corpus, queries=kept, qrels=qrels, name=name,
                   dropped_queries=len(queries) - len(kept), unknown_doc_qrels=unknown)


# --------------------------------------------------------------------------- loaders


def load_beir_folder(path: str | os.PathLike, split: str = "test", name: str | None = None, *,
                     unknown_docs: str = "error") -> Dataset:
    """Load a BEIR-layout folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``)."""
    folder = Path(path)
    if not folder.is_dir():
        raise InputError(folder, None, "dataset folder not found")
    corpus_path = folder / "corpus.jsonl"
    queries_path = folder / "queries.jsonl"
    qrels_path = folder / "qrels" / f"{split}.tsv"
    for p in (corpus_path, queries_path):
        if not p.is_file():
            raise InputError(p, None, "file not found")
    if not qrels_path.is_file():
        available = sorted(p.stem for p in (folder / "qrels").glob("*.tsv"))
        hint = f" (available splits: {', '.join(available)})" if available else ""
        raise InputError(qrels_path, None, f"qrels for split '{split}' not found{hint}")
    corpus = _read_corpus_jsonl(corpus_path)
    queries = _read_queries_jsonl(queries_path)
    return _assemble(
        name or folder.name, corpus, queries, _read_qrels_tsv(qrels_path),
        qrels_file=qrels_path, corpus_label=corpus_path.name, queries_label=queries_path.name,
        unknown_docs=unknown_docs,
    )


class _UnknownDatasetId(InputError):
    """An ``ir_datasets`` id that its registry does not know."""


def _record_text(record, kind: str) -> str:
    default_text = getattr(record, "default_text", None)
    if callable(default_text):
        try:
            return default_text()
        except NotImplementedError:
            pass
    if kind == "doc":
        return _join_title(getattr(record, "title", "") or "", getattr(record, "text", "") or "")
    return getattr(record, "text", "") or ""


def load_ir_datasets(dataset_id: str, name: str | None = None, *, unknown_docs: str = "error",
                     corpus: dict[str, str] | None = None) -> Dataset:
    """Load an ``ir_datasets`` collection (docs, queries, qrels), validated like a BEIR folder.

    Errors name ``ir_datasets:<id>`` as the file and ``doc #N`` / ``query #N`` / ``qrel #N``
    (1-based record numbers) as the field. ``corpus``: the documents already loaded for another
    id with the same docs (``ir_datasets.docs_parent_id``, see :func:`corpus_key`), e.g. the
    8.8M MS MARCO passages shared by ``msmarco-passage/dev/small`` and
    ``msmarco-passage/trec-dl-2019/judged``; they are used as they are instead of re-reading.
    """
    import ir_datasets

    source = f"ir_datasets:{dataset_id}"
    try:
        ds = ir_datasets.load(dataset_id)
    except KeyError:
        raise _UnknownDatasetId(source, None, f"unknown ir_datasets id '{dataset_id}'") from None
    for part in ("docs", "queries", "qrels"):
        if not getattr(ds, f"has_{part}")():
            raise InputError(source, None, f"dataset provides no {part}")

    if corpus is None:
        corpus = {}
        first: dict[str, int] = {}
        for n, doc in enumerate(ds.docs_iter(), 1):
            doc_id = str(doc.doc_id)
            if doc_id in corpus:
                raise InputError(source, f"doc #{n}", f"duplicate document id '{doc_id}' (first as doc #{first[doc_id]})")
            corpus[doc_id] = _record_text(doc, "doc")
            first[doc_id] = n
    if not corpus:
        raise InputError(source, "docs", "corpus is empty (no documents)")

    queries: dict[str, str] = {}
    first = {}
    for n, query in enumerate(ds.queries_iter(), 1):
        query_id = str(query.query_id)
        if query_id in queries:
            raise InputError(source, f"query #{n}", f"duplicate query id '{query_id}' (first as query #{first[query_id]})")
        queries[query_id] = _record_text(query, "query")
        first[query_id] = n
    if not queries:
        raise InputError(source, "queries", "no queries")

    rows = ((str(q.query_id), str(q.doc_id), int(q.relevance), f"qrel #{n}")
            for n, q in enumerate(ds.qrels_iter(), 1))
    return _assemble(name or dataset_id, corpus, queries, rows, qrels_file=source,
                     corpus_label="docs", queries_label="queries", unknown_docs=unknown_docs)


def _hf_label(repo: str, revision: str | None) -> str:
    return f"hf:{repo}@{revision}" if revision else f"hf:{repo}"


def load_hf_split(repo: str, subset: str | None, split: str, revision: str | None, cache_dir, label: str, where: str):
    """``datasets.load_dataset(repo, subset, split=..., revision=...)``; any failure becomes one
    InputError naming ``label`` and ``where``."""
    import datasets

    kwargs = {"split": split}
    if revision:
        kwargs["revision"] = revision
    if cache_dir is not None:
        kwargs["cache_dir"] = str(cache_dir)
    datasets.disable_progress_bars()
    try:
        return datasets.load_dataset(repo, subset, **kwargs)
    except Exception as e:  # datasets raises many types (ValueError, FileNotFoundError, hub errors)
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise InputError(label, where, f"cannot load: {first}") from None


def _load_hf_subset(repo: str, subset: str, split: str, revision: str | None, cache_dir, label: str,
                    required: Sequence[str]):
    """One config/split of a datasets repository, with the columns ``required`` checked."""
    ds = load_hf_split(repo, subset, split, revision, cache_dir, label, f"{subset}[{split}]")
    missing = [c for c in required if c not in ds.column_names]
    if missing:
        raise InputError(label, f"{subset}[{split}]",
                         f"missing column {', '.join(repr(c) for c in missing)} (columns: {', '.join(ds.column_names)})")
    return ds


def _hf_id(value, label: str, where: str, column: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise InputError(label, where, f"column '{column}' must be a non-empty string id, got {value!r}")
    return str(value)


def load_hf_dataset(repo: str, *, revision: str | None, hf_split: str = "train", name: str | None = None,
                    subsets: dict[str, str] | None = None, unknown_docs: str = "error",
                    cache_dir: str | os.PathLike | None = None) -> Dataset:
    """Load a Hugging Face datasets repository in the NanoBEIR layout.

    ``datasets.load_dataset(repo, <subset>, split=hf_split, revision=revision)`` for the
    subsets ``corpus`` (``_id``, ``text``, optional ``title``), ``queries`` (``_id``, ``text``)
    and ``qrels`` (``query-id``, ``corpus-id``, optional integer ``score``, default 1 as in
    mteb's Nano tasks; a list of corpus ids is expanded as sentence-transformers does).
    ``subsets`` renames the configs (``{"corpus": "docs"}``). ``repo`` may be a local folder in
    the same layout (a ``README.md`` with ``configs:`` and the data files), as the tests use.

    Conventions of sentence-transformers' ``NanoBEIREvaluator`` (to compare with its numbers):
    documents and queries with empty text are dropped (a dropped query's judgments go with it
    and it counts in ``dropped_queries``; judgments naming a dropped document follow
    ``unknown_docs``). A non-empty ``title`` is joined to the text as for BEIR folders.
    Errors name ``hf:<repo>@<revision>`` as the file and ``<subset>[<split>] row N``.
    """
    label = _hf_label(repo, revision)
    names = {**{s: s for s in HF_SUBSETS}, **(subsets or {})}
    corpus_ds = _load_hf_subset(repo, names["corpus"], hf_split, revision, cache_dir, label, ("_id", "text"))
    queries_ds = _load_hf_subset(repo, names["queries"], hf_split, revision, cache_dir, label, ("_id", "text"))
    qrels_ds = _load_hf_subset(repo, names["qrels"], hf_split, revision, cache_dir, label, ("query-id", "corpus-id"))

    def where(subset: str, n: int) -> str:
        return f"{names[subset]}[{hf_split}] row {n}"

    def texts(ds, subset: str) -> Iterator[tuple[int, str, str]]:
        titles = list(ds["title"]) if "title" in ds.column_names else None
        for i, (raw_id, text) in enumerate(zip(list(ds["_id"]), list(ds["text"]))):
            ident = _hf_id(raw_id, label, where(subset, i + 1), "_id")
            if text is not None and not isinstance(text, str):
                raise InputError(label, where(subset, i + 1), f"column 'text' must be a string, got {type(text).__name__}")
            title = titles[i] if titles is not None else None
            yield i + 1, ident, _join_title(title or "", text or "") if subset == "corpus" else (text or "")

    def collect(ds, subset: str, what: str, none_left: str) -> tuple[dict[str, str], set[str]]:
        """``{id: text}`` of the rows with text, and the ids of the rows without; ids unique."""
        kept: dict[str, str] = {}
        empty: set[str] = set()
        for n, ident, text in texts(ds, subset):
            if ident in kept or ident in empty:
                raise InputError(label, where(subset, n), f"duplicate {what} id '{ident}'")
            if text:
                kept[ident] = text
            else:
                empty.add(ident)
        if not kept:
            raise InputError(label, names[subset], none_left)
        return kept, empty

    corpus, empty_docs = collect(corpus_ds, "corpus", "document", "corpus is empty (no documents with text)")
    queries, empty_queries = collect(queries_ds, "queries", "query", "no queries with text")

    scores = list(qrels_ds["score"]) if "score" in qrels_ds.column_names else None

    def rows() -> Iterator[tuple[str, str, int, str]]:
        for i, (raw_q, raw_d) in enumerate(zip(list(qrels_ds["query-id"]), list(qrels_ds["corpus-id"]))):
            at = where("qrels", i + 1)
            query_id = _hf_id(raw_q, label, at, "query-id")
            if query_id in empty_queries:
                continue
            rel = 1 if scores is None else scores[i]
            if isinstance(rel, float) and rel.is_integer():
                rel = int(rel)
            if isinstance(rel, bool) or not isinstance(rel, int):
                raise InputError(label, at, f"score {rel!r} is not an integer")
            for raw in (raw_d if isinstance(raw_d, list) else [raw_d]):
                yield query_id, _hf_id(raw, label, at, "corpus-id"), rel, at

    ds = _assemble(name or repo, corpus, queries, rows(), qrels_file=label,
                   corpus_label=f"{names['corpus']} (documents with empty text dropped)" if empty_docs else names["corpus"],
                   queries_label=names["queries"], unknown_docs=unknown_docs)
    return replace(ds, dropped_queries=ds.dropped_queries + len(empty_queries))


def extract_beir_zip(zip_path: str | os.PathLike, out_dir: str | os.PathLike) -> Path:
    """Unpack a BEIR zip so that ``out_dir`` becomes the dataset folder; return ``out_dir``.

    BEIR's archives hold one top-level folder (``scifact/corpus.jsonl``, ...); an archive
    with the files at its root is accepted too. The folder appears atomically.
    """
    zip_path, out_dir = Path(zip_path), Path(out_dir)
    try:
        zf = zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, OSError) as e:
        raise InputError(zip_path, None, f"not a readable zip archive ({e})") from None
    with zf:
        for info in zf.infolist():
            parts = PurePosixPath(info.filename.replace("\\", "/")).parts
            if info.filename.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
                raise InputError(zip_path, info.filename, "unsafe path in archive")
        with atomic_dir(out_dir) as tmp:
            zf.extractall(tmp)
            shutil.rmtree(tmp / "__MACOSX", ignore_errors=True)
            if not (tmp / "corpus.jsonl").is_file():
                children = [c for c in tmp.iterdir()]
                if len(children) != 1 or not (children[0] / "corpus.jsonl").is_file():
                    raise InputError(zip_path, None,
                                     "archive has no corpus.jsonl at its root or in a single top-level folder")
                inner = children[0].rename(tmp / ".beir-inner")
                for item in inner.iterdir():
                    item.rename(tmp / item.name)
                inner.rmdir()
    return out_dir


def _download(url: str, dest: Path) -> None:
    try:
        with urllib.request.urlopen(url, timeout=60) as response, atomic_open(dest, "wb") as fh:
            shutil.copyfileobj(response, fh, length=1 << 20)
    except urllib.error.HTTPError as e:
        raise InputError(url, None, f"download failed: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise InputError(url, None, f"download failed: {reason} (offline? use a mirror)") from None


def load_beir_download(name: str, cache_dir: str | os.PathLike, split: str = "test", *,
                       unknown_docs: str = "error") -> Dataset:
    """Fetch BEIR's public zip for ``name`` into ``cache_dir`` (once), unzip it, load it.

    The dataset lands in ``<cache_dir>/<name>/``; a folder already there is reused.
    """
    if not _SAFE_NAME.match(name or ""):
        raise InputError(BEIR_URL.format(name=name), None, f"'{name}' is not a valid BEIR dataset name")
    cache_dir = Path(cache_dir)
    folder = cache_dir / name
    if not (folder / "corpus.jsonl").is_file():
        zip_path = cache_dir / f"{name}.zip"
        if not zip_path.is_file():
            _download(BEIR_URL.format(name=name), zip_path)
        extract_beir_zip(zip_path, folder)
        zip_path.unlink()
    return load_beir_folder(folder, split=split, name=name, unknown_docs=unknown_docs)


def _check_entry(name: str, entry, datasets_file) -> tuple[str, str, str]:
    """Validate one datasets.yaml entry; return ``(source, key, value)`` naming where it loads from."""
    def bad(key: str | None, message: str) -> InputError:
        return InputError(datasets_file, f"{name}.{key}" if key else name, message)

    if not isinstance(entry, dict):
        raise bad(None, f"entry must be a mapping, got {type(entry).__name__}")
    split = entry.get("split", "test")
    if not isinstance(split, str) or not _SAFE_NAME.match(split):
        raise bad("split", f"must be a split name such as 'test', got {split!r}")
    if "source" not in entry:
        raise bad("source", f"missing; expected one of: {', '.join(SOURCES)}")
    source = entry["source"]
    if source not in SOURCES:
        raise bad("source", f"unknown source {source!r}; expected one of: {', '.join(SOURCES)}")

    def required_str(key: str) -> str:
        value = entry.get(key)
        if value is None:
            raise bad(key, f"missing (required for source '{source}')")
        if not isinstance(value, str) or not value.strip():
            raise bad(key, f"must be a non-empty string, got {value!r}")
        return value

    if source == "beir":
        if "path" in entry and "name" in entry:
            raise bad("path", "give either 'path' (a BEIR folder) or 'name' (a BEIR download), not both")
        if "path" not in entry and "name" not in entry:
            raise bad("path", "source 'beir' needs 'path' (a BEIR folder) or 'name' (a BEIR download name)")
        key = "path" if "path" in entry else "name"
        value = required_str(key)
        if key == "name" and not _SAFE_NAME.match(value):
            raise bad("name", f"'{value}' is not a valid BEIR dataset name")
        return source, key, value
    if source == "ir_datasets":
        return source, "id", required_str("id")
    repo = required_str("repo")
    if "revision" not in entry:
        raise bad("revision", "missing: pin the dataset's commit (40 hex digits), or null for a local folder")
    revision = entry["revision"]
    if revision is None:
        if not Path(repo).is_dir():
            raise bad("revision", f"null is only allowed for a local folder, and '{repo}' is not one: "
                                  "pin the hub dataset's commit (40 hex digits)")
    elif not isinstance(revision, str) or not _REVISION.match(revision):
        raise bad("revision", f"must be a full commit hash (40 hex digits), got {revision!r}")
    hf_split = entry.get("hf_split", "train")
    if not isinstance(hf_split, str) or not _SAFE_NAME.match(hf_split):
        raise bad("hf_split", f"must be a split name such as 'train', got {hf_split!r}")
    subsets = entry.get("subsets", {})
    if not isinstance(subsets, dict) or any(k not in HF_SUBSETS or not isinstance(v, str) or not v
                                            for k, v in subsets.items()):
        raise bad("subsets", f"must map some of {', '.join(HF_SUBSETS)} to config names, got {subsets!r}")
    return source, "repo", repo


def corpus_key(entry: dict) -> tuple:
    """What identifies a dataset entry's documents: equal keys, equal corpus.

    ``ir_datasets`` ids share documents through ``ir_datasets.docs_parent_id`` (every
    ``msmarco-passage/...`` id has the docs of ``msmarco-passage``); a BEIR entry is its folder
    or download name; an hf entry its repository, revision and corpus config. The entry must be
    valid (:func:`resolve_dataset` checks it).
    """
    source = entry["source"]
    if source == "ir_datasets":
        import ir_datasets

        try:
            return ("ir_datasets", ir_datasets.docs_parent_id(entry["id"]))
        except KeyError:
            return ("ir_datasets", entry["id"])
    if source == "beir":
        return ("beir", "path", str(Path(entry["path"]).resolve())) if "path" in entry else ("beir", "name", entry["name"])
    return ("hf", entry["repo"], entry.get("revision"), entry.get("hf_split", "train"),
            (entry.get("subsets") or {}).get("corpus", "corpus"))


def resolve_dataset(name: str, entry: dict, mirror: str | os.PathLike | None, datasets_file: str | os.PathLike,
                    cache_dir: str | os.PathLike, *, unknown_docs: str = "error",
                    corpus: dict[str, str] | None = None) -> Dataset:
    """Load dataset ``name`` described by one entry of ``config/datasets.yaml``.

    Entries: ``{source: beir, path: DIR}`` (relative paths are taken from the working
    directory), ``{source: beir, name: scifact}`` (BEIR download into ``cache_dir``),
    ``{source: ir_datasets, id: vaswani}`` or ``{source: hf, repo: ..., revision: <commit>}``
    (:func:`load_hf_dataset`; ``hf_split`` default ``train``, ``subsets`` optional; the
    datasets cache is ``<cache_dir>/hf-datasets``; ``revision: null`` only for a local folder).
    Optional ``split`` (default ``test``): the qrels split of a BEIR folder, and the name the
    qrels get in the canonical layout for the other sources (ignored when reading ir_datasets,
    whose id names the split, and hf, whose split is ``hf_split``); ``skip_identical_ids`` and
    ``measures`` are not used here.
    The entry is validated first; then, when ``<mirror>/data/<name>/`` exists, that BEIR
    folder is loaded instead of the source (offline machines). ``unknown_docs`` is passed
    to the loader (see the module docstring). ``corpus``: documents already loaded for an entry
    with the same :func:`corpus_key` (ir_datasets only; others ignore it).
    """
    source, key, value = _check_entry(name, entry, datasets_file)
    split = entry.get("split", "test")

    if mirror:
        mirrored = Path(mirror) / "data" / name
        if mirrored.is_dir():
            return load_beir_folder(mirrored, split=split, name=name, unknown_docs=unknown_docs)

    if source == "beir" and key == "path":
        return load_beir_folder(value, split=split, name=name, unknown_docs=unknown_docs)
    if source == "beir":
        return replace(load_beir_download(value, cache_dir, split=split, unknown_docs=unknown_docs), name=name)
    if source == "hf":
        return load_hf_dataset(value, revision=entry["revision"], hf_split=entry.get("hf_split", "train"),
                               name=name, subsets=entry.get("subsets"), unknown_docs=unknown_docs,
                               cache_dir=Path(cache_dir) / "hf-datasets")
    try:
        return load_ir_datasets(value, name=name, unknown_docs=unknown_docs, corpus=corpus)
    except _UnknownDatasetId as e:
        raise InputError(datasets_file, f"{name}.id", e.message) from None


# --------------------------------------------------------------------------- writing


def _corpus_lines(corpus: dict[str, str]) -> Iterator[bytes]:
    for doc_id, text in corpus.items():
        yield (json.dumps({"_id": doc_id, "title": "", "text": text}, ensure_ascii=False) + "\n").encode("utf-8")


def _write_corpus(corpus: dict[str, str], dest: Path, store: Path | None) -> None:
    """Write ``corpus.jsonl`` to ``dest``; with a ``store``, as a hard link to its one stored copy.

    The store holds ``<sha256>.jsonl`` per distinct corpus file. The content hash is computed
    first (serialising without writing), so a corpus already stored is linked, never written
    again. Stored copies no dataset folder links to any more (link count 1) are removed. Where
    hard links are impossible (another file system), the file is written as usual.
    """
    if store is None:
        with open(dest, "wb") as fh:
            fh.writelines(_corpus_lines(corpus))
        return
    store.mkdir(parents=True, exist_ok=True)
    for old in store.glob("*.jsonl"):
        with contextlib.suppress(OSError):
            if old.stat().st_nlink == 1:
                old.unlink()
    digest = hashlib.sha256()
    for line in _corpus_lines(corpus):
        digest.update(line)
    stored = store / f"{digest.hexdigest()}.jsonl"
    try:
        os.link(stored, dest)
        return
    except OSError:
        pass  # not stored yet (or removed meanwhile), or no hard links here: write it
    with open(dest, "wb") as fh:
        fh.writelines(_corpus_lines(corpus))
    with contextlib.suppress(OSError):  # FileExistsError: a concurrent job stored it first
        os.link(dest, stored)


def write_beir_folder(dataset: Dataset, out_dir: str | os.PathLike, split: str = "test", *,
                      corpus_store: str | os.PathLike | None = None) -> Path:
    """Write ``dataset`` as a BEIR folder, atomically (the whole folder appears at once).

    Corpus and queries keep their order (titles are already joined, so ``title`` is "");
    qrels are sorted by query id, then document id. The output is byte-for-byte
    deterministic for a given dataset. ``corpus_store``: a folder keeping one copy of each
    distinct ``corpus.jsonl``, hard-linked into every dataset folder that has it (the 8.8M
    MS MARCO passages of the dev set and TREC DL 2019 take the disk space once); see
    :func:`_write_corpus`.
    """
    out_dir = Path(out_dir)
    for query_id, judged in dataset.qrels.items():
        for doc_id in judged:
            for ident in (query_id, doc_id):
                if any(c in ident for c in "\t\r\n"):
                    raise ValueError(f"id {ident!r} contains a tab or newline; cannot be written to a TSV")
    with atomic_dir(out_dir) as tmp:
        _write_corpus(dataset.corpus, tmp / "corpus.jsonl", Path(corpus_store) if corpus_store else None)
        with open(tmp / "queries.jsonl", "w", encoding="utf-8", newline="\n") as fh:
            for query_id, text in dataset.queries.items():
                fh.write(json.dumps({"_id": query_id, "text": text}, ensure_ascii=False) + "\n")
        (tmp / "qrels").mkdir()
        with open(tmp / "qrels" / f"{split}.tsv", "w", encoding="utf-8", newline="\n") as fh:
            fh.write("query-id\tcorpus-id\tscore\n")
            for query_id in sorted(dataset.qrels):
                for doc_id in sorted(dataset.qrels[query_id]):
                    fh.write(f"{query_id}\t{doc_id}\t{int(dataset.qrels[query_id][doc_id])}\n")
    return out_dir


# --------------------------------------------------------------------------- BM25 and pooling


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
