"""Atomic file output: write under a temporary name in the same folder, then rename.

A process killed mid-write leaves only a ``.tmp-*`` file, never a truncated artifact that a
later run (or Snakemake) would accept as complete.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path beside ``path``; rename it onto ``path`` if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", **kwargs):
    """``open()`` that only makes the file appear under its final name once fully written."""
    with atomic_path(path) as tmp:
        with open(tmp, mode, **kwargs) as fh:
            yield fh


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike):
    """Yield a temporary folder beside ``path``; replace ``path`` with it if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
    try:
        yield tmp
        # Move the old folder aside before swapping in the new one, so the final name never
        # holds a half-deleted folder.
        old = None
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old-", dir=path.parent))
            os.replace(path, old / path.name)
        os.replace(tmp, path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextlib.contextmanager
def keyed_dir(path: str | os.PathLike, key_file: str, key: str, info: dict | None = None):
    """A folder of resumable partial work (training checkpoints, index shards) that belongs to one
    ``key``: yields ``(folder, stale)``, ``stale`` being True when its key file names another key
    or cannot be read (the caller then deletes what is inside); on leaving, the key file names
    ``key`` (written atomically). Work is never resumed from a folder of another key."""
    import json

    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    marker = root / key_file
    stale = False
    if marker.is_file():
        try:
            stale = json.loads(marker.read_text(encoding="utf-8")).get("key") != key
        except (ValueError, OSError):
            stale = True
    yield root, stale
    if stale or not marker.is_file():
        with atomic_open(marker, "w", encoding="utf-8") as fh:
            json.dump({"key": key, **(info or {})}, fh, indent=1 if info else None, default=str)
