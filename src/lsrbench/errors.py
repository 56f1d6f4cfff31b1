"""The errors every entry point prints as one ``lsrbench: error: ...`` line without a traceback:
:class:`InputError` and :class:`LibraryIncompatible`."""

from __future__ import annotations

import errno
import os
import signal


class OneLineError(Exception):
    """An error printed as the one line ``lsrbench: error: <str(exc)>`` and a non-zero exit."""


class LibraryIncompatible(OneLineError):
    """lsrbench's own incompatibility with an installed library release, never blamed on the user's file."""


class InputError(OneLineError):
    """Bad input (config, data, checkpoint), printed as ``lsrbench: error: <file>: <field>: <message>``; raised
    before any output is written."""

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


# A full disk or spent quota: the input was fine, and atomic writes left everything finished as it was.
OUT_OF_SPACE = frozenset(e for e in (getattr(errno, "ENOSPC", None), getattr(errno, "EDQUOT", None)) if e)


def out_of_space_line(exc: OSError, folder: str | os.PathLike | None) -> str | None:
    """The one line for a full disk or quota naming the file (else ``folder``); None for other errors."""
    if exc.errno not in OUT_OF_SPACE:
        return None
    where = exc.filename if exc.filename is not None else folder
    what = "no space left on device" if exc.errno == errno.ENOSPC else "disk quota exceeded"
    line = (f"{what} (nothing finished was changed: outputs appear only once whole); free space and run "
            "again")
    return f"{where}: {what} writing it{line[len(what):]}" if where is not None else line


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message, spaces squeezed (its type's name when empty)."""
    text = str(exc).strip()
    return " ".join(text.splitlines()[0].split()) if text else type(exc).__name__
