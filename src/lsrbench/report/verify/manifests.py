"""``lsrbench verify``: every artifact a stage recorded in its manifest (:mod:`lsrbench.provenance`)
still has its SHA-256, every number in ``results/metrics.csv`` traces to a run file that a manifest
vouches for, every addressed folder's id and record and every report's manifest hold
(:mod:`lsrbench.report.verify.records`), the reports of the folder come from one config
(:mod:`lsrbench.report.verify.configs`), and every report follows from those numbers: ``table1.md`` against its sidecar
``table1.cells.json`` (:mod:`lsrbench.report.verify.table1`), the other tables, the claims, the
figures' data and the HTML pages made again (:mod:`lsrbench.report.verify.reports`). Checks only:
it writes nothing.

Paths in a manifest are recorded as the stage was given them (Snakemake passes paths relative to
its working directory, ``results/...``); ``verify`` finds them under the folder it is given from
the manifest's own recorded path (:func:`lsrbench.report.verify.trace.where`), so a results folder can be
moved, copied or renamed (``x/results_copy``).
"""

from __future__ import annotations

import csv
import json
import math
import os
from pathlib import Path

from lsrbench.errors import InputError
from lsrbench.evaluate.tidy import read_metrics_tsv
from lsrbench.hashing import sha256_file
from lsrbench.names import METRIC_COLUMNS, NO_SEED, SEEDED_METRIC_COLUMNS
from lsrbench.report.verify.trace import Trace, where
from lsrbench.report.verify.configs import check_configs
from lsrbench.report.verify.records import check_records
from lsrbench.report.verify.reports import verify_reports
from lsrbench.report.verify.table1 import verify_table1

__all__ = ["MANIFEST_NAMES", "verify", "find_manifests"]

MANIFEST_NAMES = ("provenance.json", "train_provenance.json")


def find_manifests(results_dir: str | os.PathLike) -> list[Path]:
    """Every stage manifest under ``results_dir`` and every report's (``manifests/<rule>.json``)."""
    from lsrbench.names import MANIFESTS

    root = Path(results_dir)
    found = list((root / MANIFESTS).glob("*.json"))
    for name in MANIFEST_NAMES:
        found += [p for p in root.rglob(name) if not any(part.startswith(".") for part in p.relative_to(root).parts)]
    return sorted(found)


def _same_number(csv_text: str, value: float) -> bool:
    try:
        got = float(csv_text)
    except ValueError:
        return False
    if math.isnan(got) or math.isnan(value):
        return math.isnan(got) and math.isnan(value)
    return csv_text.strip() == f"{value:.6g}" or math.isclose(got, value, rel_tol=1e-5, abs_tol=1e-12)


def verify(results_dir: str | os.PathLike) -> tuple[list[str], dict]:
    """Check every manifest under ``results_dir``, ``results_dir/metrics.csv`` and every report.

    Returns ``(problems, counts)``: one line per problem, naming the file at fault.
    """
    root = Path(results_dir)
    trace = Trace()
    if not root.is_dir():
        raise InputError(root, None, "not a folder (the results folder of a run)")
    for manifest in find_manifests(root):
        _check_manifest(root, manifest, trace)
    check_records(root, trace)
    _check_metrics_csv(root / "metrics.csv", trace)
    stated = check_configs(root, trace.problems)
    verify_table1(root, trace)
    verify_reports(root, stated, trace)
    return trace.problems, trace.counts


def _artifacts(record) -> dict[str, dict[str, dict]] | None:
    """The manifest's ``artifacts`` when it has the recorded shape, else None."""
    if not isinstance(record, dict) or not isinstance(record.get("manifest"), str):
        return None
    artifacts = record.get("artifacts")
    if not isinstance(artifacts, dict):
        return None
    for role in ("inputs", "outputs"):
        files = artifacts.get(role, {})
        if not isinstance(files, dict) or not all(
                isinstance(info, dict) and isinstance(info.get("sha256"), str) and isinstance(info.get("bytes"), int)
                for info in files.values()):
            return None
    return artifacts


def _check_manifest(root: Path, manifest: Path, trace: Trace) -> None:
    try:
        record = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        trace.problems.append(f"{manifest}: unreadable manifest ({' '.join(str(exc).split())})")
        return
    artifacts = _artifacts(record)
    if artifacts is None:
        trace.problems.append(f"{manifest}: no artifact hashes of the recorded shape "
                              "(written before manifests existed, or edited?)")
        return
    trace.counts["manifests"] += 1
    located = where(root, manifest, record["manifest"])
    sound = True
    for role in ("inputs", "outputs"):
        for recorded, info in sorted(artifacts.get(role, {}).items()):
            trace.counts["artifacts"] += 1
            path = located(recorded)
            problem = _artifact_problem(path, info, manifest, role[:-1], record.get("rule"))
            if problem:
                trace.problems.append(f"{path}: {problem}")
                sound = False
            else:
                trace.vouched.add(path.resolve())
    if not sound:
        return
    for recorded in artifacts.get("outputs", {}):
        if Path(recorded).name == "metrics.tsv":
            path = located(recorded)
            rows, problems = read_metrics_tsv(path)
            trace.problems.extend(problems)
            trace.backed[path.resolve()] = rows


