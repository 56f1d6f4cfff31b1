"""One error type for bad input, rendered as a single line that names the file and the field."""

from __future__ import annotations

import os


class InputError(Exception):
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
