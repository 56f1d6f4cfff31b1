"""What the processes of one test session share: with pytest-xdist (``pytest -n 2``) each worker is
a process of its own with its own temporary folder, and a session fixture would be built once per
worker. :func:`built_once` builds it once for all of them, in the folder they share.

``LSRBENCH_TEST_SHARED=DIR`` shares them between sessions too (CI's ``pytest -m slow`` then
``pytest -m slurm``: one finished micro run for both): they are kept in ``DIR/<fingerprint>``,
where the fingerprint is a hash of everything that decides them (the sources, workflow, configs,
profiles and test helpers of this checkout, and the installed versions of the packages that
compute them), so an edit or another install never reads a stale one.
"""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path
from typing import Callable


SHARED_VARIABLE = "LSRBENCH_TEST_SHARED"
# What a session fixture is made from, below the repository ...
FINGERPRINTED = ("Snakefile", "pyproject.toml", "src", "workflow", "config", "profiles", "tests/conftest.py",
                 "tests/helpers")
# ... and with which packages.
PACKAGES = ("torch", "transformers", "sentence-transformers", "snakemake", "numpy", "tokenizers")


def session_root(tmp_path_factory) -> Path:
    """``$LSRBENCH_TEST_SHARED/<fingerprint>`` when set; else the session's base folder (under
    pytest-xdist, the folder above every worker's)."""
    kept = os.environ.get(SHARED_VARIABLE)
    if kept:
        root = Path(kept) / fingerprint()
        root.mkdir(parents=True, exist_ok=True)
        return root
    base = Path(tmp_path_factory.getbasetemp())
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@functools.lru_cache(maxsize=1)
def fingerprint() -> str:
    """A hash of the files of :data:`FINGERPRINTED` (path and bytes) and the versions of :data:`PACKAGES`."""
    import hashlib

    from helpers.paths import REPO
    from lsrbench.environment import installed_pins

    digest = hashlib.sha256()
    for name in FINGERPRINTED:
        top = REPO / name
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        for path in files:
            digest.update(f"{path.relative_to(REPO)}\0".encode() + path.read_bytes() + b"\0")
    for pin in installed_pins(PACKAGES):
        digest.update(f"{pin}\0".encode())
    return digest.hexdigest()[:16]


def built_once(tmp_path_factory, name: str, build: Callable[[Path], object]) -> Path:
    """``<session root>/<name>``, made by ``build(folder)`` in the first process of the session to
    ask (under a lock: the others wait for it, then read it). A build that failed is tried again by
    the next process to ask, and fails there the same way."""
    from filelock import FileLock

    root = session_root(tmp_path_factory)
    folder, done = root / name, root / f"{name}.done"
    with FileLock(str(root / f"{name}.lock")):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            build(folder)
            done.touch()
    return folder
