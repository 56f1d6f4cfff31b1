"""The job runner's clocks (:mod:`lsrbench.pipeline.job_clock`): only the outermost import statement's
wall time is counted, nested imports inside it once; the process age is this process's."""

from __future__ import annotations

import importlib
import sys
import time

from lsrbench.pipeline.job_clock import ImportClock, process_age


def test_import_clock_counts_nested_imports_once(tmp_path, monkeypatch):
    # outer sleeps 0.3 s and imports inner, which sleeps 0.3 s: 0.6 s in all, never 0.9 s
    (tmp_path / "clock_inner_mod.py").write_text("import time\ntime.sleep(0.3)\n")
    (tmp_path / "clock_outer_mod.py").write_text("import time\nimport clock_inner_mod\ntime.sleep(0.3)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import builtins
    original = builtins.__import__
    with ImportClock() as clock:
        importlib.invalidate_caches()
        exec("import clock_outer_mod", {})
        already = clock.seconds
        exec("import clock_outer_mod", {})  # cached in sys.modules: costs nothing measurable
    assert builtins.__import__ is original
    assert 0.6 <= already < 0.9, already
    assert clock.seconds - already < 0.05
    for name in ("clock_inner_mod", "clock_outer_mod"):
        sys.modules.pop(name, None)


def test_import_clock_counts_nothing_outside_its_block():
    with ImportClock() as clock:
        pass
    time.sleep(0.01)
    exec("import json", {})
    assert clock.seconds == 0.0


def test_process_age_is_this_processes():
    first = process_age()
    if first is None:  # not Linux: nothing to read
        return
    time.sleep(0.05)
    second = process_age()
    # pytest has been running for a while: older than 0, and growing with wall time
    assert first > 0 and second >= first
