"""``lsrbench verify`` for ``results/table1.md``: the table is checked against its sidecar ``table1.cells.json``
(written by the same rule, see :func:`lsrbench.report.tables.table1.table1_record`): the SHA-256 of the table
and of the metrics.csv it was made from, the settings it was made with, and every cell with the metrics.csv rows
it averages."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from lsrbench.hashing import sha256_file
from lsrbench.names import COLLAPSED
from lsrbench.report.results import read_metrics
from lsrbench.report.tables.table1 import head_statistics_of, render_cell, table1_cells
from lsrbench.report.verify.trace import Trace, Where, where

__all__ = ["verify_table1", "markdown_table"]


@dataclass
class _Sidecar:
    md: Path
    side: Path
    metrics_csv: Path
    record: dict
    located: Where

    @property
    def rows(self) -> list[dict]:
        return self.record["rows"]


def _row_name(row: dict) -> str:
    return f"{row['backbone']} k {row['k']}"


def _stamp_differs(path: Path, stamp: dict) -> str | None:
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


def _locate(located: Where, recorded: str | None, resolved: str | None = None) -> Path | None:
    for candidate in (located(recorded) if recorded else None, Path(resolved) if resolved else None):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def verify_table1(md: Path, side: Path, metrics_csv: Path, trace: Trace) -> None:
    """Check table1.md (``md``) against its cells record (``side``) and recompute every cell from metrics.csv."""
    sidecar = _load_sidecar(md, side, metrics_csv, trace.problems)
    if sidecar is None:
        return
    _check_bytes(sidecar, trace.problems)
    line_of = _check_cells(sidecar, trace)
    if sidecar.metrics_csv.is_file():
        _check_recomputed(sidecar, line_of, trace)


def _load_sidecar(md: Path, side: Path, metrics_csv: Path, problems: list[str]) -> _Sidecar | None:
    root = md.parent
    if not md.exists() and not side.exists():
        return None
    if not side.is_file():
        problems.append(f"{md}: no {side.name} beside it, so its numbers cannot be traced "
                        "(made by an older lsrbench? re-run the table1 rule)")
        return None
    try:
        record = json.loads(side.read_text(encoding="utf-8"))
        for key, kind in (("columns", list), ("rows", list), ("settings", dict), ("table", dict),
                          ("metrics_csv", dict), ("manifest", str)):
            if not isinstance(record[key], kind):
                raise TypeError(f"'{key}' is not a {kind.__name__}")
        located = where(root, side, record["manifest"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        problems.append(f"{side}: unreadable ({' '.join(str(exc).split())})")
        return None
    if not md.is_file():
        problems.append(f"{md}: missing (recorded in {side})")
        return None
    return _Sidecar(md, side, metrics_csv, record, located)


def _check_bytes(s: _Sidecar, problems: list[str]) -> None:
    how = _stamp_differs(s.md, s.record["table"])
    if how:
        problems.append(f"{s.md}: {how} from {s.side}")
    if s.metrics_csv.is_file() and _stamp_differs(s.metrics_csv, s.record["metrics_csv"]):
        problems.append(f"{s.md}: made from another {s.metrics_csv} (its SHA-256 differs from the one recorded in "
                        f"{s.side}): the table is stale or one of the two was edited")


def _check_cells(s: _Sidecar, trace: Trace) -> dict[tuple[str, str], int | None]:
    problems, columns, rows = trace.problems, s.record["columns"], s.rows
    parsed = markdown_table(s.md.read_text(encoding="utf-8", errors="replace"))
    if parsed is None:
        if rows:
            problems.append(f"{s.md}: no table found ({len(rows)} rows recorded in {s.side})")
        parsed = (columns, [])
    header, md_rows = parsed
    if header != columns:
        problems.append(f"{s.md}: header {header} but {s.side.name} records {columns}")
    line_of: dict[tuple[str, str], int | None] = {}
    for i, row in enumerate(rows):
        key = (row["backbone"], row["k"])
        if i >= len(md_rows):
            problems.append(f"{s.md}: row {_row_name(row)} is missing ({len(md_rows)} rows in the file, "
                            f"{len(rows)} recorded in {s.side.name}: truncated?)")
            line_of[key] = None
            continue
        lineno, got = md_rows[i]
        line_of[key] = lineno
        if len(got) != len(row["cells"]):
            problems.append(f"{s.md}: line {lineno}: {len(got)} cells, {len(row['cells'])} recorded for row "
                            f"{_row_name(row)}")
            continue
        for cell, text in zip(row["cells"], got):
            trace.counts["table_cells"] += 1
            if text != cell["text"]:
                problems.append(f"{s.md}: line {lineno}: row {_row_name(row)}, column {cell['column']}: {text!r} but "
                                f"{s.side.name} records {cell['text']!r}")
    for lineno, got in md_rows[len(rows):]:
        problems.append(f"{s.md}: line {lineno}: a row that {s.side.name} does not record ({' | '.join(got)})")
    return line_of


def _settings(s: _Sidecar, problems: list[str]) -> tuple[dict, dict | None, dict, dict]:
    report_cfg = dict(s.record["settings"]["report"])
    recorded_refs = None
    if report_cfg.get("reference"):
        ref = s.record.get("reference") or {}
        found = _locate(s.located, report_cfg["reference"], ref.get("resolved"))
        if found is None:
            problems.append(f"{s.md}: its paper values cannot be traced: reference file {report_cfg['reference']} "
                            "not found")
            report_cfg["reference"] = None
            recorded_refs = {(r["backbone"], r["k"], c["column"]): c.get("reference") for r in s.rows for c in r["cells"]}
        else:
            if ref and _stamp_differs(found, ref):
                problems.append(f"{s.md}: its paper values were read from {found}, which has changed since "
                                f"(SHA-256 differs from {s.side})")
            report_cfg["reference"] = str(found)
    norms, norm_paths = {}, {}
    for b, recorded in (s.record.get("norm_files") or {}).items():
        found = _locate(s.located, recorded)
        if found is not None:
            try:
                norms[b], norm_paths[b] = json.loads(found.read_text(encoding="utf-8")), found
            except (OSError, ValueError) as exc:
                problems.append(f"{found}: unreadable head norms ({' '.join(str(exc).split())})")
    probe_paths = {b: found for b, recorded in (s.record.get("probe_files") or {}).items()
                   if (found := _locate(s.located, recorded)) is not None}
    if probe_paths:  # k auto by a logit-scale statistic: read at k = 1 of the probes
        norms = head_statistics_of(norm_paths, probe_paths)
        norm_paths = {**norm_paths, **probe_paths}
    return report_cfg, recorded_refs, norms, norm_paths


def _check_recomputed(s: _Sidecar, line_of: dict, trace: Trace) -> None:
    problems = trace.problems
    report_cfg, recorded_refs, norms, norm_paths = _settings(s, problems)
    settings = s.record["settings"]
    chance = _chance(s, problems)
    try:
        fresh = table1_cells(read_metrics(str(s.metrics_csv)), report_cfg, settings["backbones"], norms,
                             settings.get("auto_k"), chance)
    except Exception as exc:  # noqa: BLE001 - a metrics.csv too damaged to tabulate: named above line by line
        problems.append(f"{s.md}: cannot be recomputed from {s.metrics_csv} "
                        f"({type(exc).__name__}: {' '.join(str(exc).split())})")
        return
    recorded = {(r["backbone"], r["k"]): r for r in s.rows}
    for row in fresh["rows"]:
        key = (row["backbone"], row["k"])
        if key not in recorded:
            problems.append(f"{s.md}: no row for {_row_name(row)}, which {s.metrics_csv} has "
                            "(stale: re-run the table1 rule)")
            continue
        where = f"{s.md}: line {line_of[key]}: row {_row_name(row)}" if line_of.get(key) else f"{s.md}: row {_row_name(row)}"
        _check_row(s, row, recorded[key], where, recorded_refs, norm_paths, trace)
    fresh_keys = {(r["backbone"], r["k"]) for r in fresh["rows"]}
    for row in s.rows:
        if (row["backbone"], row["k"]) not in fresh_keys:
            problems.append(f"{s.md}: row {_row_name(row)} has no rows in {s.metrics_csv}")


def _chance(s: _Sidecar, problems: list[str]) -> dict | None:
    stamp = s.record.get("chance_json")
    if not stamp:
        return None
    found = _locate(s.located, stamp["path"])
    if found is None:
        problems.append(f"{s.md}: its chance levels cannot be traced: {stamp['path']} not found")
        return None
    if _stamp_differs(found, stamp):
        problems.append(f"{s.md}: made from another {found} (its SHA-256 differs from the one recorded in {s.side})")
    return json.loads(found.read_text(encoding="utf-8"))


def _check_row(s: _Sidecar, row: dict, old: dict, where: str, recorded_refs: dict | None, norm_paths: dict,
               trace: Trace) -> None:
    problems, key = trace.problems, (row["backbone"], row["k"])
    old_cells = {c["column"]: c for c in old["cells"]}
    untraced: dict[str, set[int | str]] = {}  # column -> metrics.csv lines (or missing rows) it rests on
    if row["collapsed"] != old.get("collapsed"):
        problems.append(f"{where}: recorded as {'' if old.get('collapsed') else 'not '}collapsed, but {s.metrics_csv} "
                        f"says {'' if row['collapsed'] else 'not '}collapsed")

    def check_traced(column: str, dataset: str, measure: str, seed: str | None) -> None:
        line, ok = trace.traced.get((*key, *([] if seed is None else [seed]), dataset, measure), (None, False))
        if not ok:
            untraced.setdefault(column, set()).add(line if line else f"{dataset} {measure} (no row)")

    for src in row["collapsed_sources"]:
        check_traced("collapsed", src["dataset"], COLLAPSED, src.get("seed"))
    for cell in row["cells"]:
        col = cell["column"]
        if recorded_refs is not None and recorded_refs.get((*key, col)):
            cell["reference"] = recorded_refs[(*key, col)]  # reported as untraceable above, once
            cell["text"] = render_cell(cell)
        was = old_cells.get(col, {}).get("text")
        if was != cell["text"]:
            problems.append(f"{where}, column {col}: {was!r} does not follow from "
                            f"{' and '.join(_origins(s, cell)) or 'its inputs'}: recomputed {cell['text']!r}")
        for number in cell.get("numbers", []):
            for src in number.get("sources", []):
                check_traced(col, src["dataset"], number["measure"], src.get("seed"))
            if "norms" in number:
                _check_norms(s, number["norms"], norm_paths, f"{where}, column {col}", trace)
    if untraced:
        found = set().union(*untraced.values())
        lines = sorted(x for x in found if isinstance(x, int))
        what = ([f"line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}"] if lines else []) + \
            sorted(x for x in found if isinstance(x, str))
        problems.append(f"{where}: {', '.join(untraced)} rest on {s.metrics_csv} {', '.join(what)}, "
                        "which do not trace to a manifest-backed run file")


def _origins(s: _Sidecar, cell: dict) -> list[str]:
    origin = [str(s.metrics_csv)] if any("sources" in n for n in cell.get("numbers", [])) else []
    origin += [cell["reference"]["file"]] if cell.get("reference") else []
    origin += sorted({str(s.record["norm_files"].get(b)) for n in cell.get("numbers", []) if "norms" in n
                      for b in (n["norms"]["backbone"], n["norms"]["reference"])})
    return origin


def _check_norms(s: _Sidecar, norms: dict, norm_paths: dict, where: str, trace: Trace) -> None:
    for b in (norms["backbone"], norms["reference"]):
        path = norm_paths.get(b)
        if path is None or path.resolve() not in trace.vouched:
            trace.problems.append(f"{where}: k auto comes from the head norms of {b} "
                                  f"({s.record['norm_files'].get(b)}), which no manifest vouches for "
                                  "(not recorded, or changed since)")
