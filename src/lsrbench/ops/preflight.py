"""``lsrbench preflight``: what would stop or waste a grid, one line per problem, before its first job: the
checks of :mod:`lsrbench.validation.preflight` and the disk."""

from __future__ import annotations

import os
import shutil

from lsrbench.validation.preflight import checks

__all__ = ["preflight", "disk_findings"]


def preflight(config: dict, config_files: list[str], workdir: str = ".", *, disk: bool = True) -> tuple[list, list]:
    """``(problems, notes)`` of a checked config: each problem one line, each note a line of the summary."""
    problems, notes = checks(config, config_files[-1])
    if disk:
        found = disk_findings(config, config_files, workdir)
        problems, notes = problems + found[0], notes + found[1]
    return problems, notes


def disk_findings(config: dict, config_files: list[str], workdir: str) -> tuple[list, list]:
    """The working directory's free space against the plan's disk estimate of the jobs not finished there."""
    from lsrbench.ops.plan import make_plan

    plan = make_plan(config, config_files, command_line={"mirror": config["mirror"]} if config.get("mirror") else None, workdir=workdir, remaining=True,
                     calibrate_models=False)
    bills = [b for b in plan["bill"].values() if b.get("disk")]
    need = sum(plan["bill_totals"]["disk"].values()) + max((b["disk"]["train_checkpoint"] for b in bills), default=0)
    unsized = [name for name, b in plan["bill"].items() if not b.get("disk")]
    free = shutil.disk_usage(workdir).free
    where = os.path.abspath(workdir)
    also = f" ({', '.join(unsized)} not sized: lsrbench plan says why)" if unsized else ""
    if need > free:
        return [f"{where}: disk: {_bytes(free)} free, but the grid's remaining jobs write about {_bytes(need)} "
                f"(lsrbench plan's estimate){also}: free space or run it in another folder"], []
    return [], [f"disk: {_bytes(free)} free in {where}, the remaining jobs write about {_bytes(need)}{also}"]


def _bytes(n: float) -> str:
    from lsrbench.progress import human_bytes

    return human_bytes(n)
