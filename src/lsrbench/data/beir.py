"""Datasets in one canonical on-disk form, BEIR's layout, and its one reader. Written here rather than taken
from BEIR's ``GenericDataLoader`` because every bad input must be one line naming file and line; values equal
BEIR's loader's on valid folders."""

from __future__ import annotations

import itertools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from lsrbench.errors import InputError

__all__ = ["read_written_folder", "written_split", "Dataset", "UNKNOWN_DOCS_POLICIES", "EMPTY_QUERIES_POLICIES",
           "RELEVANCE_RANGE", "iter_jsonl", "id_problem", "text_problem", "empty_query_error", "collect_queries",
           "join_title", "read_qrels_tsv", "assemble", "load_beir_folder", "check_beir_folder"]

UNKNOWN_DOCS_POLICIES = ("error", "keep", "drop")
EMPTY_QUERIES_POLICIES = ("error", "drop")


@dataclass
class Dataset:
    """An evaluation collection in memory, source order kept; every query has a judgment and qrels name only
    known ids (unknown documents only with ``unknown_docs="keep"``)."""

    corpus: dict[str, str]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    name: str
    dropped_queries: int = 0  # queries in the source without a judgment in this split
    unknown_doc_qrels: int = 0  # judgments naming documents absent from the corpus (kept or dropped)
    empty_queries: int = 0  # queries without text, dropped with their judgments (empty_queries: drop)


def iter_jsonl(path: str | os.PathLike) -> Iterator[tuple[int, dict]]:
    """Yield ``(line number, object)`` per non-blank line, decoded line by line so a bad line is named."""
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
    problem = id_problem(value)
    if problem:
        raise InputError(path, f"line {lineno}", f"field '_id' {problem}")
    return value


def id_problem(value: str) -> str | None:
    """Why ``value`` cannot be an id (empty, or whitespace: TREC files are whitespace-separated), or None."""
    if not value.strip():
        return "is empty"
    if any(c.isspace() for c in value):
        return f"{value!r} contains whitespace (TREC run files cannot hold it)"
    return text_problem(value)


def text_problem(value: str) -> str | None:
    """Why a decoded string is not text (a lone surrogate has no UTF-8 form), or None."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        return (f"holds the lone surrogate {ascii(value[e.start])[1:-1]} at character {e.start + 1}: valid JSON "
                "(a \\u escape), but not text (it has no UTF-8 form; a surrogate must come in a high-low pair)")
    return None


def empty_query_error(file, where: str, query_id: str, text: str) -> InputError:
    """The line for a query without text under ``empty_queries: error`` (the default)."""
    return InputError(file, where, f"query '{query_id}' has no text ({text!r}): it would be scored 0 on every "
                                   "document; fix the data, or set empty_queries: drop in its datasets file entry "
                                   "(dropped queries are counted in the dataset's info.json)")


def _get_str(record: dict, key: str, path: Path, lineno: int, required: bool) -> str:
    if key not in record or record[key] is None:
        if required:
            raise InputError(path, f"line {lineno}", f"missing field '{key}'")
        return ""
    value = record[key]
    if not isinstance(value, str):
        raise InputError(path, f"line {lineno}", f"field '{key}' must be a string, got {type(value).__name__}")
    problem = text_problem(value)
    if problem:
        raise InputError(path, f"line {lineno}", f"field '{key}' {problem}")
    return value


def join_title(title: str, text: str) -> str:
    """BEIR's convention: ``title + " " + text`` when the title is non-empty."""
    return " ".join(part for part in (title, text) if part)


def _read_corpus_jsonl(path: Path, limit: int | None = None) -> dict[str, str]:
    corpus: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for lineno, record in itertools.islice(iter_jsonl(path), limit):
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


def _read_queries_jsonl(path: Path, limit: int | None = None,
                        empty_queries: str = "error") -> tuple[dict[str, str], set[str]]:
    rows = ((f"line {lineno}", _get_id(record, path, lineno), _get_str(record, "text", path, lineno, required=True))
            for lineno, record in itertools.islice(iter_jsonl(path), limit))
    return collect_queries(rows, path, empty_queries)


def collect_queries(rows: Iterable[tuple[str, str, str]], file, empty_queries: str,
                    none_field: str | None = None) -> tuple[dict[str, str], set[str]]:
    """``{id: text}`` of the rows with text and the ids of those without; ids unique, at least one query
    left."""
    queries: dict[str, str] = {}
    empty: set[str] = set()
    first: dict[str, str] = {}
    for where, query_id, text in rows:
        if query_id in first:
            raise InputError(file, where, f"duplicate query id '{query_id}' (first on {first[query_id]})")
        first[query_id] = where
        if text.strip():
            queries[query_id] = text
        elif empty_queries == "drop":
            empty.add(query_id)
        else:
            raise empty_query_error(file, where, query_id, text)
    if not queries:
        raise InputError(file, none_field, "no queries" + (" with text" if empty else ""))
    return queries, empty


