"""``lsrbench gc``: the outputs no current config refers to, listed (a dry run, the default) or
removed (``--delete``).

A config edit computes new outputs beside the old ones (content-addressed folders,
:mod:`lsrbench.dag.layout`), so finished results are never lost to a typo; they accumulate
instead. gc finds every addressed folder under the results folder (a 12-hex-digit id folder, or a
``pool<depth>`` folder of a dataset) that is neither an output of one of the given configs nor a
folder holding one, and removes the outermost such folders. Reports, logs, caches and anything
else that is not an addressed folder are never touched, nor is anything outside the results folder.

What the reports in the results folder were made from is kept too, whatever configs are given
(:func:`report_folders`): every file a report's manifest (``manifests/<rule>.json``) records as
read, its config snapshot, the run files ``metrics.sources.json`` names (a folder made before
report manifests), and everything those folders record as made from (their ``params.json`` and
stage manifests), transitively, so ``lsrbench verify`` keeps passing on the reports a reader has
in front of them. ``ignore_reports`` leaves them out of that.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from lsrbench.errors import InputError
from lsrbench.dag.layout import ID_LENGTH
from lsrbench.report.reports.collect import SOURCES_JSON

__all__ = ["Garbage", "find_garbage", "current_folders", "config_layout", "report_folders", "remove_garbage", "addressed_folders"]

ADDRESSED_NAME = re.compile(rf"^(?:[0-9a-f]{{{ID_LENGTH}}}|pool[0-9]+)$")


@dataclass(frozen=True)
class Garbage:
    path: Path
    bytes: int


def config_layout(config_files: list[str], overrides: dict | None, results: str, digests):
    """The :class:`~lsrbench.dag.layout.Layout` of one config (``config_files`` merged in order, each
    with its ``base:`` chain, then the ``--config`` ``overrides``), loaded as the Snakefile loads it;
    local folders are fingerprinted through ``digests`` (a :class:`~lsrbench.dag.fingerprint.FileDigests`)."""
    from lsrbench.config.layers import load_config_files, locate_config_paths, workflow_dir
    from lsrbench.dag.layout import Layout
    from lsrbench.stages import all_stages
    from lsrbench.validation.config import check_config

    config, origins, read = load_config_files(config_files, overrides)
    config = check_config(locate_config_paths(config, workflow_dir()), config_files[-1], origins, files=False,
                          mirror_must_exist=False)
    return Layout(config, results, digests, stages=all_stages(), config_file=config_files[-1], config_files=read)


def current_folders(config_files: list[str], overrides: dict, results: str) -> set[Path]:
    """Every addressed folder the configs' runs write, resolved. Each file is one current config
    (with its ``base:`` chain and the ``--config`` overrides, loaded as the Snakefile loads it)."""
    from lsrbench.dag.fingerprint import FileDigests

    check_results_folder(results)
    folders: set[Path] = set()
    digests = FileDigests(Path(results) / ".cache" / "file-digests.json")
    for config_file in config_files:
        layout = config_layout([config_file], overrides, results, digests)
        folders |= {Path(item.folder).resolve() for item in layout.all()}
    digests.save()
    return folders


def _read_report_record(path: Path) -> dict:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        raise InputError(path, None, "not readable JSON: cannot tell which runs the reports were made from "
                                     "(run snakemake to re-make it, or gc --ignore-reports)") from None
    return record if isinstance(record, dict) else {}


def _named_by_reports(results: Path) -> list[Path]:
    """The files the reports of ``results`` name directly (every report manifest: what it read and
    its config snapshot; metrics.sources.json: the run files of metrics.csv), resolved against the
    folder Snakemake ran in."""
    from lsrbench.names import MANIFESTS

    named = []
    records = sorted((results / MANIFESTS).glob("*.json")) + [results / SOURCES_JSON]
    for path in filter(Path.is_file, records):
        record = _read_report_record(path)
        config = record.get("config")  # {"snapshot", "id", "files"} (lsrbench.report.config_record); a path before
        named += list(record.get("sources") or []) + list((record.get("artifacts") or {}).get("inputs") or {})
        named += [config.get("snapshot") if isinstance(config, dict) else config] if config else []
    return [results.parent / p for p in named if p]


def _manifest_inputs(folder: Path, workdir: Path) -> list[Path]:
    """The inputs every manifest directly in ``folder`` records (its stage's provenance JSON, and
    what its ``params.json`` says the folder was made from)."""
    found = []
    for path in folder.glob("*.json"):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(record, dict):
            continue
        found += [workdir / p for p in ((record.get("artifacts") or {}).get("inputs") or {})]
        found += [workdir / p for p in (record.get("made_from") or [])]
    return found


def report_folders(results: str | os.PathLike) -> set[Path]:
    """Every addressed folder the reports of ``results`` were made from: the folders of the files
    they name, and of every input those folders' manifests record, transitively (resolved)."""
    root = Path(results).resolve()
    todo, seen = _named_by_reports(root), set()
    while todo:
        path = todo.pop()
        folder = _addressed_folder_of(path.resolve(), root)
        if folder is None or folder in seen:
            continue
        seen.add(folder)
        for parent in [folder, *folder.parents]:
            if parent == root:
                break
            todo += _manifest_inputs(parent, root.parent)
    return seen


def _addressed_folder_of(path: Path, root: Path) -> Path | None:
    """The innermost addressed folder holding ``path`` (itself when it is one), below ``root``."""
    for candidate in [path, *path.parents]:
        if candidate == root or root not in candidate.parents:
            return None
        if ADDRESSED_NAME.match(candidate.name):
            return candidate
    return None


def addressed_folders(results: Path) -> list[Path]:
    """Every addressed folder below ``results`` (hidden folders skipped), outermost first."""
    found = []
    for folder, subfolders, _ in os.walk(results):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        found += [Path(folder) / d for d in subfolders if ADDRESSED_NAME.match(d)]
    return found


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def check_results_folder(results: str | os.PathLike) -> None:
    """``results`` is a folder, or one line saying what it is instead."""
    path = Path(results)
    if path.is_dir():
        return
    what = "a file, not a folder" if path.exists() else f"results folder not found (in {Path.cwd()})"
    raise InputError(results, None, f"{what}: give the results folder of a run (--results DIR), or run from the "
                                    "folder snakemake ran in")


def find_garbage(results: str | os.PathLike, keep: set[Path]) -> list[Garbage]:
    """The outermost addressed folders below ``results`` that are not in ``keep`` and hold
    nothing in ``keep`` (a kept run's unreferenced evaluation goes, the run stays)."""
    check_results_folder(results)
    root = Path(results).resolve()
    kept_or_above = set(keep)
    for folder in keep:
        kept_or_above.update(folder.parents)
    garbage: list[Garbage] = []
    for folder in addressed_folders(root):
        if folder in kept_or_above or any(g.path in folder.parents for g in garbage):
            continue
        garbage.append(Garbage(folder, _size(folder)))
    return garbage


def remove_garbage(results: str | os.PathLike, garbage: list[Garbage]) -> None:
    """Remove the folders (only below ``results``), then folders left empty by that, then stored
    corpus files no dataset folder links to any more."""
    from lsrbench.data.store import prune_corpus_store

    root = Path(results).resolve()
    for item in garbage:
        if root not in item.path.parents:
            raise ValueError(f"{item.path}: not below {root}")
        shutil.rmtree(item.path)
        parent = item.path.parent
        while parent != root and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent
    if (root / "data" / ".corpora").is_dir():
        prune_corpus_store(root / "data" / ".corpora")


def human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)
