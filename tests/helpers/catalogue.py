"""The bad-input catalogue's table (docs/bad-input-catalogue.md): each case's outcome, appended by the test
that ran it to the file ``LSRBENCH_CATALOGUE`` names (nothing when it is not set)."""

from __future__ import annotations

import os
from pathlib import Path


def record(name: str, outcome: str, tmp: Path) -> None:
    """Append the case's outcome to the table named by LSRBENCH_CATALOGUE (its folder shown as <tmp>)."""
    target = os.environ.get("LSRBENCH_CATALOGUE")
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            shown = outcome.replace(str(tmp), "<tmp>").replace("|", "\\|")  # a table cell
            fh.write(f"| {name} | `{shown}` |\n")
