"""Where a dataset of ``config/datasets.yaml`` comes from: one :class:`Source` per ``source:`` value (``beir``
folder or zip, ``ir_datasets``, ``hf``). :func:`resolve_dataset` loads the mirror's copy when there is one, else
the source."""

from __future__ import annotations

import functools
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Callable

from lsrbench.config.entries import DatasetEntry
from lsrbench.config.schema import validate
from lsrbench.data.beir import Dataset, load_beir_folder
from lsrbench.downloads import FetchFailed
from lsrbench.errors import InputError
from lsrbench.names import SAFE_NAME, is_commit

__all__ = ["Source", "SOURCES", "check_entry", "typed_entry", "corpus_key", "first_with_corpus", "resolve_dataset", "mirrored_folder",
           "source_identity", "data_folder_on_disk"]

Bad = Callable[[str | None, str], InputError]
Fingerprint = Callable[..., dict]


class Source:
    """One ``source:`` of the registry: how an entry is checked, identified, found and loaded. A new source is
    one subclass, one line in :data:`SOURCES` and its schema keys."""

    name: str = ""
    keys: tuple[str, ...] = ()

    def check(self, entry: dict, bad: Bad) -> None:
        """Raise ``bad(key, message)`` for an entry this source cannot load."""

    def corpus_key(self, entry: DatasetEntry) -> tuple:
        """What identifies the entry's documents: equal keys, equal corpus."""
        raise NotImplementedError

    def load(self, entry: DatasetEntry, *, cache_dir, unknown_docs: str, corpus=None,
             empty_queries: str) -> Dataset:
        """The dataset itself, validated (see :mod:`lsrbench.data.beir`)."""
        raise NotImplementedError

    def local_folder(self, entry: DatasetEntry) -> Path | None:
        """The BEIR folder on this machine the entry names (a local dataset), else None."""
        return None

    def identity(self, entry: DatasetEntry, folder: Path | None, fingerprint: Fingerprint) -> dict:
        """What the entry's data is for the dataset stage's id: the bytes of ``folder`` when there is one, else
        the source's keys."""
        return {"source": self.name, **self.describe(entry)}

    def describe(self, entry: DatasetEntry) -> dict:
        """The entry's own keys (as the registry gives them): what prefetch records."""
        return {k: getattr(entry, "download" if k == "name" else k) for k in self.keys if entry.has(k)}


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
        if "md5" in entry and "name" not in entry:
            raise bad("md5", "checks a BEIR download ('name'), not a local folder ('path')")
        key = "path" if "path" in entry else "name"
        value = _required_str(entry, key, self.name, bad)
        if key == "name" and not SAFE_NAME.match(value):
            raise bad("name", f"'{value}' is not a valid BEIR dataset name")

    def corpus_key(self, entry):
        return ("beir", "path", str(Path(entry.path).resolve())) if entry.path else ("beir", "name", entry.download)

    def load(self, entry, *, cache_dir, unknown_docs, corpus=None, empty_queries):
        if entry.path:
            return load_beir_folder(entry.path, split=entry.split, name=entry.name, unknown_docs=unknown_docs,
                                    empty_queries=empty_queries)
        from lsrbench.data.beir_download import load_beir_download

        return replace(load_beir_download(entry.download, cache_dir, split=entry.split, unknown_docs=unknown_docs,
                                          empty_queries=empty_queries, md5=entry.md5), name=entry.name)

    def local_folder(self, entry):
        return Path(entry.path) if entry.path else None

    def identity(self, entry, folder, fingerprint):
        if folder is None:
            return super().identity(entry, folder, fingerprint)
        return {"source": self.name, **fingerprint(folder, ["corpus.jsonl", "queries.jsonl", f"qrels/{entry.split}.tsv"])}


