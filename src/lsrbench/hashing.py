"""Every content hash lsrbench computes (files, folders, lists, settings): one SHA-256 each way, so every record
means the same by "the same bytes"."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

_BLOCK = 1 << 20


def sha256_file(path: str | os.PathLike) -> str:
    """SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_BLOCK), b""):
            h.update(block)
    return h.hexdigest()


def sha256_tree(path: str | os.PathLike) -> str:
    """SHA-256 over every file below ``path`` (relative names and bytes, in sorted order); a file
    hashes as a tree of itself."""
    root = Path(path)
    h = hashlib.sha256()
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    for p in files:
        h.update(str(p.relative_to(root) if p != root else p.name).encode() + b"\0")
        with open(p, "rb") as fh:
            for block in iter(lambda: fh.read(_BLOCK), b""):
                h.update(block)
        h.update(b"\0")
    return h.hexdigest()


def sha256_texts(ids: Iterable, texts: Iterable[str]) -> str:
    """SHA-256 of ids and texts, in order (length-prefixed, so no two lists collide)."""
    h = hashlib.sha256()
    for i, t in zip(ids, texts):
        i, t = str(i).encode(), t.encode("utf-8", "surrogatepass")
        h.update(b"%d:%d:" % (len(i), len(t)) + i + t)
    return h.hexdigest()


def sha256_chunks(chunks: Iterable[bytes]) -> str:
    """SHA-256 of the concatenation of ``chunks`` (a file's content before it is written)."""
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(chunk)
    return h.hexdigest()


def stable_hash(obj) -> str:
    """SHA-256 of a JSON-serialisable object, independent of key order."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()
