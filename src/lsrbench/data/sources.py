"""Where a dataset of ``config/datasets.yaml`` comes from: one small :class:`Source` per
``source:`` value, in the manner of ir_measures' providers (one interface, declared keys).

Entries: ``{source: beir, path: DIR}`` (a local BEIR folder; relative paths are taken from the
working directory), ``{source: beir, name: scifact}`` (BEIR's public zip, into ``cache_dir``),
``{source: ir_datasets, id: vaswani}`` or ``{source: hf, repo: ..., revision: <commit>}``
(:func:`lsrbench.data.hf.load_hf_dataset`; ``hf_split`` default ``train``, ``subsets`` optional;
the datasets cache is ``<cache_dir>/hf-datasets``; ``revision: null`` only for a local folder).
Optional ``split`` (default ``test``): the qrels split of a BEIR folder, and the name the qrels
get in the canonical layout for the other sources (ignored when reading ir_datasets, whose id
names the split, and hf, whose split is ``hf_split``); ``skip_identical_ids`` and ``measures``
are evaluation settings, not read here.

:func:`resolve_dataset` validates an entry, then loads ``<mirror>/data/<name>/`` (a BEIR folder
written by ``lsrbench prefetch``) when it exists, the source otherwise.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Callable

from lsrbench.data.beir import Dataset, load_beir_folder
from lsrbench.downloads import FetchFailed
from lsrbench.errors import InputError
from lsrbench.names import SAFE_NAME, is_commit

__all__ = ["Source", "SOURCES", "check_entry", "corpus_key", "resolve_dataset", "mirrored_folder"]

Bad = Callable[[str | None, str], InputError]


class Source:
    """One ``source:`` of the dataset registry."""

    name: str = ""
    keys: tuple[str, ...] = ()  # the entry keys this source reads (besides source, split, ...)

    def check(self, entry: dict, bad: Bad) -> None:
        """Raise ``bad(key, message)`` for an entry this source cannot load."""

    def corpus_key(self, entry: dict) -> tuple:
        """What identifies the entry's documents: equal keys, equal corpus."""
        raise NotImplementedError

    def load(self, name: str, entry: dict, *, cache_dir, unknown_docs: str, corpus=None,
             empty_queries: str = "error") -> Dataset:
        """The dataset itself, validated (see :mod:`lsrbench.data.beir`)."""
        raise NotImplementedError


def _required_str(entry: dict, key: str, source: str, bad: Bad) -> str:
    value = entry.get(key)
    if value is None:
        raise bad(key, f"missing (required for source '{source}')")
    if not isinstance(value, str) or not value.strip():
        raise bad(key, f"must be a non-empty string, got {value!r}")
    return value


class BeirSource(Source):
    """A local BEIR folder (``path``) or BEIR's public zip (``name``)."""

    name, keys = "beir", ("path", "name")

    def check(self, entry, bad):
        if "path" in entry and "name" in entry:
            raise bad("path", "give either 'path' (a BEIR folder) or 'name' (a BEIR download), not both")
        if "path" not in entry and "name" not in entry:
            raise bad("path", "source 'beir' needs 'path' (a BEIR folder) or 'name' (a BEIR download name)")
        key = "path" if "path" in entry else "name"
        value = _required_str(entry, key, self.name, bad)
        if key == "name" and not SAFE_NAME.match(value):
            raise bad("name", f"'{value}' is not a valid BEIR dataset name")

    def corpus_key(self, entry):
        return ("beir", "path", str(Path(entry["path"]).resolve())) if "path" in entry else ("beir", "name", entry["name"])

    def load(self, name, entry, *, cache_dir, unknown_docs, corpus=None, empty_queries="error"):
        split = entry.get("split", "test")
        if "path" in entry:
            return load_beir_folder(entry["path"], split=split, name=name, unknown_docs=unknown_docs,
                                    empty_queries=empty_queries)
        from lsrbench.data.beir_download import load_beir_download

        return replace(load_beir_download(entry["name"], cache_dir, split=split, unknown_docs=unknown_docs,
                                          empty_queries=empty_queries), name=name)


class IrDatasetsSource(Source):
    """Any ``ir_datasets`` id with docs, queries and qrels (``id``), e.g. ``msmarco-passage/dev/small``."""

    name, keys = "ir_datasets", ("id",)

    def check(self, entry, bad):
        _required_str(entry, "id", self.name, bad)

    def corpus_key(self, entry):
        # every msmarco-passage/... id has the docs of msmarco-passage
        from lsrbench.data.ir_datasets_source import docs_parent_id

        return ("ir_datasets", docs_parent_id(entry["id"]))

    def load(self, name, entry, *, cache_dir, unknown_docs, corpus=None, empty_queries="error"):
        from lsrbench.data.ir_datasets_source import load_ir_datasets

        return load_ir_datasets(entry["id"], name=name, unknown_docs=unknown_docs, corpus=corpus,
                                empty_queries=empty_queries)


