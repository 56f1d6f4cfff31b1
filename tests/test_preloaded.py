"""The server the tests fork snakemake and lsrbench from (:mod:`helpers.preloaded`) imports every
module it names and never torch: a process forked from it must not inherit torch's threads."""

from __future__ import annotations

import subprocess
import sys

from helpers.paths import REPO


def test_the_preload_imports_every_module_it_names_and_no_torch():
    code = ("import importlib, sys; from helpers.preloaded import PRELOAD; "
            "[importlib.import_module(m) for m in PRELOAD]; print(sorted({'torch', 'transformers'} & set(sys.modules)))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO / "tests", capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]  # a module renamed away: take it off PRELOAD
    assert proc.stdout.strip() == "[]", proc.stdout