# Relevance grades as pytrec_eval (behind ir_measures) holds them: a C int.
RELEVANCE_RANGE = (-(2**31), 2**31 - 1)
_INTEGER = re.compile(r"[+-]?[0-9]+")


def _relevance(text: str) -> int | None:
    """The grade in a qrels score column: ASCII digits within :data:`RELEVANCE_RANGE`, else None."""
    if not _INTEGER.fullmatch(text):
        return None
    value = int(text)
    return value if RELEVANCE_RANGE[0] <= value <= RELEVANCE_RANGE[1] else None


def _is_header(cols: list[str]) -> bool:
    """Whether the first line is a header: its score column is no number at all."""
    try:
        float(cols[2])
    except ValueError:
        return True
    return False


def read_qrels_tsv(path: str | os.PathLike) -> Iterator[tuple[str, str, int, str]]:
    """Yield ``(query id, doc id, relevance, "line N")`` of a qrels file, header skipped."""
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
                if len(cols) == 3 and _is_header(cols):
                    continue
            if len(cols) != 3:
                raise InputError(path, where, f"expected 3 tab-separated columns (query-id, corpus-id, score), got {len(cols)}")
            query_id, doc_id, score = cols
            for what, value in (("query-id", query_id), ("corpus-id", doc_id)):
                problem = id_problem(value)
                if problem:
                    raise InputError(path, where, f"{what} {problem}")
            relevance = _relevance(score)
            if relevance is None:
                raise InputError(path, where, f"score '{score}' is not an integer from {RELEVANCE_RANGE[0]} to {RELEVANCE_RANGE[1]}")
            yield query_id, doc_id, relevance, where


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
        if not RELEVANCE_RANGE[0] <= rel <= RELEVANCE_RANGE[1]:
            raise InputError(qrels_file, where, f"relevance {rel} is outside {RELEVANCE_RANGE[0]}..{RELEVANCE_RANGE[1]}")
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


def _beir_files(path: str | os.PathLike, split: str) -> tuple[Path, Path, Path]:
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
    return corpus_path, queries_path, qrels_path


def load_beir_folder(path: str | os.PathLike, split: str = "test", name: str | None = None, *,
                     unknown_docs: str = "error", empty_queries: str = "error") -> Dataset:
    """Load a BEIR-layout folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``)."""
    if empty_queries not in EMPTY_QUERIES_POLICIES:
        raise ValueError(f"empty_queries must be one of {EMPTY_QUERIES_POLICIES}, got {empty_queries!r}")
    corpus_path, queries_path, qrels_path = _beir_files(path, split)
    corpus = _read_corpus_jsonl(corpus_path)
    queries, empty = _read_queries_jsonl(queries_path, empty_queries=empty_queries)
    ds = assemble(
        name or Path(path).name, corpus, queries, (row for row in read_qrels_tsv(qrels_path) if row[0] not in empty),
        qrels_file=qrels_path, corpus_label=corpus_path.name, queries_label=queries_path.name,
        unknown_docs=unknown_docs,
    )
    ds.empty_queries = len(empty)
    return ds


# Up to this size corpus and queries are checked whole before a run; beyond it their first lines.
FULL_CHECK_BYTES = 64 * 2**20
HEAD_LINES = 1000


def read_written_folder(path: str | os.PathLike, name: str | None = None) -> Dataset:
    """A BEIR folder this pipeline wrote: its one split, its unknown-document policy already applied."""
    return load_beir_folder(path, split=written_split(path), name=name, unknown_docs="keep")


def written_split(path: str | os.PathLike) -> str:
    """The qrels split a dataset folder was written with (its one ``qrels/<split>.tsv``)."""
    splits = sorted(p.stem for p in (Path(path) / "qrels").glob("*.tsv"))
    if len(splits) != 1:
        raise InputError(Path(path) / "qrels", None, f"expected the one qrels split a dataset folder is written "
                                                     f"with, found {len(splits)} ({', '.join(splits) or 'none'})")
    return splits[0]


def check_beir_folder(path: str | os.PathLike, split: str = "test", *, unknown_docs: str = "error",
                      empty_queries: str = "error", max_bytes: int = FULL_CHECK_BYTES) -> bool:
    """Check a BEIR folder before a run, in bounded time: whole when corpus and queries fit ``max_bytes``, else
    their first :data:`HEAD_LINES` records. Returns whether it was checked whole."""
    corpus_path, queries_path, qrels_path = _beir_files(path, split)
    small = [p.stat().st_size <= max_bytes for p in (corpus_path, queries_path)]
    if all(small):
        load_beir_folder(path, split, unknown_docs=unknown_docs, empty_queries=empty_queries)
        return True
    _read_corpus_jsonl(corpus_path, limit=None if small[0] else HEAD_LINES)
    queries, empty = _read_queries_jsonl(queries_path, limit=None if small[1] else HEAD_LINES, empty_queries=empty_queries)
    for query_id, _, _, where in read_qrels_tsv(qrels_path):
        if small[1] and query_id not in queries and query_id not in empty:
            raise InputError(qrels_path, where, f"unknown query id '{query_id}' (not in {queries_path.name})")
    return False
