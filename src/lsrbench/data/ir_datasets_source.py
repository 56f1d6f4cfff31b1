"""``ir_datasets`` collections as evaluation datasets: any id with docs, queries and qrels."""

from __future__ import annotations

import contextlib

from lsrbench.data.beir import (EMPTY_QUERIES_POLICIES, Dataset, assemble, collect_queries, id_problem, join_title,
                                text_problem)
from lsrbench.downloads import FetchFailed, network_reason
from lsrbench.errors import InputError

__all__ = ["UnknownDatasetId", "record_text", "load_ir_datasets", "downloads_of", "docs_parent_id"]


class UnknownDatasetId(InputError):
    """An ``ir_datasets`` id that its registry does not know."""


def record_text(record, kind: str) -> str:
    """The text of an ir_datasets document (title joined as in BEIR) or query record."""
    default_text = getattr(record, "default_text", None)
    if callable(default_text):
        try:
            return default_text()
        except NotImplementedError:
            pass
    if kind == "doc":
        return join_title(getattr(record, "title", "") or "", getattr(record, "text", "") or "")
    return getattr(record, "text", "") or ""


@contextlib.contextmanager
def downloads_of(dataset_id: str):
    """A failed ir_datasets download while reading becomes :class:`FetchFailed` naming the id, URLs and
    reason."""
    try:
        yield
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - anything else is re-raised as it is
        reason = network_reason(exc) or _download_error(exc)
        if reason is None:
            raise
        raise FetchFailed(f"ir_datasets:{dataset_id}", None, f"ir_datasets '{dataset_id}'",
                          ", ".join(_urls(exc)) or "its download sources", reason) from None


def _download_error(exc: BaseException) -> str | None:
    """The first line of a download ir_datasets gave up on for another reason than the connection."""
    errors = [pair[1] for arg in exc.args[1:] if isinstance(arg, list) for pair in arg if isinstance(pair, tuple)]
    if exc.args[:1] == ("All download sources failed",) and errors:
        exc = errors[-1]
    elif not any(cls.__name__ == "RequestException" for cls in type(exc).__mro__):
        return None
    return " ".join((str(exc).strip().splitlines() or [type(exc).__name__])[0].split())


def _urls(exc: BaseException) -> list[str]:
    urls = [getattr(pair[0], "url", None) for arg in exc.args if isinstance(arg, list)
            for pair in arg if isinstance(pair, tuple) and pair]
    urls = urls or [getattr(getattr(exc, "request", None), "url", None)]
    return [u for u in urls if isinstance(u, str)]


def load_ir_datasets(dataset_id: str, name: str | None = None, *, unknown_docs: str = "error",
                     corpus: dict[str, str] | None = None, empty_queries: str = "error") -> Dataset:
    """Load an ``ir_datasets`` collection validated like a BEIR folder (errors name ``ir_datasets:<id>`` and
    ``doc #N``); ``corpus`` reuses documents already loaded for the same docs."""
    if empty_queries not in EMPTY_QUERIES_POLICIES:
        raise ValueError(f"empty_queries must be one of {EMPTY_QUERIES_POLICIES}, got {empty_queries!r}")
    with downloads_of(dataset_id):
        return _load(dataset_id, name, unknown_docs, corpus, empty_queries)


def _load(dataset_id: str, name: str | None, unknown_docs: str, corpus: dict[str, str] | None,
          empty_queries: str) -> Dataset:
    import ir_datasets

    source = f"ir_datasets:{dataset_id}"
    try:
        ds = ir_datasets.load(dataset_id)
    except KeyError:
        raise UnknownDatasetId(source, None, f"unknown ir_datasets id '{dataset_id}'") from None
    for part in ("docs", "queries", "qrels"):
        if not getattr(ds, f"has_{part}")():
            raise InputError(source, None, f"dataset provides no {part}")

    if corpus is None:
        corpus = {}
        first: dict[str, int] = {}
        for n, doc in enumerate(ds.docs_iter(), 1):
            doc_id = _checked_id(doc.doc_id, source, f"doc #{n}")
            if doc_id in corpus:
                raise InputError(source, f"doc #{n}", f"duplicate document id '{doc_id}' (first as doc #{first[doc_id]})")
            corpus[doc_id] = _checked_text(record_text(doc, "doc"), source, f"doc #{n}")
            first[doc_id] = n
    if not corpus:
        raise InputError(source, "docs", "corpus is empty (no documents)")

    queries, empty = _queries(ds, source, empty_queries)
    rows = ((str(q.query_id), str(q.doc_id), int(q.relevance), f"qrel #{n}")
            for n, q in enumerate(ds.qrels_iter(), 1) if str(q.query_id) not in empty)
    loaded = assemble(name or dataset_id, corpus, queries, rows, qrels_file=source,
                      corpus_label="docs", queries_label="queries", unknown_docs=unknown_docs)
    loaded.empty_queries = len(empty)
    return loaded


def _queries(ds, source: str, empty_queries: str) -> tuple[dict[str, str], set[str]]:
    rows = ((f"query #{n}", _checked_id(query.query_id, source, f"query #{n}"),
             _checked_text(record_text(query, "query"), source, f"query #{n}"))
            for n, query in enumerate(ds.queries_iter(), 1))
    return collect_queries(rows, source, empty_queries, none_field="queries")


def _checked_text(value: str, source: str, where: str) -> str:
    problem = text_problem(value)
    if problem:
        raise InputError(source, where, f"text {problem}")
    return value


def _checked_id(value, source: str, where: str) -> str:
    problem = id_problem(str(value))
    if problem:
        raise InputError(source, where, f"id {problem}")
    return str(value)


def docs_parent_id(dataset_id: str) -> str:
    """The id whose documents ``dataset_id`` has (every ``msmarco-passage/...`` id: ``msmarco-passage``);
    itself when ir_datasets does not know it."""
    import ir_datasets

    try:
        return ir_datasets.docs_parent_id(dataset_id)
    except KeyError:
        return dataset_id
