"""``python -m MODULE ARGS`` as a process of its own (its own working directory, environment,
stdout, stderr and exit status, an uncaught exception printed as a traceback to its stderr), forked
from a server process that has already imported snakemake and the modules the Snakefile reads
(multiprocessing's forkserver): what a new interpreter spends importing them before a command's
first line of its own is paid once per session, not once per command.

Every snakemake the tests start through :func:`helpers.snakemake.run_snakemake` (and the bad-input
catalogue's ~100 commands): most are a dry run or an error before the first job, whose cost was
mostly that start-up. A command that runs jobs starts them as Snakemake always does, in processes
of their own. What tests a process itself (Ctrl-C, a lock's holder, SIGKILL) keeps subprocess.Popen.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import tempfile
from pathlib import Path

from lsrbench.stages import STAGE_NAMES

# Imported once in the server (never torch: a forked process must not inherit its threads).
# The Snakefile's and workflow/rules/common.smk's imports, snakemake's command line, lsrbench's.
PRELOAD = ["snakemake.cli", "snakemake.api", "snakemake.workflow", "lsrbench.cli",
           "lsrbench.config.grid", "lsrbench.config.layers", "lsrbench.report.reports", "lsrbench.validation.config",
           "lsrbench.validation.files", "lsrbench.dag.stage", "lsrbench.dag.layout", "lsrbench.report.landing",
           "lsrbench.folder.freshness", "lsrbench.dag.fingerprint", "lsrbench.names",
           *(f"lsrbench.stages.{name}" for name in STAGE_NAMES),
           # what a dry run of a finished micro run imports beyond those (pandas, numpy, ir_measures, the
           # claims engine, Snakemake's report: ~6 s of a forked start at load 14 here); a module renamed
           # away is skipped (the forkserver ignores a preload's ImportError)
           "lsrbench.folder.state", "lsrbench.dag.startup", "lsrbench.evaluate.metrics", "lsrbench.locks",
           "lsrbench.report.claims.engine", "lsrbench.report.probe.report", "lsrbench.report.render",
           "lsrbench.report.results", "lsrbench.report.stats", "lsrbench.data.training_sources",
           "lsrbench.model.checkpoint", "snakemake.report.html_reporter", "docutils.core", "smart_open"]


def _context():
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def _exit_status(code) -> int:
    """What the interpreter exits with for ``SystemExit(code)`` (a message is printed to stderr)."""
    import sys

    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _run_in_child(module: str, args: list[str], cwd: str, env: dict, out: str, err: str) -> None:
    """The forked process: ``python -m module args`` with fds 1 and 2 on the files ``out`` and ``err``."""
    import runpy
    import sys
    import traceback

    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    for fd, path in ((1, out), (2, err)):
        os.dup2(os.open(path, os.O_WRONLY | os.O_TRUNC), fd)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115 - the process's own stdout
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.argv = [module, *args]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        status = 0
    except SystemExit as stop:
        status = _exit_status(stop.code)
    except BaseException:  # noqa: BLE001 - printed as the interpreter would
        traceback.print_exc()
        status = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def run_module(command: list[str], cwd: Path | str, timeout: float) -> subprocess.CompletedProcess:
    """Run ``command`` (``[python, "-m", module, *args]``) as described above, with this process's
    environment; a ``subprocess.CompletedProcess`` as ``subprocess.run(..., capture_output=True,
    text=True)`` gives. Raises ``subprocess.TimeoutExpired`` (the process killed) past ``timeout``."""
    _, flag, module, *args = command
    if flag != "-m":
        raise ValueError(f"not a `python -m MODULE` command: {command}")
    with tempfile.TemporaryDirectory() as folder:
        out, err = Path(folder) / "stdout", Path(folder) / "stderr"
        out.touch()
        err.touch()
        process = _context().Process(target=_run_in_child, args=(module, args, str(cwd), dict(os.environ), str(out), str(err)))
        process.start()
        process.join(timeout)
        if process.exitcode is None:
            process.kill()
            process.join()
            raise subprocess.TimeoutExpired(command, timeout)
        return subprocess.CompletedProcess(command, process.exitcode, out.read_text(), err.read_text())
