"""``lsrbench verify``: every artifact a stage recorded in its manifest (:mod:`lsrbench.provenance`) still has its
SHA-256, every addressed folder's id and record and every report's manifest hold
(:mod:`lsrbench.report.verify.records`), the reports come from one config
(:mod:`lsrbench.report.verify.configs`), and every report of the registry is made again and compared
(:mod:`lsrbench.report.verify.reports`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from lsrbench.errors import InputError
from lsrbench.evaluate.tidy import read_metrics_tsv
from lsrbench.hashing import sha256_file
from lsrbench.report.verify.trace import Trace, where
from lsrbench.report.verify.configs import check_configs
from lsrbench.report.verify.records import check_records
from lsrbench.report.verify.reports import verify_reports
from lsrbench.report.reports.collect import METRICS_CSV

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


def verify(results_dir: str | os.PathLike) -> tuple[list[str], dict]:
    """Check every manifest under ``results_dir``, ``results_dir/metrics.csv`` and every report."""
    root = Path(results_dir)
    trace = Trace()
    if not root.is_dir():
        raise InputError(root, None, "not a folder (the results folder of a run)")
    for manifest in find_manifests(root):
        _check_manifest(root, manifest, trace)
    check_records(root, trace)
    if not (root / METRICS_CSV).is_file():
        trace.problems.append(f"{root / METRICS_CSV}: missing")
    verify_reports(root, check_configs(root, trace.problems), trace)
    return trace.problems, trace.counts


def _artifacts(record) -> dict[str, dict[str, dict]] | None:
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
    """What is wrong with one recorded file (None: it has its recorded bytes)."""
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
