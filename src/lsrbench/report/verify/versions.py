"""What ``lsrbench verify`` says of the library versions a results folder was made with: each stage's provenance
record names them (:mod:`lsrbench.provenance`), and where they are not the ones ``requirements.lock`` pins, a
note says which, in how many records."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from lsrbench.environment import LOCK_FILE, lock_differences, lock_path, locked_versions
from lsrbench.report.verify.manifests import find_manifests

__all__ = ["version_notes"]


def version_notes(results_dir: str | os.PathLike, lock: str | os.PathLike | None = None) -> list[str]:
    """One line per (library, version) of the folder's provenance records that the lock pins at
    another version; none when every record is the lock's (or no lock is found)."""
    lock = lock or lock_path()
    if lock is None:
        return [f"no {LOCK_FILE} beside this install: the versions the results were made with are not compared"]
    locked = locked_versions(lock)
    records, other = 0, Counter()
    for manifest in find_manifests(results_dir):
        try:
            packages = json.loads(Path(manifest).read_text(encoding="utf-8")).get("packages")
        except (OSError, ValueError, AttributeError):
            continue  # verify itself names an unreadable manifest
        if isinstance(packages, dict):
            records += 1
            other.update(lock_differences(packages, locked))
    return [f"made with {name} {version}, not the lock's {pinned} ({Path(lock).name}), in {n} of {records} "
            "provenance records" for (name, version, pinned), n in sorted(other.items())]
