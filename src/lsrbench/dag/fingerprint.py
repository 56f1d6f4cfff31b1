"""The content fingerprint of a local folder (a BEIR dataset folder, a model checkpoint): what identifies it in an
output's id (:mod:`lsrbench.dag.layout`) instead of its spelling, so a relative path, a trailing slash or a copy
of the same bytes elsewhere re-runs nothing, and new bytes under the same path re-run what reads them."""

from __future__ import annotations

import json
import os
from pathlib import Path

from lsrbench.atomic import atomic_open
from lsrbench.hashing import sha256_file, stable_hash

__all__ = ["FileDigests", "folder_files"]


def folder_files(folder: str | os.PathLike, names=None) -> list[Path]:
    """The files of ``folder`` that make its content: ``names`` (relative paths, those that
    exist), else every file below it except hidden ones (hub download metadata, editor files)."""
    root = Path(folder)
    if names is not None:
        return [root / n for n in names if (root / n).is_file()]
    return sorted(p for p in root.rglob("*")
                  if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts))


class FileDigests:
    """SHA-256 of files, cached by path and (inode, ctime, size, mtime) in ``cache_file`` (None: not
    cached on disk); see the module doc."""

    def __init__(self, cache_file: str | os.PathLike | None = None):
        self.cache_file = Path(cache_file) if cache_file else None
        self._cache: dict[str, list] = {}
        self._dirty = False
        if self.cache_file and self.cache_file.is_file():
            try:
                self._cache = json.loads(self.cache_file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                self._cache = {}  # a damaged cache only costs re-hashing

    def file(self, path: Path) -> str:
        st = path.stat()
        key = str(path.resolve())
        stamp = [st.st_ino, st.st_ctime_ns, st.st_size, st.st_mtime_ns]
        cached = self._cache.get(key)
        # an entry of another stamp, or of the older (size, mtime) key, is hashed again
        if isinstance(cached, list) and len(cached) == len(stamp) + 1 and cached[:-1] == stamp:
            return cached[-1]
        digest = sha256_file(path)
        self._cache[key] = [*stamp, digest]
        self._dirty = True
        return digest

    def folder(self, folder: str | os.PathLike, names=None) -> str:
        """One SHA-256 over the relative names and digests of :func:`folder_files`."""
        root = Path(folder)
        files = folder_files(root, names)
        return stable_hash([[p.relative_to(root).as_posix(), self.file(p)] for p in files])

    def save(self) -> None:
        """Write the cache when something new was hashed (best effort: it is only a cache)."""
        if not (self.cache_file and self._dirty):
            return
        try:
            with atomic_open(self.cache_file, "w", encoding="utf-8") as fh:
                json.dump(self._cache, fh)
            self._dirty = False
        except OSError:
            pass
