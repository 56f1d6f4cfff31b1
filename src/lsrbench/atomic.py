"""Atomic file output: write under a temporary name in the same folder, then rename.

A process killed mid-write leaves only a ``.tmp-*`` file, never a truncated artifact that a
later run (or Snakemake) would accept as complete.

The temporaries get the permissions a plain ``open(path, "w")`` / ``mkdir`` would give: created
with mode 0666 / 0777 less the umask (``tempfile.mkstemp`` and ``mkdtemp`` make them 0600 / 0700,
which on a shared filesystem would hide every result from colleagues), and a file that replaces
an existing one keeps that one's permission bits, as a plain rewrite does. What other code writes
into an atomic folder gets the same before it appears: transformers saves ``model.safetensors``
through a private temporary of its own (0600).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
from pathlib import Path


def _temporary(folder: Path, prefix: str, make) -> Path:
    """A new name ``<folder>/<prefix><random>`` created by ``make(path)``, which must fail with
    FileExistsError when the name is taken (``O_EXCL`` / ``mkdir``): tempfile's own functions
    would create it private (0600 / 0700) whatever the umask."""
    while True:
        candidate = folder / f"{prefix}{secrets.token_hex(4)}"
        try:
            make(candidate)
        except FileExistsError:
            continue
        return candidate


def _new_file(path: Path) -> None:
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))  # the umask applies, as for open()


def _as_plain_writes(root: Path) -> None:
    """Give every file and folder under ``root`` the mode a plain ``open()`` / ``mkdir`` there gives
    now (measured on a probe of each, so the umask is the kernel's, never read or changed here);
    files with an execute bit get the folder mode."""
    probe = _temporary(root, ".mode-probe-", _new_file)
    file_mode = stat.S_IMODE(probe.stat().st_mode)
    probe.unlink()
    probe = _temporary(root, ".mode-probe-", os.mkdir)
    dir_mode = stat.S_IMODE(probe.stat().st_mode)
    probe.rmdir()
    for folder, dirs, files in os.walk(root):
        for name, is_dir in [(d, True) for d in dirs] + [(f, False) for f in files]:
            item = Path(folder) / name
            mode = item.lstat().st_mode
            if stat.S_ISLNK(mode):
                continue
            wanted = dir_mode if is_dir or mode & 0o111 else file_mode
            if stat.S_IMODE(mode) != wanted:
                os.chmod(item, wanted)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path beside ``path``; rename it onto ``path`` if the block succeeds. The
    file gets a new file's permissions under the umask, or those of the file it replaces."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(path.parent, f".{path.name}.tmp-", _new_file)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))
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
    """Yield a temporary folder beside ``path``; replace ``path`` with it if the block succeeds. The
    folder gets a new folder's permissions under the umask (0777 less it, as ``mkdir``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(path.parent, f".{path.name}.tmp-", os.mkdir)
    try:
        yield tmp
        _as_plain_writes(tmp)
        # Move the old folder aside before swapping in the new one, so the final name never
        # holds a half-deleted folder.
        old = None
        if path.exists():
            old = _temporary(path.parent, f".{path.name}.old-", os.mkdir)
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
