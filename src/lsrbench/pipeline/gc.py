"""``lsrbench gc``: the outputs no current config refers to, listed (a dry run, the default) or
removed (``--delete``).

A config edit computes new outputs beside the old ones (content-addressed folders,
:mod:`lsrbench.pipeline.paths`), so finished results are never lost to a typo; they accumulate
instead. gc finds every addressed folder under the results folder (a 12-hex-digit id folder, or a
``pool<depth>`` folder of a dataset) that is neither an output of one of the given configs nor a
folder holding one, and removes the outermost such folders. Reports, logs, caches and anything
else that is not an addressed folder are never touched, nor is anything outside the results folder.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from lsrbench.errors import InputError
from lsrbench.pipeline.paths import ID_LENGTH

__all__ = ["Garbage", "find_garbage", "current_folders", "remove_garbage", "addressed_folders"]

ADDRESSED_NAME = re.compile(rf"^(?:[0-9a-f]{{{ID_LENGTH}}}|pool[0-9]+)$")


@dataclass(frozen=True)
class Garbage:
    path: Path
    bytes: int


def _workflow_dir() -> Path:
    """The repository the package runs from (where the Snakefile looks for relative config files)."""
    repo = Path(__file__).resolve().parents[3]
    return repo if (repo / "Snakefile").is_file() else Path.cwd()


def current_folders(config_files: list[str], overrides: dict, results: str) -> set[Path]:
    """Every addressed folder the configs' runs write, resolved. Each file is one current config
    (with its ``base:`` chain and the ``--config`` overrides, loaded as the Snakefile loads it)."""
    from lsrbench.pipeline.config import load_config_files, locate_config_paths
    from lsrbench.pipeline.paths import Layout
    from lsrbench.pipeline.validate import check_config

    if not Path(results).is_dir():
        raise InputError(results, None, "results folder not found")
    folders: set[Path] = set()
    for config_file in config_files:
        config, origins, _ = load_config_files([config_file], overrides)
        config = check_config(locate_config_paths(config, _workflow_dir()), config_file, origins, files=False,
                              mirror_must_exist=False)
        folders |= {Path(item.folder).resolve() for item in Layout(config, results).all()}
    return folders


def addressed_folders(results: Path) -> list[Path]:
    """Every addressed folder below ``results`` (hidden folders skipped), outermost first."""
    found = []
    for folder, subfolders, _ in os.walk(results):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        found += [Path(folder) / d for d in subfolders if ADDRESSED_NAME.match(d)]
    return found


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def find_garbage(results: str | os.PathLike, keep: set[Path]) -> list[Garbage]:
    """The outermost addressed folders below ``results`` that are not in ``keep`` and hold
    nothing in ``keep`` (a kept run's unreferenced evaluation goes, the run stays)."""
    root = Path(results).resolve()
    if not root.is_dir():
        raise InputError(results, None, "results folder not found")
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