class IrDatasetsSource(Source):
    """Any ``ir_datasets`` id with docs, queries and qrels (``id``), e.g. ``msmarco-passage/dev/small``."""

    name, keys = "ir_datasets", ("id",)

    def check(self, entry, bad):
        _required_str(entry, "id", self.name, bad)

    def corpus_key(self, entry):
        from lsrbench.data.ir_datasets_source import docs_parent_id

        return ("ir_datasets", docs_parent_id(entry.id))

    def load(self, entry, *, cache_dir, unknown_docs, corpus=None, empty_queries):
        from lsrbench.data.ir_datasets_source import load_ir_datasets

        return load_ir_datasets(entry.id, name=entry.name, unknown_docs=unknown_docs, corpus=corpus,
                                empty_queries=empty_queries)


# The hf reader's version, in its datasets' ids: an earlier reader's output is another dataset.
READER_VERSION = 2


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
        hf_split = entry.get("hf_split")
        if hf_split is not None and (not isinstance(hf_split, str) or not SAFE_NAME.match(hf_split)):
            raise bad("hf_split", f"must be a split name such as 'train', got {hf_split!r}")
        subsets = entry.get("subsets", {})
        if not isinstance(subsets, dict) or any(k not in HF_SUBSETS or not isinstance(v, str) or not v
                                                for k, v in subsets.items()):
            raise bad("subsets", f"must map some of {', '.join(HF_SUBSETS)} to config names, got {subsets!r}")

    def corpus_key(self, entry):
        return ("hf", entry.repo, entry.revision, entry.hf_split, (entry.subsets or {}).get("corpus", "corpus"))

    def load(self, entry, *, cache_dir, unknown_docs, corpus=None, empty_queries):
        from lsrbench.data.hf import load_hf_dataset

        return load_hf_dataset(entry.repo, revision=entry.revision, hf_split=entry.hf_split, name=entry.name,
                               subsets=entry.subsets, unknown_docs=unknown_docs, cache_dir=Path(cache_dir) / "hf-datasets",
                               empty_queries=empty_queries)

    def identity(self, entry, folder, fingerprint):
        # A local repository by its bytes, a hub one by its revision, with the reader's version
        # (titles dropped since 2).
        if entry.revision is None and Path(entry.repo).is_dir():
            found = {"source": self.name, "hf_split": entry.hf_split, "subsets": entry.subsets, **fingerprint(entry.repo)}
        else:
            found = super().identity(entry, folder, fingerprint)
        return {**found, "reader": READER_VERSION}


SOURCES: dict[str, Source] = {s.name: s for s in (BeirSource(), IrDatasetsSource(), HfSource())}


def check_entry(name: str, entry, datasets_file) -> Source:
    """Validate one datasets.yaml entry; return its :class:`Source`. Errors name ``<name>.<key>``."""
    def bad(key: str | None, message: str) -> InputError:
        return InputError(datasets_file, f"{name}.{key}" if key else name, message)

    if not isinstance(entry, dict):
        raise bad(None, f"entry must be a mapping, got {type(entry).__name__}")
    split = entry.get("split")
    if split is not None and (not isinstance(split, str) or not SAFE_NAME.match(split)):
        raise bad("split", f"must be a split name such as 'test', got {split!r}")
    if "source" not in entry:
        raise bad("source", f"missing; expected one of: {', '.join(SOURCES)}")
    source = SOURCES.get(entry["source"]) if isinstance(entry["source"], str) else None
    if source is None:
        raise bad("source", f"unknown source {entry['source']!r}; expected one of: {', '.join(SOURCES)}")
    source.check(entry, bad)
    return source


def typed_entry(name: str, entry: dict, datasets_file) -> DatasetEntry:
    """One registry entry checked (:func:`check_entry`) and typed, its defaults from the schema."""
    check_entry(name, entry, datasets_file)
    validated = validate({name: dict(entry)}, "datasets.schema.yaml", datasets_file)[name]
    return DatasetEntry.from_dict(name, validated)


def corpus_key(entry: DatasetEntry | dict, name: str = "") -> tuple:
    """What identifies a (valid) dataset entry's documents: equal keys, equal corpus."""
    if isinstance(entry, dict):
        entry = typed_entry(name or "dataset", entry, "datasets")
    return SOURCES[entry.source].corpus_key(entry)


def first_with_corpus(registry: dict, names: list[str], name: str) -> str:
    """The first of ``names`` whose documents are ``name``'s, else ``name``; cached, since the DAG asks
    thousands of times."""
    return _first_in_registry(_Same(registry), tuple(names), name)


