"""The sources of ``training_data``, one class each in :data:`TRAINING_SOURCES`: checks, identity, mirror folder
and drawing. A mirror's ``triplets.jsonl`` is used when its ``source.json`` matches."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from lsrbench.atomic import atomic_open
from lsrbench.data.triplets import (TRIPLET_KEYS, hf_triplets, ir_datasets_triplets, pseudo_query_triplets,
                                    read_triplets, write_triplets)
from lsrbench.errors import InputError
from lsrbench.names import SAFE_NAME, is_commit

__all__ = ["TRAINING_SOURCES", "TrainingSource", "check_training_data", "training_name", "build_triplets",
           "draw_source_triplets", "mirrored_triplets", "write_mirror_triplets"]


def check_training_data(td: dict, config_file: str | os.PathLike) -> None:
    """Validate ``training_data`` beyond its schema; errors name ``training_data.<key>``."""
    def bad(key: str, message: str) -> InputError:
        return InputError(config_file, f"training_data.{key}", message)

    if not isinstance(td, dict):
        raise InputError(config_file, "training_data", "must be a mapping")
    source = TRAINING_SOURCES.get(td.get("source")) if isinstance(td.get("source"), str) else None
    if source is None:
        raise bad("source", f"unknown source {td.get('source')!r}; expected one of: {', '.join(TRAINING_SOURCES)}")
    for key in ("name", "dataset", "repo", "subset", "split", "id"):
        if key in td and (not isinstance(td[key], str) or not td[key].strip()):
            raise bad(key, f"must be a non-empty string, got {td[key]!r}")
    if "name" in td and not SAFE_NAME.match(td["name"]):
        raise bad("name", f"'{td['name']}' is not a valid folder name (letters, digits, '.', '_', '-')")
    for key in source.required:
        if key not in td:
            raise bad(key, f"missing (required for source '{source.name}')")
    for key in ALL_SOURCE_KEYS:
        if key in td and key not in source.keys:
            raise bad(key, f"not used by source '{source.name}'")
    source.check(td, bad)


def training_name(td: dict) -> str:
    """The folder name of the training triplets in a mirror: ``name``, or one derived from the
    source (``sentence-transformers--msmarco-bm25--triplet``, ``msmarco-passage--train--triples-small``)."""
    if td.get("name"):
        return td["name"]
    parts = TRAINING_SOURCES[td["source"]].name_parts(td)
    if td["source"] == "pseudo_queries":
        return "--".join(parts)
    name = re.sub(r"[^A-Za-z0-9._-]+", "--", "--".join(parts)).strip(".-_") or "training"
    return name if SAFE_NAME.match(name) else f"t{name}"


def _source_record(td: dict, n: int, seed: int) -> dict:
    return {"source": td["source"], **{k: td[k] for k in TRAINING_SOURCES[td["source"]].keys if k in td},
            "n": int(n), "seed": int(seed)}


def mirrored_triplets(td: dict, n: int, seed: int, mirror: str | os.PathLike | None) -> list[dict] | None:
    """The prefetched triplets of ``<mirror>/data/<training_name>/``, or None; a mismatching ``source.json`` is
    an error (re-run ``lsrbench prefetch``)."""
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
    source = TRAINING_SOURCES[td["source"]]
    if source.needs_corpus:
        raise ValueError(f"draw_source_triplets: source {td['source']!r} is built from a dataset folder")
    return source.draw(td, n, seed, cache_dir=cache_dir)


def build_triplets(training_data: dict, n: int, seed: int, out: str | os.PathLike, *,
                   mirror: str | os.PathLike | None = None, cache_dir: str | os.PathLike = "cache",
                   config_file: str | os.PathLike = "config", full_dir: str | os.PathLike | None = None) -> Path:
    """The triplets stage: write ``n`` triplets of ``training_data`` to ``out`` (pseudo-queries from
    ``full_dir``; others from the mirror, else the source)."""
    check_training_data(training_data, config_file)
    source = TRAINING_SOURCES[training_data["source"]]
    if source.needs_corpus:
        return write_triplets(out, source.draw(training_data, n, seed, full_dir=full_dir))
    triplets = mirrored_triplets(training_data, n, seed, mirror)
    if triplets is None:
        from lsrbench.downloads import FetchFailed

        try:
            triplets = draw_source_triplets(training_data, n, seed, cache_dir)
        except FetchFailed as failed:  # named by the key that asked for the download
            key = next(k for k in source.required if k in training_data)
            raise failed.at(config_file, f"training_data.{key}") from None
    return write_triplets(out, triplets)


# --------------------------------------------------------------------------- the training sources


class TrainingSource:
    """One ``training_data.source``. A new source is one subclass, one line in :data:`TRAINING_SOURCES` and its
    schema keys."""

    name: str = ""
    keys: tuple[str, ...] = ()  # training_data keys that decide which triplets are drawn (besides n, seed)
    required: tuple[str, ...] = ()
    needs_corpus = False  # drawn from a dataset folder of the run (the triplets job's input)

    def check(self, td: dict, bad) -> None:
        """Raise ``bad(key, message)`` for settings this source cannot draw from."""

    def identity(self, td: dict, fingerprint) -> dict:
        """``training_data`` as it decides the triplets (without its mirror folder ``name``)."""
        return {k: v for k, v in td.items() if k != "name"}

    def name_parts(self, td: dict) -> list[str]:
        raise NotImplementedError

    def draw(self, td: dict, n: int, seed: int, *, cache_dir=None, full_dir=None) -> list[dict]:
        raise NotImplementedError


class PseudoQueries(TrainingSource):
    """Cropped pseudo-queries of a dataset's corpus with BM25 negatives (:func:`pseudo_query_triplets`)."""

    name, keys, required, needs_corpus = "pseudo_queries", ("dataset",), ("dataset",), True

    def name_parts(self, td):
        return [f"pseudo-queries--{td['dataset']}"]

    def draw(self, td, n, seed, *, cache_dir=None, full_dir=None):
        from lsrbench.data.beir import read_written_folder

        ds = read_written_folder(full_dir)
        if len({text for text in ds.corpus.values() if text.split()}) < 2:
            raise InputError(Path(full_dir) / "corpus.jsonl", None, "pseudo-queries need at least two distinct "
                             "documents with words (training_data.dataset)")
        return pseudo_query_triplets(ds.corpus, n, seed)