class HfSource(Source):
    """A Hugging Face datasets repository in the NanoBEIR layout, at a pinned revision."""

    name, keys = "hf", ("repo", "revision", "hf_split", "subsets")

    def check(self, entry, bad):
        from lsrbench.data.hf import HF_SUBSETS

        repo = _required_str(entry, "repo", self.name, bad)
        if "revision" not in entry:
            raise bad("revision", "missing: pin the dataset's commit (40 hex digits), or null for a local folder")
        revision = entry["revision"]
        if revision is None:
            if not Path(repo).is_dir():
                raise bad("revision", f"null is only allowed for a local folder, and '{repo}' is not one: "
                                      "pin the hub dataset's commit (40 hex digits)")
        elif not is_commit(revision):
            raise bad("revision", f"must be a full commit hash (40 hex digits), got {revision!r}")
        hf_split = entry.get("hf_split", "train")
        if not isinstance(hf_split, str) or not SAFE_NAME.match(hf_split):
            raise bad("hf_split", f"must be a split name such as 'train', got {hf_split!r}")
        subsets = entry.get("subsets", {})
        if not isinstance(subsets, dict) or any(k not in HF_SUBSETS or not isinstance(v, str) or not v
                                                for k, v in subsets.items()):
            raise bad("subsets", f"must map some of {', '.join(HF_SUBSETS)} to config names, got {subsets!r}")

    def corpus_key(self, entry):
        return ("hf", entry["repo"], entry.get("revision"), entry.get("hf_split", "train"),
                (entry.get("subsets") or {}).get("corpus", "corpus"))

    def load(self, name, entry, *, cache_dir, unknown_docs, corpus=None, empty_queries="error"):
        from lsrbench.data.hf import load_hf_dataset

        return load_hf_dataset(entry["repo"], revision=entry["revision"], hf_split=entry.get("hf_split", "train"),
                               name=name, subsets=entry.get("subsets"), unknown_docs=unknown_docs,
                               cache_dir=Path(cache_dir) / "hf-datasets", empty_queries=empty_queries)


SOURCES: dict[str, Source] = {s.name: s for s in (BeirSource(), IrDatasetsSource(), HfSource())}


def check_entry(name: str, entry, datasets_file) -> Source:
    """Validate one datasets.yaml entry; return its :class:`Source`. Errors name ``<name>.<key>``."""
    def bad(key: str | None, message: str) -> InputError:
        return InputError(datasets_file, f"{name}.{key}" if key else name, message)

    if not isinstance(entry, dict):
        raise bad(None, f"entry must be a mapping, got {type(entry).__name__}")
    split = entry.get("split", "test")
    if not isinstance(split, str) or not SAFE_NAME.match(split):
        raise bad("split", f"must be a split name such as 'test', got {split!r}")
    if "source" not in entry:
        raise bad("source", f"missing; expected one of: {', '.join(SOURCES)}")
    source = SOURCES.get(entry["source"]) if isinstance(entry["source"], str) else None
    if source is None:
        raise bad("source", f"unknown source {entry['source']!r}; expected one of: {', '.join(SOURCES)}")
    source.check(entry, bad)
    return source


def corpus_key(entry: dict) -> tuple:
    """What identifies a (valid) dataset entry's documents: equal keys, equal corpus."""
    return SOURCES[entry["source"]].corpus_key(entry)


def mirrored_folder(mirror: str | os.PathLike | None, name: str) -> Path | None:
    """``<mirror>/data/<name>/`` when the mirror holds the dataset, else None."""
    if not mirror:
        return None
    folder = Path(mirror) / "data" / name
    return folder if folder.is_dir() else None


def resolve_dataset(name: str, entry: dict, mirror: str | os.PathLike | None, datasets_file: str | os.PathLike,
                    cache_dir: str | os.PathLike, *, unknown_docs: str = "error",
                    corpus: dict[str, str] | None = None, empty_queries: str | None = None) -> Dataset:
    """Load dataset ``name`` described by one entry of ``config/datasets.yaml``: from the mirror
    when it has it (offline machines), else from its source. ``corpus``: documents already loaded
    for an entry with the same :func:`corpus_key` (ir_datasets only; others ignore it).
    ``empty_queries``: the entry's own setting when None (default ``error``)."""
    empty_queries = empty_queries or entry.get("empty_queries", "error")
    from lsrbench.data.ir_datasets_source import UnknownDatasetId

    source = check_entry(name, entry, datasets_file)
    folder = mirrored_folder(mirror, name)
    if folder is not None:
        return load_beir_folder(folder, split=entry.get("split", "test"), name=name, unknown_docs=unknown_docs,
                                empty_queries=empty_queries)
    try:
        return source.load(name, entry, cache_dir=cache_dir, unknown_docs=unknown_docs, corpus=corpus,
                           empty_queries=empty_queries)
    except UnknownDatasetId as e:
        raise InputError(datasets_file, f"{name}.id", e.message) from None
    except FetchFailed as failed:  # named by the entry's key that asked for the download
        raise failed.at(datasets_file, f"{name}.{next(k for k in source.keys if k in entry)}") from None
