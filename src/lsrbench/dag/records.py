"""The record every finished job leaves (written by :mod:`lsrbench.pipeline.job_runner` once it has
succeeded), read back: an addressed output's ``params.json`` and a report's manifest
(``results/manifests/<rule>.json``) both list every file the job wrote with its SHA-256
(``outputs``), what it read, and, for a report, the config snapshot it was made with. A file that no
longer has its recorded bytes was changed after its job made it (by hand, a tool, a partial copy):
:mod:`lsrbench.dag.folder_state` finds it before anything reads it.

Records are read from paths as the jobs spelt them (relative to the working directory Snakemake
runs in). A ``params.json`` written before records existed (no ``outputs``) is no record: such an
output is taken as it is (``lsrbench verify`` still checks the stage's own manifest).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Record", "read_record", "changed_files", "future_stamp", "mtime"]

# A time stamp this far past the clock is in the future (file systems round to 1-2 s).
FUTURE_SLACK_S = 2.0


@dataclass(frozen=True)
class Record:
    """What a finished job recorded: its record file, the files it wrote (path as written ->
    ``{"sha256", "bytes"}``), the files it read, and a report's config (``{"snapshot", "id",
    "files"}``; None for an addressed output)."""

    path: Path
    outputs: dict
    inputs: list = field(default_factory=list)
    config: dict | None = None


def read_record(path: str | os.PathLike) -> Record | None:
    """The record in ``path`` (a ``params.json`` or a report manifest); None when there is none of
    the recorded shape (missing, unreadable, or written before records existed)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("artifacts"), dict):  # a report manifest (lsrbench.provenance.report_manifest)
        outputs, inputs = data["artifacts"].get("outputs"), list(data["artifacts"].get("inputs") or {})
    else:
        outputs, inputs = data.get("outputs"), list(data.get("made_from") or [])
    if not isinstance(outputs, dict) or not all(isinstance(v, dict) and isinstance(v.get("sha256"), str)
                                                for v in outputs.values()):
        return None
    config = data.get("config") if isinstance(data.get("config"), dict) else None
    return Record(Path(path), outputs, inputs, config)


def changed_files(record: Record, digests) -> list[tuple[str, str]]:
    """``(file, what changed)`` for every file of ``record`` that no longer has its recorded bytes
    (its SHA-256 through ``digests``, a :class:`~lsrbench.dag.fingerprint.FileDigests`: hashed once
    per size and modification time)."""
    changed = []
    for recorded, info in record.outputs.items():
        path = Path(recorded)
        if not path.is_file():
            changed.append((recorded, f"missing (recorded in {record.path})"))
            continue
        size = path.stat().st_size
        if size != info.get("bytes", size):
            changed.append((recorded, f"{size} bytes where {record.path} records {info['bytes']}"))
        elif digests.file(path) != info["sha256"]:
            changed.append((recorded, f"its SHA-256 differs from the one {record.path} records"))
    return changed


def mtime(path: Path) -> float:
    """The modification time Snakemake gives a file or folder (a folder: its timestamp file's)."""
    stamp = path / ".snakemake_timestamp"
    return stamp.stat().st_mtime if path.is_dir() and stamp.is_file() else path.stat().st_mtime


def future_stamp(path: Path, now: float | None = None) -> float | None:
    """Seconds ``path`` is stamped past the clock (None: not in the future). Snakemake fails a job
    whose output is older than its newest input ("clock skew") and deletes what the job made."""
    ahead = mtime(path) - (time.time() if now is None else now)
    return ahead if ahead > FUTURE_SLACK_S else None
