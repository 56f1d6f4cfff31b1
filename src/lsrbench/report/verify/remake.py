"""What ``lsrbench verify`` compares a report with: the report made again, by its own check
(``Report.verify``) or by its job run again on the inputs its manifest records (:func:`remake`)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from lsrbench.report.config_record import keyed
from lsrbench.report.verify.diff import report_differences, text_differences, value_differences
from lsrbench.report.verify.trace import Trace, Where, where

__all__ = ["stated_settings", "origin", "compare_text", "compare_data", "read_record", "stated_record", "run_files",
           "check_outputs", "remake"]


def stated_settings(stated, path: Path) -> tuple[dict, dict] | None:
    """The config record ``path`` states and the config of its snapshot (None where either is
    missing: already a problem of :func:`lsrbench.report.verify.configs.check_configs`)."""
    record, snapshot = stated.get(path, (None, None))
    return (record, snapshot.config) if snapshot is not None and snapshot.config is not None else None


def origin(files: list, config: dict) -> str:
    return " and ".join(str(f) for f in files) + f" with config {config['id']}"


def compare_text(path: Path, fresh: str, origin: str, trace: Trace) -> None:
    trace.counts["reports"] += 1
    report_differences(path, text_differences(path.read_text(encoding="utf-8", errors="replace"), fresh), origin,
                       trace.problems)


def compare_data(path: Path, shown, fresh, origin: str, trace: Trace) -> None:
    trace.counts["reports"] += 1
    report_differences(path, value_differences(shown, fresh), origin, trace.problems)


def read_record(path: Path, trace: Trace) -> tuple[dict, Where] | None:
    """A report's JSON record and where the paths it spells are now."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        return record, where(path.parent, path, record["manifest"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        trace.problems.append(f"{path}: unreadable ({' '.join(str(exc).split())}): re-make the reports")
        return None


def stated_record(stated, side: Path, trace: Trace) -> tuple[dict, Where, dict, dict] | None:
    """A report's JSON record, where its paths are now, and the config record and config it states
    (None where the record is absent or unreadable, or the config is missing: said elsewhere)."""
    settings = stated_settings(stated, side)
    if not side.is_file() or settings is None or (read := read_record(side, trace)) is None:
        return None
    return (*read, *settings)


def run_files(rows, located: Where, report: Path, trace: Trace) -> dict | None:
    """``[key..., path]`` rows as ``{key: path now}``; None (and a problem) when one is not vouched
    for by a manifest."""
    files = {key: located(path) for key, path in keyed(rows or []).items()}
    unvouched = [str(p) for p in files.values() if p.resolve() not in trace.vouched]
    if unvouched:
        trace.problems.append(f"{report}: made from {', '.join(unvouched)}, which no manifest vouches for (missing, "
                              "changed since, or never recorded): its numbers cannot be traced")
        return None
    return files


def check_outputs(record: dict, located: Where, side: Path, trace: Trace) -> None:
    """The images (and reports) a figure record stamps still have their SHA-256."""
    from lsrbench.report.figures.data import file_stamp

    for recorded, stamp in (record.get("outputs") or {}).items():
        path = located(recorded)
        if not path.is_file():
            trace.problems.append(f"{path}: missing (recorded in {side})")
        elif file_stamp(str(path)) != stamp:
            trace.problems.append(f"{path}: modified: SHA-256 differs from {side} (not the figure its data was "
                                  "recorded with: re-make it)")


def _located_call(call: dict, located: Where) -> dict:
    """The job's recorded arguments, every recorded path as found now from the folder it ran in (spelt as it was
    there, so that what a report records of its inputs reads the same)."""
    def now(value):
        if isinstance(value, str):
            return value if Path(value).is_absolute() else os.path.relpath(located(value), located.workdir)
        return [now(v) for v in value]
    files = {name: now(value) for name, value in call.get("inputs", {}).items()}
    rows = {name: [[*row[:-1], now(row[-1])] for row in value] for name, value in call.get("keyed", {}).items()}
    return {**call.get("settings", {}), **files, **rows}


def remake(root: Path, report, manifest: Path, trace: Trace) -> None:
    """Run ``report``'s job again on the inputs and settings its manifest records, into a scratch
    folder, and compare each output with the one in ``root`` (its scratch path read as its own)."""
    if not manifest.is_file() or (read := read_record(manifest, trace)) is None:
        return
    record, located = read
    if "call" not in record:
        trace.problems.append(f"{manifest}: records no call of its job (made by an older lsrbench): re-make the "
                              f"reports to verify {report.name}")
        return
    with tempfile.TemporaryDirectory() as scratch:
        outputs = {arg: str(Path(scratch) / file) for arg, file in report.outputs.items()}
        here = os.getcwd()
        os.chdir(located.workdir)
        try:
            report.job(**_located_call(record["call"], located), **outputs)
        finally:
            os.chdir(here)
        for arg, file in report.outputs.items():
            kept, fresh = root / file, Path(outputs[arg]).read_bytes()
            recorded = record["call"]["outputs"][arg]
            fresh = fresh.replace(outputs[arg].encode(), recorded.encode())
            trace.counts["reports"] += 1
            if not kept.is_file():
                trace.problems.append(f"{kept}: missing (an output of the {report.name} report)")
            elif kept.read_bytes() != fresh:
                trace.problems.append(f"{kept}: not what its {report.name} job makes again from the inputs its "
                                      f"manifest {manifest} records (edited, or made otherwise)")
