"""Manifests and ``lsrbench verify``: every artifact of a stage is recorded with its SHA-256, and
every number in ``results/metrics.csv`` must trace to a run file that a manifest vouches for.

A manifest is the stage's provenance JSON (``train_provenance.json``, ``<dataset>/provenance.json``)
with an ``artifacts`` entry::

    "manifest": "results/runs/b/k4/vaswani/provenance.json",       # its own path, as written
    "artifacts": {"inputs":  {"results/runs/b/k4/vaswani/docs.npz": {"sha256": ..., "bytes": ...}, ...},
                  "outputs": {"results/runs/b/k4/vaswani/metrics.tsv": {...}, ...}}

Paths are recorded as the stage was given them (Snakemake passes paths relative to its working
directory), and a folder is recorded file by file. ``verify`` finds the working directory again
from the manifest's own recorded path, so a results tree can be moved or copied as a whole.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
from pathlib import Path

MANIFEST_NAMES = ("provenance.json", "train_provenance.json")
METRIC_COLUMNS = ["backbone", "k", "dataset", "measure", "value"]


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _files(path: str) -> list[str]:
    """``path`` itself, or every regular file under a folder (sorted; hidden temporaries skipped)."""
    p = Path(path)
    if p.is_dir():
        found = []
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            found += [os.path.join(root, f) for f in sorted(files) if not f.startswith(".")]
        return found
    return [str(path)]


def artifact_hashes(paths) -> dict[str, dict]:
    """``{file: {"sha256", "bytes"}}`` for each path (folders file by file), as given (not resolved)."""
    out: dict[str, dict] = {}
    for path in paths:
        if path is None:
            continue
        for f in _files(str(path)):
            out[f] = {"sha256": sha256_file(f), "bytes": os.path.getsize(f)}
    return out


def manifest_fields(manifest_path: str, inputs, outputs) -> dict:
    """The ``manifest`` and ``artifacts`` entries a stage adds to its provenance record."""
    return {"manifest": str(manifest_path),
            "artifacts": {"inputs": artifact_hashes(inputs), "outputs": artifact_hashes(outputs)}}


# --------------------------------------------------------------------------- verification


def _workdir(manifest_file: Path, recorded: str) -> Path:
    """The directory relative paths of a manifest are relative to."""
    rec = Path(recorded)
    if rec.is_absolute():
        return Path("/")
    parts = len(rec.parts)
    base = manifest_file.resolve()
    for _ in range(parts):
        base = base.parent
    return base


def _resolve(workdir: Path, recorded: str) -> Path:
    p = Path(recorded)
    return p if p.is_absolute() else workdir / p


def find_manifests(results_dir: str | os.PathLike) -> list[Path]:
    root = Path(results_dir)
    found = []
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
    """Check every manifest under ``results_dir`` and ``results_dir/metrics.csv``.

    Returns ``(problems, counts)``: one line per problem, naming the file at fault.
    """
    root = Path(results_dir)
    problems: list[str] = []
    counts = {"manifests": 0, "artifacts": 0, "metric_rows": 0}
    # resolved metrics.tsv path -> its rows, for every metrics file a sound manifest vouches for
    backed: dict[Path, dict[tuple[str, str, str, str], float]] = {}
    if not root.is_dir():
        return [f"{root}: not a folder"], counts
    for mf in find_manifests(root):
        try:
            record = json.loads(mf.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            problems.append(f"{mf}: unreadable manifest ({' '.join(str(exc).split())})")
            continue
        if not isinstance(record, dict) or "artifacts" not in record or "manifest" not in record:
            problems.append(f"{mf}: no artifact hashes (written before manifests existed?)")
            continue
        counts["manifests"] += 1
        workdir = _workdir(mf, record["manifest"])
        sound = True
        for role in ("inputs", "outputs"):
            for recorded, info in sorted(record["artifacts"].get(role, {}).items()):
                counts["artifacts"] += 1
                path = _resolve(workdir, recorded)
                if not path.is_file():
                    problems.append(f"{path}: missing ({role[:-1]} recorded in {mf})")
                    sound = False
                    continue
                size = path.stat().st_size
                if size != info.get("bytes") or sha256_file(path) != info.get("sha256"):
                    how = "truncated" if size < info.get("bytes", 0) else "modified"
                    problems.append(f"{path}: {how}: SHA-256 differs from {mf} "
                                    f"({size} bytes now, {info.get('bytes')} recorded)")
                    sound = False
        if not sound:
            continue
        for recorded in record["artifacts"].get("outputs", {}):
            if Path(recorded).name == "metrics.tsv":
                path = _resolve(workdir, recorded)
                backed[path.resolve()] = _read_metrics_tsv(path, problems)

    metrics_csv = root / "metrics.csv"
    if not metrics_csv.is_file():
        problems.append(f"{metrics_csv}: missing")
        return problems, counts
    by_run: dict[tuple[str, str, str], dict[str, float]] = {}
    for rows in backed.values():
        for (b, k, d, m), v in rows.items():
            by_run.setdefault((b, k, d), {})[m] = v
    seen: set[tuple[str, str, str, str]] = set()
    with open(metrics_csv, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header != METRIC_COLUMNS:
            problems.append(f"{metrics_csv}: line 1: expected header {','.join(METRIC_COLUMNS)}, got {header}")
            return problems, counts
        for lineno, row in enumerate(reader, 2):
            if not row:
                continue
            counts["metric_rows"] += 1
            if len(row) != 5:
                problems.append(f"{metrics_csv}: line {lineno}: expected 5 fields, got {len(row)}")
                continue
            b, k, d, m, v = row
            seen.add((b, k, d, m))
            run = by_run.get((b, k, d))
            if run is None:
                problems.append(f"{metrics_csv}: line {lineno}: no manifest-backed metrics.tsv for "
                                f"backbone {b}, k {k}, dataset {d}")
            elif m not in run:
                problems.append(f"{metrics_csv}: line {lineno}: measure {m} is not in the metrics.tsv of "
                                f"backbone {b}, k {k}, dataset {d}")
            elif not _same_number(v, run[m]):
                problems.append(f"{metrics_csv}: line {lineno}: {m} = {v} but the run's metrics.tsv has {run[m]!r} "
                                f"(backbone {b}, k {k}, dataset {d})")
    for (b, k, d), run in sorted(by_run.items()):
        missing = sorted(m for m in run if (b, k, d, m) not in seen)
        if missing:
            problems.append(f"{metrics_csv}: no row for {', '.join(missing)} of backbone {b}, k {k}, dataset {d} "
                            "(stale: re-run the collect rule)")
    return problems, counts


def _read_metrics_tsv(path: Path, problems: list[str]) -> dict[tuple[str, str, str, str], float]:
    rows = {}
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t")
        header = next(reader, None)
        if header != METRIC_COLUMNS:
            problems.append(f"{path}: line 1: expected header {' '.join(METRIC_COLUMNS)}")
            return rows
        for row in reader:
            if len(row) == 5:
                try:
                    rows[tuple(row[:4])] = float(row[4])
                except ValueError:
                    problems.append(f"{path}: value {row[4]!r} is not a number")
    return rows
