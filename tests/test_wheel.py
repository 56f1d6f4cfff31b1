"""A wheel install works: the wheel built from the tracked sources, installed in a new virtual
environment (its dependencies reused from this one's site-packages, lsrbench itself only from the
wheel), validates the default config; its schemas are package data."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from helpers.paths import REPO

pytestmark = pytest.mark.slow


def run(*cmd, cwd=None) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{cmd}: {proc.stderr[-2000:]}"
    return proc


def test_wheel_install_validates_the_default_config(tmp_path):
    source = tmp_path / "source"  # the tracked sources only: no egg-info, build/ or caches of the checkout
    tracked = run("git", "ls-files", "pyproject.toml", "README.md", "src", cwd=REPO).stdout.split()
    for name in tracked:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, source / name)
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", source, "-w", tmp_path / "dist")
    wheel = next((tmp_path / "dist").glob("lsrbench-*.whl"))

    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    # the dependencies from this environment, after the new one's own site-packages (a path a .pth
    # adds has its own .pth files unread: this environment's editable lsrbench is not seen)
    (site / "zz_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run(python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel)

    where = run(python, "-c", "import lsrbench.config.schema as s, lsrbench; print(lsrbench.__file__); "
                              "print(s.SCHEMA_DIR / 'config.schema.yaml')").stdout.split()
    assert all(Path(p).is_relative_to(site) for p in where), where
    assert Path(where[1]).is_file()
    proc = run(venv / "bin" / "lsrbench", "check-config", "--configfile", "config/config.yaml", cwd=REPO)
    assert "config/config.yaml" in proc.stdout and ": ok" in proc.stdout, proc.stdout
