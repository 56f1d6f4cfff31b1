"""The record every finished job leaves (written by :mod:`lsrbench.pipeline.job_runner` once it has succeeded),
read back: an addressed output's ``params.json`` and a report's manifest (``results/manifests/<rule>.json``)
both list every file the job wrote with its SHA-256 (``outputs``), what it read, and, for a report, the config
snapshot it was made with."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from lsrbench.dag.folders import PARAMS_JSON

__all__ = ["Record", "DamagedRecord", "load_record", "read_record", "changed_files", "future_stamp", "mtime"]

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


class DamagedRecord(ValueError):
    """A record file that is there but cannot be read as a record (the message says why)."""


def load_record(path: str | os.PathLike) -> Record | None:
    """The record in ``path`` (a ``params.json``, a stage manifest or a report manifest); None when
    there is none (no file, or a ``params.json`` written before records existed); raises
    :class:`DamagedRecord` when it is unreadable or not of the recorded shape."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise DamagedRecord(f"unreadable ({' '.join(str(exc).split())[:80]})") from None
    if not isinstance(data, dict):
        raise DamagedRecord("not a JSON object")
    if isinstance(data.get("artifacts"), dict):  # a manifest (lsrbench.provenance.manifest_fields)
        outputs, inputs = data["artifacts"].get("outputs"), list(data["artifacts"].get("inputs") or {})
    elif "artifacts" in data or "outputs" in data or path.name != PARAMS_JSON:
        outputs, inputs = data.get("outputs"), list(data.get("made_from") or [])
    else:
        return None  # a params.json of before records: only what its id stands for
    if not isinstance(outputs, dict) or not all(isinstance(v, dict) and isinstance(v.get("sha256"), str)
                                                for v in outputs.values()):
        raise DamagedRecord("no file hashes of the recorded shape (edited?)")
    config = data.get("config") if isinstance(data.get("config"), dict) else None
    return Record(path, outputs, inputs, config)


def read_record(path: str | os.PathLike) -> Record | None:
    """The record in ``path``; None when there is none or it is damaged (:func:`load_record`)."""
    try:
        return load_record(path)
    except DamagedRecord:
        return None


def changed_files(record: Record, digests) -> list[tuple[str, str]]:
    """``(file, what changed)`` for every file of ``record`` that no longer has its recorded bytes
    (its SHA-256 through ``digests``, a :class:`~lsrbench.dag.fingerprint.FileDigests`: hashed again
    after any write, whatever its times say)."""
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
    """Seconds ``path`` is stamped past the clock (None: not in the future)."""
    ahead = mtime(path) - (time.time() if now is None else now)
    return ahead if ahead > FUTURE_SLACK_S else None
