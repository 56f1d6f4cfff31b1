"""Datasets in one canonical on-disk form: BEIR's layout (Thakur et al., "BEIR: A Heterogeneous
Benchmark for Zero-shot Evaluation of Information Retrieval Models", NeurIPS 2021 Datasets and
Benchmarks), and the one reader of it.

A dataset folder holds ``corpus.jsonl`` (``{"_id", "title", "text"}`` per line),
``queries.jsonl`` (``{"_id", "text"}``) and ``qrels/<split>.tsv`` (header
``query-id<TAB>corpus-id<TAB>score``, integer scores, graded relevance and 0 allowed).

Written here rather than taken from ``beir.datasets.data_loader.GenericDataLoader`` because
every bad input must become one line naming the file and the line at fault, and because the
loader validates what later stages rely on; the values returned equal BEIR's loader's on valid
folders. Conventions follow BEIR's own loader and evaluation:

* a non-empty title is joined to the text as ``title + " " + text``;
* queries without any judgment in the split are dropped (counted in
  ``Dataset.dropped_queries``), since BEIR evaluates only judged queries;
* a (query, document) pair judged twice with the same score is one judgment; two different
  scores for one pair are an error (BEIR's loader would silently keep the last).

Unlike BEIR's loader (which silently accepts them) qrels that name unknown queries or documents
are rejected by default. Real BEIR data has a few dangling document ids (ArguAna's
``qrels/test.tsv`` names ``test-free-speech-debate-yfsdfkhbwu-con03b``, absent from its corpus),
so loaders take ``unknown_docs``:

* ``"error"`` (default): raise :class:`InputError` naming the qrels line;
* ``"keep"``: keep the judgment, as BEIR's evaluation does (a relevant document no system
  can retrieve; this reproduces BEIR's published numbers);
* ``"drop"``: drop the judgment.

Either way the number of such judgments is recorded in ``Dataset.unknown_doc_qrels``. Other
sources (ir_datasets, Hugging Face) are read by :mod:`lsrbench.data.sources` into the same
:class:`Dataset` through :func:`assemble`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from lsrbench.errors import InputError

__all__ = ["Dataset", "UNKNOWN_DOCS_POLICIES", "iter_jsonl", "join_title", "read_qrels_tsv",
           "assemble", "load_beir_folder"]

UNKNOWN_DOCS_POLICIES = ("error", "keep", "drop")


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


def join_title(title: str, text: str) -> str:
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
        corpus[doc_id] = join_title(title, text)
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


def read_qrels_tsv(path: str | os.PathLike) -> Iterator[tuple[str, str, int, str]]:
    """Yield ``(query id, doc id, relevance, "line N")`` of a BEIR ``qrels/<split>.tsv``; the header
    line is skipped. Judgments are checked against queries and documents by :func:`assemble`."""
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


def assemble(
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
    return assemble(
        name or folder.name, corpus, queries, read_qrels_tsv(qrels_path),
        qrels_file=qrels_path, corpus_label=corpus_path.name, queries_label=queries_path.name,
        unknown_docs=unknown_docs,
    )


