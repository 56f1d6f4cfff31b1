"""A safetensors file checked without reading tensors or importing torch: header length, JSON header, and the last
tensor's end against the file size. Written here because safetensors only says "incomplete metadata" and maps
the whole file."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["safetensors_problem", "damaged_weights"]


def safetensors_problem(path: str | Path) -> str | None:
    """What is wrong with the safetensors file ``path`` (None: its header reads and its tensors end
    where the file does)."""
    path = Path(path)
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(8)
        if len(head) < 8:
            return "truncated (no header)"
        n = int.from_bytes(head, "little")
        if n > size - 8:
            return "truncated (header longer than the file)"
        try:
            header = json.loads(fh.read(n))
            ends = [t["data_offsets"][1] for name, t in header.items() if name != "__metadata__"]
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            return "damaged (its header is not a safetensors header)"
    expected = 8 + n + max(ends, default=0)
    return None if expected == size else f"{size} bytes where its header describes {expected} (truncated or damaged)"


def damaged_weights(folder: str | Path) -> tuple[Path, str] | None:
    """The first safetensors file below ``folder`` that :func:`safetensors_problem` finds damaged,
    with its problem (None: all whole)."""
    for weights in sorted(Path(folder).rglob("*.safetensors")):
        problem = safetensors_problem(weights)
        if problem:
            return weights, problem
    return None
