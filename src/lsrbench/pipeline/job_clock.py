"""Where a job's wall time goes before it computes anything: the process start-up (Python, Snakemake's script
preamble) and the imports the job function makes (torch, transformers, sentence-transformers load in seconds
each), logged by the job runner beside the job's own lines so that ``benchmark/job_split.py`` can split a run's
time into fixed costs and compute. Measured here rather than with ``python -X importtime``: a Snakemake
``script:`` job's interpreter flags are not ours to set, and only the outermost import's wall time is wanted."""

from __future__ import annotations

import builtins
import os
import time

__all__ = ["ImportClock", "process_age"]


def process_age() -> float | None:
    """Seconds since this process started (Linux ``/proc``); None where that cannot be read."""
    try:
        with open("/proc/self/stat") as stat:
            # field 22 (starttime, clock ticks after boot); the name (field 2) may hold spaces
            start_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as uptime:
            up = float(uptime.read().split()[0])
        return max(0.0, up - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


class ImportClock:
    """Within ``with ImportClock() as clock:``, ``clock.seconds`` sums the wall time of the
    outermost ``import`` statements (nested imports are inside their parent's time)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._depth = 0
        self._saved = None

    def __enter__(self) -> "ImportClock":
        self._saved = builtins.__import__
        saved = self._saved

        def timed_import(*args, **kwargs):
            if self._depth:
                return saved(*args, **kwargs)
            self._depth += 1
            start = time.perf_counter()
            try:
                return saved(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start
                self._depth -= 1

        builtins.__import__ = timed_import
        return self

    def __exit__(self, *exc) -> None:
        builtins.__import__ = self._saved
