"""A ready entry of the reproduction log (docs/reproductions.md) for a finished results folder: when its runs
finished, the lsrbench commit, the CPU and GPU they ran on, whether every library was the lock's, and what
``lsrbench expected`` says of it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from lsrbench.environment import lock_differences, lock_path, locked_versions
from lsrbench.provenance import cpu_model
from lsrbench.report.verify.manifests import find_manifests

__all__ = ["LOG_COLUMNS", "run_record", "log_entry"]

LOG_COLUMNS = ("date", "commit", "config", "CPU", "GPU", "lock", "expected-values check", "notes")


def _records(results) -> list[dict]:
    out = []
    for manifest in find_manifests(results):
        try:
            record = json.loads(Path(manifest).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # lsrbench verify names an unreadable manifest
        if isinstance(record, dict):
            out.append(record)
    return out


def run_record(results) -> dict:
    """What the folder's provenance records say of where and with what its trained runs were made
    (the train stage's records; every stage's where there is no training)."""
    records = _records(results)
    trained = [r for r in records if r.get("stage") == "train"] or records
    devices = [r.get("device") or {} for r in trained]
    models = Counter(d.get("cpu_model") for d in devices if d.get("cpu_model"))
    gpus = Counter(", ".join(d["cuda"]) for d in devices if d.get("cuda"))
    locked = locked_versions(lock_path()) if lock_path() else {}
    differing = sorted({diff for r in records if isinstance(r.get("packages"), dict)
                        for diff in lock_differences(r["packages"], locked)})
    return {
        "finished": max((r.get("finished_at") or "" for r in trained), default="") or None,
        "commits": sorted({r["git_commit"] for r in trained if r.get("git_commit")}),
        "cpu": ", ".join(models) if models else None,
        "gpu": ", ".join(gpus) if gpus else None,
        "lock": None if not locked else not differing,
        "lock_differences": differing,
        "records": len(trained),
    }


def log_entry(results, summary: str, config: dict) -> str:
    """One Markdown row of the reproduction log, its columns :data:`LOG_COLUMNS`."""
    rec = run_record(results)
    cpu = rec["cpu"] or f"{cpu_model() or 'unknown'} (the machine printing this entry: the runs did not record theirs)"
    if rec["lock"] is None:
        lock = "not compared (no requirements.lock beside this install)"
    elif rec["lock"]:
        lock = "yes (requirements.lock)"
    else:
        lock = "no: " + ", ".join(f"{name} {version} (lock {pinned})" for name, version, pinned in rec["lock_differences"])
    cells = [(rec["finished"] or "unknown")[:10], ", ".join(c[:7] for c in rec["commits"]) or "unknown",
             f"{', '.join(config.get('files') or ['?'])} ({config.get('id', '?')})", cpu, rec["gpu"] or "none", lock,
             summary, ""]
    return "| " + " | ".join(cell.replace("|", "/") for cell in cells) + " |"
