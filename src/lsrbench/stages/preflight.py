"""The preflight stage: the first job of a ``use_gpu: true`` grid (none in a CPU config), which every
training, MLM re-fit and probe not yet finished waits for: on a GPU node as they are, the checks of
``lsrbench preflight`` (:mod:`lsrbench.ops.preflight`) but the disk's (a dry run of the DAG inside the
running DAG). Once per results folder (its folder id is constant): delete ``results/preflight/`` to
have the next run check again; ``lsrbench preflight`` checks the current config any time.

Snakemake re-runs a finished job whose set of inputs changed or whose input is newer than its
outputs, deleting it first. So the preflight is an input only of the jobs not yet finished, and of a
finished one only where its record (``params.json``: ``made_from``) says it was one; never by its
time stamp (``ancient``): a training finished on the CPU, or before a new preflight, is never made again.
"""

from __future__ import annotations

import json
from pathlib import Path

from lsrbench.dag.stage import Stage
from lsrbench.errors import OneLineError

__all__ = ["STAGE", "preflight", "preflight_input"]

PREFLIGHT_JSON = "preflight.json"


def preflight_input(layout, item) -> dict:
    """``{"preflight_json": ...}`` for a job of a GPU grid that is not finished, or that was made after
    a preflight; else nothing (see the module doc)."""
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
    """The checks of ``lsrbench preflight`` but the disk's; a problem stops the grid in one line (the
    first, with the count of the others), else the summary is written."""
    from lsrbench.device import gpu_stack
    from lsrbench.ops.preflight import preflight as checks
    from lsrbench.provenance import write_json

    problems, notes = checks(config, [config_file], disk=False)
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
