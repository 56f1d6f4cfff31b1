"""The skips the test suites allow, each named with why: a skipped test is a test that did not run,
so with ``LSRBENCH_ALLOWED_SKIPS_ONLY=1`` (CI sets it) a session that skips anything else fails,
and every session prints the skips it allowed (tests/conftest.py's hooks)."""

from __future__ import annotations

import re

__all__ = ["ALLOWED_SKIPS", "ENV", "skip_reason", "allowance"]

ENV = "LSRBENCH_ALLOWED_SKIPS_ONLY"

# why a skip may happen -> the reason text it skips with
ALLOWED_SKIPS = {
    "running as root (CI does): root can write into a read-only folder": re.compile(r"root writes into a read-only folder"),
    "no tmpfs can be mounted (needs root with CAP_SYS_ADMIN): a full or read-only disk cannot be made":
        re.compile(r"cannot mount a tmpfs here"),
    "the SLURM executor plugin is installed only for the SLURM session (pytest -m slurm)":
        re.compile(r"could not import 'snakemake_executor_plugin_slurm'"),
}


def skip_reason(report) -> str:
    """The reason a skipped test or collection report gives."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return reason.removeprefix("Skipped: ")


def allowance(reason: str) -> str | None:
    """The name of the allowance a skip reason falls under, or None."""
    return next((name for name, pattern in ALLOWED_SKIPS.items() if pattern.search(reason)), None)
