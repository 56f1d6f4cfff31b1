"""What ``lsrbench verify`` has traced so far, shared by its checks of the manifests and metrics.csv
(:mod:`lsrbench.report.verify.manifests`), of table1.md (:mod:`lsrbench.report.verify.table1`) and of the
other reports (:mod:`lsrbench.report.verify.reports`); and where the paths a record spells are now
(:class:`Where`), wherever the results folder was moved or copied to."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePath

from lsrbench.provenance import recording_workdir

__all__ = ["Trace", "Where", "where"]


@dataclass
class Trace:
    """What verification has found so far."""

    problems: list[str] = field(default_factory=list)
    counts: dict = field(default_factory=lambda: {"manifests": 0, "artifacts": 0, "metric_rows": 0, "table_cells": 0,
                                                  "reports": 0})
    # resolved metrics.tsv path -> its rows, for every metrics file a sound manifest vouches for
    backed: dict[Path, dict[tuple[str, str, str, str], float]] = field(default_factory=dict)
    # resolved paths of every recorded file whose hash still matches
    vouched: set[Path] = field(default_factory=set)
    # (run, k, (seed: several seeds,) dataset, measure) -> (metrics.csv line, whether it traces to a
    # manifest-backed run file)
    traced: dict[tuple[str, ...], tuple[int, bool]] = field(default_factory=dict)


@dataclass(frozen=True)
class Where:
    """Where the paths one record (a manifest, a report's sidecar) spells are now."""

    results: Path
    prefix: tuple[str, ...] | None  # the recorded spelling of the results folder, as path parts
    workdir: Path

    def __call__(self, recorded: str) -> Path:
        parts = PurePath(recorded).parts
        if self.prefix is not None and parts[:len(self.prefix)] == self.prefix and len(parts) > len(self.prefix):
            return self.results.joinpath(*parts[len(self.prefix):])
        if PurePath(recorded).is_absolute():
            return Path(recorded)
        return self.workdir / recorded


def where(results: Path, record_file: Path, recorded_self: str) -> Where:
    """The :class:`Where` of a record at ``record_file`` (under ``results``) that spelt its own path
    ``recorded_self``."""
    rec = PurePath(recorded_self).parts
    try:
        rel = record_file.resolve().relative_to(results.resolve()).parts
    except ValueError:
        rel = ()
    prefix = rec[:len(rec) - len(rel)] if rel and len(rec) >= len(rel) and rec[len(rec) - len(rel):] == rel else None
    return Where(results, prefix, recording_workdir(record_file, recorded_self))
