"""The Snakefile's start-up in one line: what its main process installs so that Ctrl-C before the first job, and
Snakemake's refusal of a locked folder, end in ``lsrbench: error: ...`` instead of a KeyboardInterrupt traceback
or Snakemake's LockException (which advises ``--unlock`` even while the run holding the lock is alive)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys

from lsrbench.errors import INTERRUPTED_STATUS, out_of_space_line
from lsrbench.locks import lock_holder, lock_line, record_holder

__all__ = ["guard_startup", "jobs_start"]


def _interrupted(signum, frame):
    print(f"lsrbench: error: {os.getcwd()}: interrupted (Ctrl-C) while snakemake was starting, before any job "
          "ran: nothing finished was changed; run the same command again to go on", file=sys.stderr)
    raise SystemExit(INTERRUPTED_STATUS)  # not an Exception: Snakemake's handlers let it through, finally blocks run


class _LockRefusal(logging.Filter):
    """Snakemake's LockException record, rewritten as the one line of :func:`lsrbench.locks.lock_line`."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "exception", None) == "LockException":
            holder = lock_holder(".")
            if holder is not None:
                record.msg = "lsrbench: error: " + lock_line(os.getcwd(), holder, "this snakemake cannot start")
                record.args = ()
        return True


def guard_startup() -> None:
    """In the main process: Ctrl-C from here to :func:`jobs_start` is one line, a folder another
    run has locked is refused in one line naming it, and so is a folder that cannot be written."""
    signal.signal(signal.SIGINT, _interrupted)
    logging.getLogger("snakemake.logging").addFilter(_LockRefusal())
    line = _unlock_of_a_live_run() or _unwritable_line()
    if line is not None:
        print(f"lsrbench: error: {line}", file=sys.stderr)
        sys.exit(1)


def _unlock_of_a_live_run() -> str | None:
    if "--unlock" not in sys.argv[1:]:
        return None
    holder = lock_holder(".")
    if holder is None or holder.alive is False:
        return None
    return lock_line(os.getcwd(), holder, "--unlock would let a second run write its files")


# What Snakemake writes before and around the first job (its log, locks, metadata, the digest
# cache) is of this order; a folder that cannot take it would fail in Snakemake's own messages.
PROBE_BYTES = 64 * 1024


def _unwritable_line() -> str | None:
    folder = os.path.join(os.getcwd(), ".snakemake")
    probe = os.path.join(folder, f"lsrbench-write-probe-{os.getpid()}")
    try:
        os.makedirs(folder, exist_ok=True)
        with open(probe, "wb") as fh:
            fh.write(bytes(PROBE_BYTES))
            fh.flush()
            os.fsync(fh.fileno())  # a delayed allocation reports a full disk here, not at write()
    except OSError as exc:
        full = out_of_space_line(exc, folder)
        if full is not None:
            return full
        reason = exc.strerror or str(exc)
        return (f"{os.getcwd()}: {reason.lower()}: snakemake writes results/ and .snakemake/ in the folder it runs "
                "in (nothing finished was changed): make it writable, or run in another folder (snakemake -d DIR)")
    finally:
        with contextlib.suppress(OSError):
            os.remove(probe)
    return None


def jobs_start() -> None:
    """``onstart``: Ctrl-C is Snakemake's again, and this run is recorded as the lock's holder."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    record_holder(".")
