"""Atomic file output: write under a temporary name in the same folder, then rename, so a killed process never
leaves a truncated artifact."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
from pathlib import Path


def _temporary(folder: Path, prefix: str, make) -> Path:
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
    """Give every file and folder under ``root`` the mode a plain ``open()``/``mkdir`` there gives now (measured on
    probes, the umask never read or changed)."""
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
    """Yield a temporary path beside ``path``, renamed onto it if the block succeeds, with a new file's
    permissions or those of the file it replaces."""
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
    """Yield a temporary folder beside ``path``, replacing ``path`` if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(path.parent, f".{path.name}.tmp-", os.mkdir)
    try:
        yield tmp
        _as_plain_writes(tmp)
        # The old folder moves aside first, so the final name never holds a half-deleted one.
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
    """A folder of resumable work belonging to ``key``: yields ``(folder, stale)``, stale when its key file
    names another key or is unreadable; work is never resumed across keys."""
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
