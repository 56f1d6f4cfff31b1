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


def tiny_default() -> dict:
    """config/config.yaml as loaded, its datasets file made absolute (checked from any folder)."""
    from lsrbench.config.strict_yaml import load_yaml

    config = load_yaml(REPO / "config" / "config.yaml")
    config["datasets_file"] = str(REPO / "config" / "datasets.yaml")
    return config
