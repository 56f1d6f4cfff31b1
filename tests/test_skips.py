"""The skip policy (tests/helpers/skips.py, the hooks in tests/conftest.py): a session prints the skips
it allowed, names any other, and fails on one with LSRBENCH_ALLOWED_SKIPS_ONLY=1 (CI)."""

from __future__ import annotations

import os
import subprocess
import sys

from helpers.paths import REPO
from helpers.skips import ALLOWED_SKIPS, allowance

MODULE = '''
import pytest


def test_as_root():
    pytest.skip("root writes into a read-only folder")


def test_other():
    pytest.skip("shared Vaswani collection not available")


def test_runs():
    assert True
'''


def _session(tmp_path, strict: bool, body: str = MODULE) -> subprocess.CompletedProcess:
    (tmp_path / "test_skip_policy_case.py").write_text(body, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO / "tests")}
    env.pop("LSRBENCH_ALLOWED_SKIPS_ONLY", None)
    if strict:
        env["LSRBENCH_ALLOWED_SKIPS_ONLY"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "conftest", "-p", "no:cacheprovider",
                           "test_skip_policy_case.py"], cwd=tmp_path, env=env, capture_output=True, text=True)


def test_an_unexpected_skip_fails_a_strict_session_and_allowed_ones_are_printed(tmp_path):
    strict = _session(tmp_path, True)
    assert strict.returncode == 1, strict.stdout
    assert "allowed skip (1): running as root" in strict.stdout
    assert "unexpected skip: test_skip_policy_case.py::test_other: shared Vaswani collection not available" in strict.stdout
    relaxed = _session(tmp_path, False)
    assert relaxed.returncode == 0 and "unexpected skip" in relaxed.stdout
    only_allowed = _session(tmp_path, True, MODULE.replace('pytest.skip("shared Vaswani collection not available")', "pass"))
    assert only_allowed.returncode == 0 and "unexpected" not in only_allowed.stdout


def test_the_allowed_reasons_are_few_and_named():
    assert len(ALLOWED_SKIPS) <= 4 and all(len(name) > 20 for name in ALLOWED_SKIPS)
    assert allowance("could not import 'snakemake_executor_plugin_slurm': No module named ...")
    assert allowance("shared Vaswani collection not available") is None
