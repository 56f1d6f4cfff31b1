"""``lsrbench verify``: the records the jobs left besides the stage manifests
(:mod:`lsrbench.report.verify.manifests`), so that no one edited file passes."""

from __future__ import annotations

import json
from pathlib import Path, PurePath

from lsrbench.dag.folders import PARAMS_JSON, folder_id
from lsrbench.folder.records import DamagedRecord, load_record
from lsrbench.hashing import sha256_file, stable_hash
from lsrbench.names import MANIFESTS
from lsrbench.report.verify.trace import Trace, where

__all__ = ["check_records"]


def check_records(root: Path, trace: Trace) -> None:
    """Every ``params.json`` under ``root`` and every report's manifest (see the module doc)."""
    digests: dict[Path, str] = {}
    recorded = False  # whether the jobs of this folder left records (lsrbench.pipeline.job_runner)
    for params in sorted(root.rglob(PARAMS_JSON)):
        if not any(part.startswith(".") for part in params.relative_to(root).parts):
            recorded |= _check_params(root, params, trace, digests)
    # a folder made before records existed has no manifests to miss; one whose jobs left records does
    if recorded or any((root / MANIFESTS).glob("*.json")):
        _check_report_manifests(root, trace)


def _check_params(root: Path, params: Path, trace: Trace, digests: dict) -> bool:
    try:
        data = json.loads(params.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        trace.problems.append(f"{params}: unreadable record ({' '.join(str(exc).split())[:80]}): delete "
                              f"{params.parent} to make it again")
        return True
    if not isinstance(data, dict) or not isinstance(data.get("identity"), dict):
        trace.problems.append(f"{params}: no identity of the recorded shape (edited?): delete {params.parent} to "
                              "make it again")
        return True
    identity, folder = data["identity"], params.parent.name
    own_id = folder_id(data.get("kind"), identity)
    if own_id != folder or data.get("id") != folder or data.get("sha256") != stable_hash(identity):
        trace.problems.append(f"{params}: its identity gives the id {own_id}, not the folder's {folder} "
                              f"(recorded id {data.get('id')}): the record or the folder was edited by hand; delete "
                              f"{params.parent} to make it again")
    try:
        record = load_record(params)
    except DamagedRecord as exc:
        trace.problems.append(f"{params}: {exc}: delete {params.parent} to make it again")
        return True
    if record is not None:
        _check_outputs(root, params, record.outputs, trace, digests)
    return record is not None


def _check_outputs(root: Path, params: Path, outputs: dict, trace: Trace, digests: dict) -> None:
    located = _where(root, params, outputs)
    for recorded, info in sorted(outputs.items()):
        path = located(recorded)
        if not path.is_file():
            trace.problems.append(f"{path}: missing (output recorded in {params})")
            continue
        key = path.resolve()
        if key not in digests:
            digests[key] = sha256_file(path)
        if digests[key] != info["sha256"]:
            trace.problems.append(f"{path}: SHA-256 differs from the one {params} records: changed after its job "
                                  f"made it, or the record was; delete {params.parent} to make it again")


def _where(root: Path, params: Path, outputs: dict):
    try:
        rel = params.parent.resolve().relative_to(root.resolve()).parts
    except ValueError:
        rel = ()
    for recorded in outputs:
        parts = PurePath(recorded).parts
        for i in range(len(parts) - len(rel) + 1):
            if rel and parts[i:i + len(rel)] == rel:
                return where(root, params, str(PurePath(*parts[:i + len(rel)], params.name)))
    return where(root, params, str(params))


def _check_report_manifests(root: Path, trace: Trace) -> None:
    from lsrbench.report.reports import all_report_rules, rule_files

    for rule in all_report_rules():
        *files, manifest = (root / PurePath(f).relative_to("results") for f in rule_files(rule))
        present = [f for f in files if f.is_file()]
        if present and not manifest.is_file():
            trace.problems.append(f"{present[0]}: no record of the job that made it ({manifest} is missing): it "
                                  f"cannot be traced to what it was made from; snakemake (with the config of the "
                                  f"reports) makes it again, the {rule} rule")
