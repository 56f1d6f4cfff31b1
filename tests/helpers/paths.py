"""Where the repository and its read-only test material (``../shared``) are."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"


def shared_or_skip(*parts: str) -> Path:
    """A path under ``../shared``; skips the test when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} not present (../shared is read-only test material beside the repo)")
    return path
