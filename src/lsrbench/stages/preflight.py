"""The preflight stage: the first job of a ``use_gpu`` grid, ``lsrbench preflight``'s checks but the disk's,
once per results folder; an input only of jobs not yet finished, so a finished training is never made again."""

from __future__ import annotations

import json
from pathlib import Path

from lsrbench.dag.stage import Stage
from lsrbench.errors import OneLineError

__all__ = ["STAGE", "preflight", "preflight_input"]

PREFLIGHT_JSON = "preflight.json"


def preflight_input(layout, item) -> dict:
    """``{"preflight_json": ...}`` for a GPU-grid job not finished or made after a preflight; else nothing."""
    from snakemake.io import ancient

    record = Path(item.path("params.json"))
    if record.is_file():
        try:
            made_from = json.loads(record.read_text(encoding="utf-8")).get("made_from") or []
        except ValueError:
            made_from = []  # a damaged record is the folder check's (lsrbench.folder.state)
        recorded = [p for p in made_from if Path(p).name == PREFLIGHT_JSON and Path(p).parent.parent.name == "preflight"]
        return {"preflight_json": ancient(recorded[0])} if recorded else {}
    if not layout.config["use_gpu"]:
        return {}
    return {"preflight_json": ancient(layout.get("preflight").path(PREFLIGHT_JSON))}


def preflight(config: dict, config_file: str, preflight_json: str) -> None:
    """The preflight checks but the disk's: a problem stops the grid in one line, else the summary is
    written."""
    from lsrbench.device import gpu_stack
    from lsrbench.validation.preflight import checks
    from lsrbench.provenance import write_json

    problems, notes = checks(config, config_file)
    if problems:
        more = f" (and {len(problems) - 1} more: lsrbench preflight lists them)" if len(problems) > 1 else ""
        raise OneLineError(problems[0] + more)
    write_json(preflight_json, {"ok": True, "notes": notes, "gpu": gpu_stack()})


STAGE = Stage(
    name="preflight", kind="preflight", job=preflight,
    priority=5,
    model_job=True,  # on a GPU node, with the GPU a training gets
    grid=lambda c: [{}] if c["use_gpu"] else [],
    identity=lambda layout, key: {"stage": "preflight"},  # constant: one folder, whatever the config
    outputs={"preflight_json": PREFLIGHT_JSON},
    runtime=lambda layout, item: {"config": layout.config, "config_file": layout.config_file},
)