class HfTriplets(TrainingSource):
    """Text columns of a Hugging Face dataset at a pinned revision (:func:`hf_triplets`)."""

    name, keys, required = "hf", ("repo", "subset", "split", "revision", "columns"), ("repo",)

    def check(self, td, bad):
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

    def identity(self, td, fingerprint):
        out = super().identity(td, fingerprint)
        if td.get("revision") is None and Path(td["repo"]).is_dir():  # a local folder: by its bytes
            out["repo"] = fingerprint(td["repo"])
        return out

    def name_parts(self, td):
        base = Path(td["repo"]).name if Path(td["repo"]).is_dir() else td["repo"]
        return [base] + ([td["subset"]] if td.get("subset") else [])

    def draw(self, td, n, seed, *, cache_dir=None, full_dir=None):
        return hf_triplets(td["repo"], subset=td.get("subset"), split=td.get("split", "train"),
                           revision=td.get("revision"), columns=td.get("columns"), n=n, seed=seed,
                           cache_dir=Path(cache_dir or "cache") / "hf-datasets")


class IrDatasetsTriplets(TrainingSource):
    """The docpairs of an ``ir_datasets`` id (:func:`ir_datasets_triplets`)."""

    name, keys, required = "ir_datasets", ("id",), ("id",)

    def name_parts(self, td):
        return [td["id"]]

    def draw(self, td, n, seed, *, cache_dir=None, full_dir=None):
        from lsrbench.data.ir_datasets_source import downloads_of

        with downloads_of(td["id"]):  # a failed download is one line (lsrbench.downloads)
            return ir_datasets_triplets(td["id"], n=n, seed=seed)


TRAINING_SOURCES: dict[str, TrainingSource] = {s.name: s for s in (PseudoQueries(), HfTriplets(), IrDatasetsTriplets())}
ALL_SOURCE_KEYS = tuple(dict.fromkeys(k for s in TRAINING_SOURCES.values() for k in s.keys))
