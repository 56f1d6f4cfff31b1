"""``lsrbench gc``: the addressed folders no current config refers to, listed or removed (``--delete``). Only
addressed folders under the results folder are touched, and never what the reports there were made from
(:func:`report_folders`), so ``lsrbench verify`` keeps passing."""

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
    """The Layout of one config as the Snakefile loads it (files merged in order, ``base:`` chains, then
    ``overrides``)."""
    from lsrbench.config.layers import load_config_files, locate_config_paths, workflow_dir
    from lsrbench.dag.layout import Layout
    from lsrbench.stages import all_stages
    from lsrbench.validation.config import check_config

    config, origins, read = load_config_files(config_files, overrides)
    config = check_config(locate_config_paths(config, workflow_dir()), config_files[-1], origins, files=False,
                          mirror_must_exist=False)
    return Layout(config, results, digests, stages=all_stages(), config_file=config_files[-1], config_files=read)


def current_folders(config_files: list[str], overrides: dict, results: str) -> set[Path]:
    """Every addressed folder the configs' runs write, resolved."""
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
    """Every addressed folder the reports of ``results`` were made from, transitively (resolved)."""
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
    """The outermost addressed folders below ``results`` not in ``keep`` and holding nothing in ``keep``."""
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
    """Remove the folders (only below ``results``), then folders left empty, then corpus files no dataset links
    to."""
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
