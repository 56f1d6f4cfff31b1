"""Manifests and ``lsrbench verify``: every artifact of a stage is recorded with its SHA-256, and
every number in ``results/metrics.csv`` and ``results/table1.md`` must trace to a run file that a
manifest vouches for.

A manifest is the stage's provenance JSON (``train_provenance.json``, ``<dataset>/provenance.json``)
with an ``artifacts`` entry::

    "manifest": "results/runs/b/k4/vaswani/provenance.json",       # its own path, as written
    "artifacts": {"inputs":  {"results/runs/b/k4/vaswani/docs.npz": {"sha256": ..., "bytes": ...}, ...},
                  "outputs": {"results/runs/b/k4/vaswani/metrics.tsv": {...}, ...}}

Paths are recorded as the stage was given them (Snakemake passes paths relative to its working
directory), and a folder is recorded file by file. ``verify`` finds the working directory again
from the manifest's own recorded path, so a results tree can be moved or copied as a whole.

``table1.md`` has a sidecar, ``table1.cells.json`` (written by the same rule, see
:func:`lsrbench.report.table1_record`): the SHA-256 of the table and of the metrics.csv it was made
from, the settings it was made with, and every cell with the metrics.csv rows it averages. ``verify``
checks the table's bytes against it, compares every cell of the Markdown with the recorded cell,
recomputes every cell from metrics.csv (whose rows it has traced to run files) and checks that it
renders to the same text. Values from the paper are traced to the reference file instead, and
``k: auto`` to the head-norm files (which the training manifests vouch for).
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
TABLE1 = "table1.md"
TABLE1_CELLS = "table1.cells.json"


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
    counts = {"manifests": 0, "artifacts": 0, "metric_rows": 0, "table_cells": 0}
    # resolved metrics.tsv path -> its rows, for every metrics file a sound manifest vouches for
    backed: dict[Path, dict[tuple[str, str, str, str], float]] = {}
    vouched: set[Path] = set()  # resolved paths of every recorded file whose hash still matches
    # (backbone, k, dataset, measure) -> (metrics.csv line, whether it traces to a manifest-backed run file)
    traced: dict[tuple[str, str, str, str], tuple[int, bool]] = {}
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
                    continue
                vouched.add(path.resolve())
        if not sound:
            continue
        for recorded in record["artifacts"].get("outputs", {}):
            if Path(recorded).name == "metrics.tsv":
                path = _resolve(workdir, recorded)
                backed[path.resolve()] = _read_metrics_tsv(path, problems)

    metrics_csv = root / "metrics.csv"
    if not metrics_csv.is_file():
        problems.append(f"{metrics_csv}: missing")
        _verify_table1(root, problems, counts, traced, vouched)
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
            _verify_table1(root, problems, counts, traced, vouched)
            return problems, counts
        for lineno, row in enumerate(reader, 2):
            if not row:
                continue
            counts["metric_rows"] += 1
            before = len(problems)
            if len(row) != 5:
                problems.append(f"{metrics_csv}: line {lineno}: expected 5 fields, got {len(row)}")
                continue
            b, k, d, m, v = row
            seen.add((b, k, d, m))
            traced[(b, k, d, m)] = (lineno, False)
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
            traced[(b, k, d, m)] = (lineno, len(problems) == before)
    for (b, k, d), run in sorted(by_run.items()):
        missing = sorted(m for m in run if (b, k, d, m) not in seen)
        if missing:
            problems.append(f"{metrics_csv}: no row for {', '.join(missing)} of backbone {b}, k {k}, dataset {d} "
                            "(stale: re-run the collect rule)")
    _verify_table1(root, problems, counts, traced, vouched)
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


# --------------------------------------------------------------------------- table1.md


def _stamp_differs(path: Path, stamp: dict) -> str | None:
    """None if ``path`` has the recorded SHA-256 and size, else how it differs."""
    size = path.stat().st_size
    if size == stamp.get("bytes") and sha256_file(path) == stamp.get("sha256"):
        return None
    how = "truncated" if size < (stamp.get("bytes") or 0) else "modified"
    return f"{how}: SHA-256 differs ({size} bytes now, {stamp.get('bytes')} recorded)"


def markdown_table(text: str) -> tuple[list[str], list[tuple[int, list[str]]]] | None:
    """The first pipe table of a Markdown text: ``(header cells, [(line number, cells), ...])``."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("|")), None)
    if start is None:
        return None

    def cells(line: str) -> list[str]:
        body = line.strip()
        body = body[1:-1] if body.endswith("|") and len(body) > 1 else body[1:]
        return [c.strip() for c in body.split("|")]

    header = cells(lines[start])
    rows = []
    i = start + 1
    if i < len(lines) and set(lines[i].strip()) <= set("|:- ") and lines[i].strip():
        i += 1  # the alignment row
    while i < len(lines) and lines[i].startswith("|"):
        rows.append((i + 1, cells(lines[i])))
        i += 1
    return header, rows


