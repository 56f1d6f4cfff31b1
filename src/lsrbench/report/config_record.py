"""Which config a report was made with."""

from __future__ import annotations

import json
import re
from pathlib import Path

from lsrbench.config.schema import property_defaults

__all__ = ["REPORT_BACKBONE_KEYS", "report_backbones", "report_settings", "keyed", "read_probes", "config_record", "report_config",
           "config_line", "stated_config", "snapshot_header", "snapshot_files"]

# What the reports read of a backbone entry: its label, synthetic and evaluate_only flags, and what tells a
# synthetic twin's original (Table 1's note, the claims' twins: its MLM re-fit too).
REPORT_BACKBONE_KEYS = ("label", "synthetic", "evaluate_only", "head_scale", "model", "revision", "mlm_refit")


def _completed(values: dict, *path: str) -> dict:
    defaults = property_defaults("config.schema.yaml", *path)
    return {**values, **{key: value for key, value in defaults.items() if key not in values}}


def report_backbones(config: dict) -> dict:
    completed = {name: _completed(entry, "backbones", "*") for name, entry in config["backbones"].items()}
    return {name: {key: entry[key] for key in REPORT_BACKBONE_KEYS if key in entry} for name, entry in completed.items()}


def report_settings(config: dict) -> dict:
    """The settings every report is made with: the ``report:`` block and the backbones as the
    reports show them (completed with the schema's defaults: :func:`_completed`); with
    ``evaluation.pool_depth``, the ``report:`` block also carries it as ``bm25_pool_depth`` (the
    note on BM25's row: :func:`lsrbench.report.results.bm25_notes`)."""
    report = _completed(config["report"], "report")
    report["bm25_settings"] = _completed(report["bm25_settings"], "report", "bm25_settings")
    depth = (config.get("evaluation") or {}).get("pool_depth")
    return {"report_cfg": {**report, "bm25_pool_depth": depth} if depth else report,
            "backbones": report_backbones(config)}


def keyed(rows) -> dict[tuple[str, ...], str]:
    """``[key..., path]`` rows (the report rules' ``params.keyed``, the one encoding of a run key the
    report jobs and ``verify`` read) as ``{(key...): path}``; a key of one field (a backbone) as that
    string."""
    return {(row[0] if len(row) == 2 else tuple(row[:-1])): row[-1] for row in rows}


def read_probes(probe_files: dict | None) -> list[dict]:
    """Every step-0 probe result of ``{backbone: probe.json}`` (``keyed`` probe rows), backbone by
    backbone; [] where the config runs no probe."""
    return [result for path in (probe_files or {}).values()
            for result in json.loads(Path(path).read_text(encoding="utf-8"))]


_HEADER = "# the config the reports in this results folder were made with, read from: "


def snapshot_header(files) -> str:
    """The first line of a config snapshot: the files it was first read from (information only)."""
    return f"{_HEADER}{', '.join(files)}\n"


def snapshot_files(config_yaml: str | Path) -> list[str]:
    """The files a config snapshot says it was read from: its first line (:func:`snapshot_header`);
    a snapshot of an older lsrbench, whose id included them, has them in its ``params.json``."""
    identity = json.loads((Path(config_yaml).parent / "params.json").read_text(encoding="utf-8"))["identity"]
    if "files" in identity:
        return list(identity["files"])
    with open(config_yaml, encoding="utf-8") as fh:
        first = fh.readline().rstrip("\n")
    return [f for f in first[len(_HEADER):].split(", ") if f] if first.startswith(_HEADER) else []


def config_record(config_yaml: str | None) -> dict | None:
    """``{"snapshot", "id", "files"}`` of the config snapshot at ``config_yaml`` (the files it was
    first read from: :func:`snapshot_files`); None without one (a report made outside the DAG)."""
    if not config_yaml:
        return None
    return {"snapshot": str(config_yaml), "id": Path(config_yaml).parent.name, "files": snapshot_files(config_yaml)}


_LINE = re.compile(r"^Made with config ([0-9a-f]+) \(read from (.*); snapshot: (\S+)\)\.$")


def config_line(record: dict | None) -> str:
    """The last paragraph of a Markdown report: which config it was made with ("" without one)."""
    if not record:
        return ""
    return f"\nMade with config {record['id']} (read from {', '.join(record['files'])}; snapshot: {record['snapshot']}).\n"


def stated_config(markdown: str) -> dict | None:
    """The config a Markdown report says it was made with (its :func:`config_line`), or None."""
    for line in reversed(markdown.splitlines()):
        found = _LINE.match(line)
        if found:
            return {"snapshot": found.group(3), "id": found.group(1), "files": found.group(2).split(", ")}
    return None


def report_config(outputs: list[str]) -> dict | None:
    """The config record (``{"snapshot", "id", "files"}``) a report rule's outputs say they were
    made with: its manifest's (the last output), else, for a folder made before manifests, the
    config line of its Markdown or the ``config`` of its JSON record; None when none says."""
    from lsrbench.folder.records import read_record

    record = read_record(outputs[-1])
    if record is not None and record.config:
        return record.config
    for path in map(Path, outputs[:-1]):
        try:
            if path.suffix == ".md":
                return stated_config(path.read_text(encoding="utf-8"))
            if path.suffix == ".json" and isinstance(config := json.loads(path.read_text(encoding="utf-8")).get("config"),
                                                     dict) and config.get("id"):
                return config
        except (OSError, ValueError, AttributeError):
            continue
    return None
