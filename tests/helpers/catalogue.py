"""The bad-input catalogue's table (docs/bad-input-catalogue.md): each case's outcome, appended by the test
that ran it to the file ``LSRBENCH_CATALOGUE`` names (nothing when it is not set)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from helpers.paths import REPO

# the tests' temporary folders and this checkout differ per machine: the table shows them by name
PYTEST_TMP = re.compile(r"/tmp/pytest-of-[^/\s`']+/pytest-\d+/[^/\s`']+")


def shown(outcome: str, tmp: Path) -> str:
    """The outcome as the table shows it: machine paths named, ``|`` escaped for a table cell."""
    text = outcome.replace(str(tmp), "<tmp>").replace(str(REPO), "<checkout>")
    return PYTEST_TMP.sub("<tmp>", text).replace("|", "\\|")


def record(name: str, outcome: str, tmp: Path) -> None:
    """Append the case's outcome to the table named by LSRBENCH_CATALOGUE."""
    target = os.environ.get("LSRBENCH_CATALOGUE")
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(f"| {name} | `{shown(outcome, tmp)}` |\n")