def _locate(workdir: Path, recorded: str | None, resolved: str | None = None) -> Path | None:
    for candidate in (_resolve(workdir, recorded) if recorded else None, Path(resolved) if resolved else None):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def _verify_table1(root: Path, problems: list[str], counts: dict,
                   traced: dict[tuple[str, str, str, str], tuple[int, bool]], vouched: set[Path]) -> None:
    """Check ``root/table1.md`` against its sidecar and recompute every cell from metrics.csv."""
    from . import report

    md, side, metrics_csv = root / TABLE1, root / TABLE1_CELLS, root / "metrics.csv"
    if not md.exists() and not side.exists():
        return
    if not side.is_file():
        problems.append(f"{md}: no {TABLE1_CELLS} beside it, so its numbers cannot be traced "
                        "(made by an older lsrbench? re-run the table1 rule)")
        return
    try:
        rec = json.loads(side.read_text(encoding="utf-8"))
        columns, rows, settings = rec["columns"], rec["rows"], rec["settings"]
        workdir = _workdir(side, rec["manifest"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        problems.append(f"{side}: unreadable ({' '.join(str(exc).split())})")
        return
    if not md.is_file():
        problems.append(f"{md}: missing (recorded in {side})")
        return

    # (a) the table's bytes, and the metrics.csv it was made from
    how = _stamp_differs(md, rec["table"])
    if how:
        problems.append(f"{md}: {how} from {side}")
    if metrics_csv.is_file() and _stamp_differs(metrics_csv, rec["metrics_csv"]):
        problems.append(f"{md}: made from another {metrics_csv} (its SHA-256 differs from the one recorded in {side}): "
                        "the table is stale or one of the two was edited")

    # (b) every cell of the Markdown against the recorded cell
    parsed = markdown_table(md.read_text(encoding="utf-8", errors="replace"))
    if parsed is None:
        if rows:
            problems.append(f"{md}: no table found ({len(rows)} rows recorded in {side})")
        parsed = (columns, [])
    header, md_rows = parsed
    if header != columns:
        problems.append(f"{md}: header {header} but {side.name} records {columns}")

    def name(row: dict) -> str:
        return f"{row['backbone']} k {row['k']}"

    line_of: dict[tuple[str, str], int | None] = {}
    for i, row in enumerate(rows):
        key = (row["backbone"], row["k"])
        if i >= len(md_rows):
            problems.append(f"{md}: row {name(row)} is missing ({len(md_rows)} rows in the file, "
                            f"{len(rows)} recorded in {side.name}: truncated?)")
            line_of[key] = None
            continue
        lineno, got = md_rows[i]
        line_of[key] = lineno
        if len(got) != len(row["cells"]):
            problems.append(f"{md}: line {lineno}: {len(got)} cells, {len(row['cells'])} recorded for row {name(row)}")
            continue
        for cell, text in zip(row["cells"], got):
            counts["table_cells"] += 1
            if text != cell["text"]:
                problems.append(f"{md}: line {lineno}: row {name(row)}, column {cell['column']}: {text!r} but "
                                f"{side.name} records {cell['text']!r}")
    for lineno, got in md_rows[len(rows):]:
        problems.append(f"{md}: line {lineno}: a row that {side.name} does not record ({' | '.join(got)})")

    # (c) every cell recomputed from metrics.csv (traced above), the reference file and the norm files
    if not metrics_csv.is_file():
        return
    report_cfg = dict(settings["report"])
    recorded_refs = None
    if report_cfg.get("reference"):
        ref = rec.get("reference") or {}
        found = _locate(workdir, report_cfg["reference"], ref.get("resolved"))
        if found is None:
            problems.append(f"{md}: its paper values cannot be traced: reference file {report_cfg['reference']} "
                            "not found")
            report_cfg["reference"] = None
            recorded_refs = {(r["backbone"], r["k"], c["column"]): c.get("reference") for r in rows for c in r["cells"]}
        else:
            if ref and _stamp_differs(found, ref):
                problems.append(f"{md}: its paper values were read from {found}, which has changed since "
                                f"(SHA-256 differs from {side})")
            report_cfg["reference"] = str(found)
    norms, norm_paths = {}, {}
    for b, recorded in (rec.get("norm_files") or {}).items():
        found = _locate(workdir, recorded)
        if found is not None:
            try:
                norms[b], norm_paths[b] = json.loads(found.read_text(encoding="utf-8")), found
            except (OSError, ValueError) as exc:
                problems.append(f"{found}: unreadable head norms ({' '.join(str(exc).split())})")
    try:
        fresh = report.table1_cells(report.read_metrics(str(metrics_csv)), report_cfg, settings["backbones"], norms,
                                    settings.get("auto_k"))
    except Exception as exc:  # a metrics.csv too damaged to tabulate: named above line by line
        problems.append(f"{md}: cannot be recomputed from {metrics_csv} "
                        f"({type(exc).__name__}: {' '.join(str(exc).split())})")
        return
    recorded = {(r["backbone"], r["k"]): r for r in rows}
    for row in fresh["rows"]:
        key = (row["backbone"], row["k"])
        if key not in recorded:
            problems.append(f"{md}: no row for {name(row)}, which {metrics_csv} has (stale: re-run the table1 rule)")
            continue
        old = recorded[key]
        where = f"{md}: line {line_of[key]}: row {name(row)}" if line_of.get(key) else f"{md}: row {name(row)}"
        old_cells = {c["column"]: c for c in old["cells"]}
        untraced: dict[str, set[int | str]] = {}  # column -> metrics.csv lines (or missing rows) it rests on
        if row["collapsed"] != old.get("collapsed"):
            problems.append(f"{where}: recorded as {'' if old.get('collapsed') else 'not '}collapsed, but {metrics_csv} "
                            f"says {'' if row['collapsed'] else 'not '}collapsed")

        def check_traced(column: str, dataset: str, measure: str) -> None:
            line, ok = traced.get((*key, dataset, measure), (None, False))
            if not ok:
                untraced.setdefault(column, set()).add(line if line else f"{dataset} {measure} (no row)")

        for src in row["collapsed_sources"]:
            check_traced("collapsed", src["dataset"], report.COLLAPSED)
        for cell in row["cells"]:
            col = cell["column"]
            if recorded_refs is not None and recorded_refs.get((*key, col)):
                cell["reference"] = recorded_refs[(*key, col)]  # reported as untraceable above, once
                cell["text"] = report.render_cell(cell)
            was = old_cells.get(col, {}).get("text")
            if was != cell["text"]:
                origin = [str(metrics_csv)] if any("sources" in n for n in cell.get("numbers", [])) else []
                origin += [cell["reference"]["file"]] if cell.get("reference") else []
                origin += sorted({str(rec["norm_files"].get(b)) for n in cell.get("numbers", []) if "norms" in n
                                  for b in (n["norms"]["backbone"], n["norms"]["reference"])})
                problems.append(f"{where}, column {col}: {was!r} does not follow from "
                                f"{' and '.join(origin) or 'its inputs'}: recomputed {cell['text']!r}")
            for number in cell.get("numbers", []):
                for src in number.get("sources", []):
                    check_traced(col, src["dataset"], number["measure"])
                if "norms" in number:
                    for b in (number["norms"]["backbone"], number["norms"]["reference"]):
                        path = norm_paths.get(b)
                        if path is None or path.resolve() not in vouched:
                            problems.append(f"{where}, column {col}: k auto comes from the head norms of {b} "
                                            f"({rec['norm_files'].get(b)}), which no manifest vouches for "
                                            "(not recorded, or changed since)")
        if untraced:
            found = set().union(*untraced.values())
            lines = sorted(x for x in found if isinstance(x, int))
            what = ([f"line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}"] if lines else []) + \
                sorted(x for x in found if isinstance(x, str))
            problems.append(f"{where}: {', '.join(untraced)} rest on {metrics_csv} {', '.join(what)}, "
                            "which do not trace to a manifest-backed run file")
    fresh_keys = {(r["backbone"], r["k"]) for r in fresh["rows"]}
    for row in rows:
        if (row["backbone"], row["k"]) not in fresh_keys:
            problems.append(f"{md}: row {name(row)} has no rows in {metrics_csv}")
