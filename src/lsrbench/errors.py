"""The errors every entry point (the CLI, the Snakefile, a job) prints as one line, ``lsrbench:
error: ...``, without a traceback: bad input, naming the file and the field (:class:`InputError`),
and lsrbench's own incompatibility with an installed library (:class:`LibraryIncompatible`)."""

from __future__ import annotations

import errno
import os
import signal


class OneLineError(Exception):
    """An error printed as the one line ``lsrbench: error: <str(exc)>`` and a non-zero exit."""


class LibraryIncompatible(OneLineError):
    """lsrbench's own incompatibility with an installed library release (an argument it no longer
    takes, an API that moved), never blamed on the user's file: made by
    :func:`lsrbench.environment.incompatibility`, which names the library, its version, the lock's
    and what to do."""


class InputError(OneLineError):
    """Bad input (config, data, checkpoint).

    The CLI prints it as one line, ``lsrbench: error: <file>: <field>: <message>``, and exits
    non-zero without a traceback; callers raise it before writing any output, so nothing
    already computed is touched.
    """

    def __init__(self, file: str | os.PathLike | None, field: str | None, message: str):
        self.file = str(file) if file is not None else None
        self.field = field
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = [p for p in (self.file, self.field) if p]
        return ": ".join(parts + [self.message])


# A process Ctrl-C ended: 128 + SIGINT, the status a shell reports for one.
INTERRUPTED_STATUS = 128 + signal.SIGINT


# A full disk (ENOSPC) or a spent quota (EDQUOT): the operating system refused a write, the input
# was fine. Every output is written under a temporary name and renamed once whole (lsrbench.atomic),
# so nothing finished was changed: what to do is free space and run again.
OUT_OF_SPACE = frozenset(e for e in (getattr(errno, "ENOSPC", None), getattr(errno, "EDQUOT", None)) if e)


def out_of_space_line(exc: OSError, folder: str | os.PathLike | None) -> str | None:
    """The one line for ``exc`` when it is a full disk or quota (None otherwise), naming the file
    the system names, else ``folder`` (what was being written)."""
    if exc.errno not in OUT_OF_SPACE:
        return None
    where = exc.filename if exc.filename is not None else folder
    what = "no space left on device" if exc.errno == errno.ENOSPC else "disk quota exceeded"
    line = (f"{what} (nothing finished was changed: outputs appear only once whole); free space and run "
            "again")
    return f"{where}: {what} writing it{line[len(what):]}" if where is not None else line


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message, its spaces squeezed (its type's name when empty):
    what a one-line error quotes of a library's own message."""
    text = str(exc).strip()
    return " ".join(text.splitlines()[0].split()) if text else type(exc).__name__