def _artifact_problem(path: Path, info: dict, manifest: Path, role: str, rule: str | None = None) -> str | None:
    """What is wrong with one recorded file (None: it has its recorded bytes). A report's output
    (``rule``: the report rule) is made again by snakemake from what it was made from, never
    from itself."""
    if not path.is_file():
        problem = f"missing ({role} recorded in {manifest})"
    else:
        size = path.stat().st_size
        if size == info["bytes"] and sha256_file(path) == info["sha256"]:
            return None
        how = "truncated" if size < info["bytes"] else "modified"
        problem = f"{how}: SHA-256 differs from {manifest} ({size} bytes now, {info['bytes']} recorded)"
    if rule and role == "output":
        problem += (f": snakemake (with the config of the reports) makes it again from the files it was made from, "
                    f"which the {rule} rule reads")
    elif rule:
        problem += f": the {rule} report was made from it as it was then (stale): snakemake makes that report again"
    return problem


METRICS_SOURCES = "metrics.sources.json"


def _collected(metrics_csv: Path, trace: Trace) -> tuple[dict[Path, dict], dict[Path, str] | None]:
    """The backed metrics files metrics.csv was collected from: those its ``metrics.sources.json``
    lists (results/ also holds the runs of other configs), every backed one without it; and, with
    several training seeds, the seed of each listed file (None: one seed)."""
    side = metrics_csv.parent / METRICS_SOURCES
    if not side.is_file():
        return trace.backed, None
    try:
        record = json.loads(side.read_text(encoding="utf-8"))
        located = where(metrics_csv.parent, side, record["manifest"])
        listed = {located(p).resolve() for p in record["sources"]}
        seeds = ({located(p).resolve(): str(s) for p, s in record["seeds"].items()}
                 if "seeds" in record else None)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        trace.problems.append(f"{side}: unreadable ({' '.join(str(exc).split())}); every run file is traced instead")
        return trace.backed, None
    return {path: rows for path, rows in trace.backed.items() if path in listed}, seeds


def _check_metrics_csv(metrics_csv: Path, trace: Trace) -> None:
    """Every row of metrics.csv equals a row of a manifest-backed metrics.tsv it was collected
    from, and every row of those is in metrics.csv."""
    if not metrics_csv.is_file():
        trace.problems.append(f"{metrics_csv}: missing")
        return
    collected, seeds = _collected(metrics_csv, trace)
    columns = METRIC_COLUMNS if seeds is None else SEEDED_METRIC_COLUMNS
    # (backbone, k, (seed,) dataset) -> measure -> value
    by_run: dict[tuple[str, ...], dict[str, float]] = {}
    for path, rows in collected.items():
        for (b, k, d, m), v in rows.items():
            by_run.setdefault((b, k, d) if seeds is None else (b, k, seeds.get(path, NO_SEED), d), {})[m] = v
    seen: set[tuple[str, ...]] = set()
    try:
        with open(metrics_csv, encoding="utf-8", newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header != columns:
                trace.problems.append(f"{metrics_csv}: line 1: expected header {','.join(columns)}, got {header}"
                                      + ("" if seeds is None else f" (the seeds of {METRICS_SOURCES})"))
                return
            for lineno, row in enumerate(reader, 2):
                if row:
                    _check_metrics_row(metrics_csv, lineno, row, by_run, seen, trace, len(columns))
    except UnicodeDecodeError as exc:
        trace.problems.append(f"{metrics_csv}: not UTF-8 text (byte {exc.start}): cannot be traced")
        return
    except csv.Error as exc:
        trace.problems.append(f"{metrics_csv}: malformed CSV ({exc})")
        return
    for key, run in sorted(by_run.items()):
        missing = sorted(m for m in run if (*key, m) not in seen)
        if missing:
            trace.problems.append(f"{metrics_csv}: no row for {', '.join(missing)} of {_run_text(key)} "
                                  "(stale: re-run the collect rule)")


def _run_text(key: tuple) -> str:
    """``backbone b, k k, (seed s,) dataset d``: a run file's key as problems name it."""
    return f"backbone {key[0]}, k {key[1]}, " + (f"seed {key[2]}, " if len(key) == 4 else "") + f"dataset {key[-1]}"


def _check_metrics_row(metrics_csv: Path, lineno: int, row: list[str], by_run: dict, seen: set, trace: Trace,
                       width: int) -> None:
    """One row of metrics.csv (``width`` fields: ``b, k, (seed,) d, m, v``)."""
    trace.counts["metric_rows"] += 1
    if len(row) != width:
        trace.problems.append(f"{metrics_csv}: line {lineno}: expected {width} fields, got {len(row)}")
        return
    *key, m, v = row
    key = tuple(key)
    seen.add((*key, m))
    run = by_run.get(key)
    problem = None
    if run is None:
        problem = f"no manifest-backed metrics.tsv for {_run_text(key)}"
    elif m not in run:
        problem = f"measure {m} is not in the metrics.tsv of {_run_text(key)}"
    elif not _same_number(v, run[m]):
        problem = f"{m} = {v} but the run's metrics.tsv has {run[m]!r} ({_run_text(key)})"
    if problem:
        trace.problems.append(f"{metrics_csv}: line {lineno}: {problem}")
    trace.traced[(*key, m)] = (lineno, problem is None)
