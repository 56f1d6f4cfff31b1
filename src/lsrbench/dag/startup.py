"""The Snakefile's start-up in one line: what its main process installs so that Ctrl-C before the
first job, and Snakemake's refusal of a locked folder, end in ``lsrbench: error: ...`` instead of a
KeyboardInterrupt traceback or Snakemake's LockException (which advises ``--unlock`` even while
the run holding the lock is alive).

From :func:`guard_startup` (the Snakefile's first lines) to :func:`jobs_start` (``onstart``: the
lock is taken, jobs are about to run) Ctrl-C ends the process with status 130; afterwards it is
Snakemake's own (it stops its jobs, each saying what it keeps: lsrbench.pipeline.job_runner).
Ctrl-C while Python imports Snakemake itself, before the Snakefile is read, stays Python's.
"""

from __future__ import annotations

import logging
import os
import signal
import sys

from lsrbench.errors import INTERRUPTED_STATUS
from lsrbench.ops.locks import lock_holder, lock_line, record_holder

__all__ = ["guard_startup", "jobs_start"]


def _interrupted(signum, frame):
    print(f"lsrbench: error: {os.getcwd()}: interrupted (Ctrl-C) while snakemake was starting, before any job "
          "ran: nothing finished was changed; run the same command again to go on", file=sys.stderr)
    raise SystemExit(INTERRUPTED_STATUS)  # not an Exception: Snakemake's handlers let it through, finally blocks run


class _LockRefusal(logging.Filter):
    """Snakemake's LockException record, rewritten as the one line of :func:`lsrbench.ops.locks.lock_line`."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "exception", None) == "LockException":
            holder = lock_holder(".")
            if holder is not None:
                record.msg = "lsrbench: error: " + lock_line(os.getcwd(), holder, "this snakemake cannot start")
                record.args = ()
        return True


def guard_startup() -> None:
    """In the main process: Ctrl-C from here to :func:`jobs_start` is one line, and a folder
    another run has locked is refused in one line naming it."""
    signal.signal(signal.SIGINT, _interrupted)
    logging.getLogger("snakemake.logging").addFilter(_LockRefusal())


def jobs_start() -> None:
    """``onstart``: Ctrl-C is Snakemake's again, and this run is recorded as the lock's holder."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    record_holder(".")
