"""Where the repository and its read-only test material (``../shared``) are."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# ``LSRBENCH_SHARED``: the folder where it is elsewhere (a clone that is not beside ``shared/``).
SHARED = Path(os.environ.get("LSRBENCH_SHARED") or REPO.parent / "shared")


def shared_or_skip(*parts: str) -> Path:
    """A path under ``../shared``; skips the test when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} not present (../shared is read-only test material beside the repo)")
    return path
