"""Hugging Face datasets repositories in the NanoBEIR layout as evaluation collections, and lsrbench's one call
of ``datasets.load_dataset``."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Iterator, Sequence

from lsrbench.data.beir import (EMPTY_QUERIES_POLICIES, RELEVANCE_RANGE, Dataset, assemble, empty_query_error, id_problem,
                                text_problem)
from lsrbench.downloads import FetchFailed, network_reason
from lsrbench.errors import InputError

__all__ = ["HF_SUBSETS", "hf_label", "load_hf_split", "load_hf_dataset"]

HF_SUBSETS = ("corpus", "queries", "qrels")


def hf_label(repo: str, revision: str | None) -> str:
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
        reason = network_reason(e)
        if reason is not None:
            from huggingface_hub.constants import ENDPOINT

            raise FetchFailed(label, where, f"dataset '{repo}'", f"the Hugging Face hub ({ENDPOINT})", reason) from None
        raise InputError(label, where, f"cannot load: {_first_lines(e)}") from None


def _first_lines(exc: BaseException) -> str:
    def first(e: BaseException) -> str:
        return (str(e).strip().splitlines() or [type(e).__name__])[0]

    root = exc
    while root.__cause__ is not None:  # explicit `raise ... from`: the error it was raised for
        root = root.__cause__
    return first(exc) if root is exc or first(root) in first(exc) else f"{first(exc)} ({first(root)})"


def _load_hf_subset(repo: str, subset: str, split: str, revision: str | None, cache_dir, label: str,
                    required: Sequence[str]):
    ds = load_hf_split(repo, subset, split, revision, cache_dir, label, f"{subset}[{split}]")
    missing = [c for c in required if c not in ds.column_names]
    if missing:
        raise InputError(label, f"{subset}[{split}]",
                         f"missing column {', '.join(repr(c) for c in missing)} (columns: {', '.join(ds.column_names)})")
    return ds


def _hf_id(value, label: str, where: str, column: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise InputError(label, where, f"column '{column}' must be a non-empty string id, got {value!r}")
    problem = id_problem(str(value))
    if problem:
        raise InputError(label, where, f"column '{column}' {problem}")
    return str(value)


def load_hf_dataset(repo: str, *, revision: str | None, hf_split: str = "train", name: str | None = None,
                    subsets: dict[str, str] | None = None, unknown_docs: str = "error",
                    cache_dir: str | os.PathLike | None = None, empty_queries: str = "error") -> Dataset:
    """Load a datasets repository (or local folder) in the NanoBEIR layout, as sentence-transformers'
    ``NanoBEIREvaluator`` reads it: a document is its ``text`` alone, empty documents dropped, ``score`` default
    1. Queries without text follow ``empty_queries``. Errors name ``hf:<repo>@<revision>`` and
    ``<subset>[<split>] row N``."""
    if empty_queries not in EMPTY_QUERIES_POLICIES:
        raise ValueError(f"empty_queries must be one of {EMPTY_QUERIES_POLICIES}, got {empty_queries!r}")
    label = hf_label(repo, revision)
    names = {**{s: s for s in HF_SUBSETS}, **(subsets or {})}
    corpus_ds = _load_hf_subset(repo, names["corpus"], hf_split, revision, cache_dir, label, ("_id", "text"))
    queries_ds = _load_hf_subset(repo, names["queries"], hf_split, revision, cache_dir, label, ("_id", "text"))
    qrels_ds = _load_hf_subset(repo, names["qrels"], hf_split, revision, cache_dir, label, ("query-id", "corpus-id"))

    def where(subset: str, n: int) -> str:
        return f"{names[subset]}[{hf_split}] row {n}"

    def texts(ds, subset: str) -> Iterator[tuple[int, str, str]]:
        for i, (raw_id, text) in enumerate(zip(list(ds["_id"]), list(ds["text"]))):
            ident = _hf_id(raw_id, label, where(subset, i + 1), "_id")
            if text is not None and not isinstance(text, str):
                raise InputError(label, where(subset, i + 1), f"column 'text' must be a string, got {type(text).__name__}")
            problem = text_problem(text) if isinstance(text, str) else None
            if problem:
                raise InputError(label, where(subset, i + 1), f"column 'text' {problem}")
            yield i + 1, ident, text or ""

    def collect(ds, subset: str, what: str, none_left: str) -> tuple[dict[str, str], set[str]]:
        """``{id: text}`` of the rows with text, and the ids of the rows without; ids unique."""
        kept: dict[str, str] = {}
        empty: set[str] = set()
        for n, ident, text in texts(ds, subset):
            if ident in kept or ident in empty:
                raise InputError(label, where(subset, n), f"duplicate {what} id '{ident}'")
            if text.strip() if subset == "queries" else text:
                kept[ident] = text
            elif subset == "queries" and empty_queries == "error":
                raise empty_query_error(label, where(subset, n), ident, text)
            else:
                empty.add(ident)
        if not kept:
            raise InputError(label, names[subset], none_left)
        return kept, empty

    corpus, empty_docs = collect(corpus_ds, "corpus", "document", "corpus is empty (no documents with text)")
    queries, empty_query_ids = collect(queries_ds, "queries", "query", "no queries with text")

    scores = list(qrels_ds["score"]) if "score" in qrels_ds.column_names else None

    def rows() -> Iterator[tuple[str, str, int, str]]:
        for i, (raw_q, raw_d) in enumerate(zip(list(qrels_ds["query-id"]), list(qrels_ds["corpus-id"]))):
            at = where("qrels", i + 1)
            query_id = _hf_id(raw_q, label, at, "query-id")
            if query_id in empty_query_ids:
                continue
            rel = 1 if scores is None else scores[i]
            if isinstance(rel, float) and rel.is_integer():
                rel = int(rel)
            if isinstance(rel, bool) or not isinstance(rel, int) or not RELEVANCE_RANGE[0] <= rel <= RELEVANCE_RANGE[1]:
                raise InputError(label, at, f"score {rel!r} is not an integer from {RELEVANCE_RANGE[0]} to {RELEVANCE_RANGE[1]}")
            for raw in (raw_d if isinstance(raw_d, list) else [raw_d]):
                yield query_id, _hf_id(raw, label, at, "corpus-id"), rel, at

    ds = assemble(name or repo, corpus, queries, rows(), qrels_file=label,
                   corpus_label=f"{names['corpus']} (documents with empty text dropped)" if empty_docs else names["corpus"],
                   queries_label=names["queries"], unknown_docs=unknown_docs)
    return replace(ds, empty_queries=len(empty_query_ids))