class _Same:
    """A registry as a cache key by identity; the cache holds it, so its id is never reused."""

    def __init__(self, value):
        self.value = value

    def __hash__(self):
        return id(self.value)

    def __eq__(self, other):
        return isinstance(other, _Same) and other.value is self.value


@functools.lru_cache(maxsize=64)
def _first_in_registry(registry: _Same, names: tuple, name: str) -> str:
    entries = registry.value
    return _first_with_corpus(json.dumps([[n, entries[n]] for n in [*names, name]], sort_keys=True, default=str))


@functools.lru_cache(maxsize=256)
def _first_with_corpus(entries: str) -> str:
    *candidates, (name, entry) = json.loads(entries)
    first: dict = {}
    for other, values in candidates:
        first.setdefault(corpus_key(DatasetEntry.from_dict(other, values)), other)
    return first.get(corpus_key(DatasetEntry.from_dict(name, entry)), name)


def mirrored_folder(mirror: str | os.PathLike | None, name: str) -> Path | None:
    """``<mirror>/data/<name>/`` when the mirror holds the dataset, else None."""
    if not mirror:
        return None
    folder = Path(mirror) / "data" / name
    return folder if folder.is_dir() else None


def dataset_origin(name: str, entry: dict, mirror, datasets_file) -> dict:
    """Where the dataset job reads ``name`` from (mirror, local folder or source), recorded in ``info.json`` for
    the report."""
    typed = typed_entry(name, entry, datasets_file)
    folder = mirrored_folder(mirror, name)
    if folder is not None:
        return {"mirror": str(mirror), "path": str(folder)}
    local = SOURCES[typed.source].local_folder(typed)
    return {"path": str(local)} if local is not None else {"source": typed.source, **SOURCES[typed.source].describe(typed)}


def data_folder_on_disk(entry: DatasetEntry, mirror, datasets_file) -> Path | None:
    """The BEIR folder the dataset job reads when on disk (mirror first), else None; a missing local folder is
    an error."""
    folder = mirrored_folder(mirror, entry.name)
    if folder is not None:
        return folder
    local = SOURCES[entry.source].local_folder(entry)
    if local is not None and not local.is_dir():
        raise InputError(datasets_file, f"{entry.name}.path", f"dataset folder '{local}' does not exist")
    return local


def source_identity(entry: DatasetEntry, mirror, fingerprint: Fingerprint) -> dict:
    """What an entry's data is (:meth:`Source.identity`), as the dataset stage's id records it."""
    local = SOURCES[entry.source].local_folder(entry)
    folder = (mirrored_folder(mirror, entry.name) or local) if local is not None else None
    return SOURCES[entry.source].identity(entry, folder, fingerprint)


def resolve_dataset(name: str, entry: dict, mirror: str | os.PathLike | None, datasets_file: str | os.PathLike,
                    cache_dir: str | os.PathLike, *, unknown_docs: str | None = None,
                    corpus: dict[str, str] | None = None, empty_queries: str | None = None) -> Dataset:
    """Load dataset ``name``: the mirror's copy, else its source. ``unknown_docs`` and ``empty_queries``
    override the entry's; ``corpus`` reuses documents loaded for the same corpus."""
    from lsrbench.data.ir_datasets_source import UnknownDatasetId

    typed = typed_entry(name, entry, datasets_file)
    policy, empty = unknown_docs or typed.unknown_docs, empty_queries or typed.empty_queries
    folder = mirrored_folder(mirror, name)
    if folder is not None:
        return load_beir_folder(folder, split=typed.split, name=name, unknown_docs=policy, empty_queries=empty)
    try:
        return SOURCES[typed.source].load(typed, cache_dir=cache_dir, unknown_docs=policy, corpus=corpus,
                                          empty_queries=empty)
    except UnknownDatasetId as e:
        raise InputError(datasets_file, f"{name}.id", e.message) from None
    except FetchFailed as failed:  # named by the entry's key that asked for the download
        raise failed.at(datasets_file, f"{name}.{next(k for k in SOURCES[typed.source].keys if k in entry)}") from None
