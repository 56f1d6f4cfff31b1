"""What ``lsrbench verify`` has traced so far, shared by its checks of the manifests and metrics.csv
(:mod:`lsrbench.report.verify`) and of table1.md (:mod:`lsrbench.report.verify_table1`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Trace", "workdir_of", "resolve_recorded"]


@dataclass
class Trace:
    """What verification has found so far."""

    problems: list[str] = field(default_factory=list)
    counts: dict = field(default_factory=lambda: {"manifests": 0, "artifacts": 0, "metric_rows": 0, "table_cells": 0})
    # resolved metrics.tsv path -> its rows, for every metrics file a sound manifest vouches for
    backed: dict[Path, dict[tuple[str, str, str, str], float]] = field(default_factory=dict)
    # resolved paths of every recorded file whose hash still matches
    vouched: set[Path] = field(default_factory=set)
    # (run, k, (seed: several seeds,) dataset, measure) -> (metrics.csv line, whether it traces to a
    # manifest-backed run file)
    traced: dict[tuple[str, ...], tuple[int, bool]] = field(default_factory=dict)


def workdir_of(manifest_file: Path, recorded: str) -> Path:
    """The directory a manifest's relative paths are relative to (found from its own recorded path)."""
    rec = Path(recorded)
    if rec.is_absolute():
        return Path("/")
    base = manifest_file.resolve()
    for _ in range(len(rec.parts)):
        base = base.parent
    return base


def resolve_recorded(workdir: Path, recorded: str) -> Path:
    p = Path(recorded)
    return p if p.is_absolute() else workdir / p
