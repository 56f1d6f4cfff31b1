"""The bad-input catalogue shows machine paths by name (tests/helpers/catalogue.py), so a row
regenerated on another machine or checkout reads the same."""

from __future__ import annotations

from pathlib import Path

from helpers.catalogue import shown
from helpers.paths import REPO


def test_a_row_names_the_case_folder_other_test_folders_and_the_checkout():
    tmp = Path("/tmp/pytest-of-ci/pytest-7/test_case0")
    line = (f"lsrbench: error: {tmp}/config.yaml: x: 512 tokens, but /tmp/pytest-of-ci/pytest-7/tiny_roberta/model "
            f"takes 128 | see {REPO}/config/datasets.yaml")
    assert shown(line, tmp) == ("lsrbench: error: <tmp>/config.yaml: x: 512 tokens, but <tmp>/model takes 128 \\| "
                                "see <checkout>/config/datasets.yaml")
