"""``lsrbench`` commands run in the test's own process, as ``lsrbench.cli.main`` (what the
``lsrbench`` script calls), with what they print captured: the same exit status, stdout and stderr
as a subprocess, without a new interpreter importing torch and transformers for each command.

For tests of what a command says and does. What only a process shows (the ``lsrbench`` entry
point, ``python -m lsrbench``, a closed pipe, an exception that would reach the interpreter) is
tested through subprocesses in tests/test_cli.py and tests/test_cli_errors.py; here an exception
that escapes ``main`` fails the test, as a traceback in a subprocess's stderr would.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from pathlib import Path


@contextlib.contextmanager
def _working_directory(path: Path | str | None):
    before = os.getcwd()
    if path is not None:
        os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def lsrbench(*args, cwd: Path | str | None = None) -> subprocess.CompletedProcess:
    """``lsrbench ARGS`` (from ``cwd`` when given) as a completed process: returncode, stdout, stderr."""
    from lsrbench.cli import main

    out, err = io.StringIO(), io.StringIO()
    argv = [str(a) for a in args]
    environment = dict(os.environ)  # a command may set a variable for what it starts (plan: TQDM_DISABLE)
    try:
        with _working_directory(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(argv)
    finally:
        os.environ.clear()
        os.environ.update(environment)
    return subprocess.CompletedProcess(["lsrbench", *argv], status, out.getvalue(), err.getvalue())
