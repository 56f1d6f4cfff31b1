"""The command line's one-line contract: every subcommand runs through :func:`run_one_line`, so bad input, a
closed pipe, a missing optional package or a refused file ends in one ``lsrbench: error: <file>: <field>:
<message>`` line, never a traceback."""

from __future__ import annotations

import argparse
import errno
import os
import sys
from pathlib import Path
from typing import Callable

from lsrbench.errors import INTERRUPTED_STATUS, InputError, OneLineError, out_of_space_line

__all__ = ["BROKEN_PIPE_STATUS", "OneLineParser", "check_config_key", "check_snakemake_config", "cores_argument", "default_config",
           "path_argument", "require_extra", "run_one_line"]

# A process a shell's closed pipe ends: 128 + SIGPIPE, the status `yes | head` leaves for `yes`.
BROKEN_PIPE_STATUS = 128 + 13


class OneLineParser(argparse.ArgumentParser):
    """argparse whose usage errors are the one line naming the option; ``--help`` still shows the usage."""

    def error(self, message: str):
        option, _, reason = message.partition(": ") if message.startswith("argument ") else ("", "", message)
        command = self.prog.removeprefix("lsrbench").strip()
        raise InputError("command line", option.removeprefix("argument ").split("/")[0] or None,
                         f"{reason} (lsrbench {command + ' ' if command else ''}--help)")


def cores_argument(text: str) -> str:
    """``--cores`` as Snakemake takes it (a positive integer or ``all``), refused here in one line."""
    if text == "all" or (text.isdigit() and int(text) > 0):
        return text
    raise InputError("command line", "--cores", f"'{text}' is not a number of cores (a positive integer, or all)")


def path_argument(option: str) -> Callable[[str], str]:
    """An argparse ``type`` refusing a blank path for ``option`` in one line."""
    def check(text: str) -> str:
        if not text.strip():
            raise InputError("command line", option, f"'{text}' is empty: give a path")
        return text
    check.__name__ = option.lstrip("-")
    return check


def default_config(path: str) -> str:
    """``path``, the default ``--configfile``, when it is here; else one line saying what to give."""
    if not Path(path).is_file():
        raise InputError("command line", "--configfile", f"not given, and the default {path} is not in {Path.cwd()}: "
                                                         "give the config the results were made with (--configfile "
                                                         "FILE), or run from the lsrbench checkout")
    return path


def require_extra(module: str, extra: str, command: str) -> None:
    """Import ``module`` now, or refuse ``command`` naming the pyproject extra that installs it."""
    import importlib

    try:
        importlib.import_module(module)
    except ModuleNotFoundError:
        raise InputError("command line", command, f"needs the optional package {module}, which is not installed: "
                                                   f"pip install -e '.[{extra}]'") from None


def run_one_line(command: Callable[[], int]) -> int:
    """``command()``'s exit status; its failures of the kinds above as one line on stderr."""
    try:
        status = command()
        sys.stdout.flush()  # a closed reader is seen here, inside the guard, not at interpreter exit
        return status
    except OneLineError as exc:
        _say(str(exc))
        return 2
    except KeyboardInterrupt:  # Ctrl-C: every output appears only once whole, so what was finished stays
        _say("command line: interrupted (Ctrl-C) before the command finished: what it had finished stays; run it "
             "again to go on")
        return INTERRUPTED_STATUS
    except BrokenPipeError:  # the reader has what it wanted: no line (stderr may be the same pipe)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE_STATUS
    except OSError as exc:
        full = out_of_space_line(exc, None)
        if full is not None:  # a full disk: named by its file, or by the command that wrote
            _say(full if exc.filename is not None else f"command line: {full}")
            return 1
        if exc.filename is None:
            raise
        reason = exc.strerror or errno.errorcode.get(exc.errno, str(exc))
        _say(f"{exc.filename}: {reason}")
        return 1


def _say(line: str) -> None:
    print(f"lsrbench: error: {line}", file=sys.stderr)


# The keys snakemake --config takes (snakemake.cli.parse_config): top-level names only.
SNAKEMAKE_CONFIG_KEY = r"[a-zA-Z_][\w-]*\w$"


def check_snakemake_config(configfiles: list[str], snakemake_args: list[str]) -> None:
    """What Snakemake refuses before the Snakefile speaks, said first in one line: an unreadable or empty
    ``--configfile``, or a ``--config`` key with a dot."""
    from lsrbench.config.layers import load_config_files

    for path in configfiles:
        load_config_files([path])
    values = snakemake_args[snakemake_args.index("--config") + 1:] if "--config" in snakemake_args else []
    for entry in values:
        if entry.startswith("-"):
            break
        check_config_key(entry)


def check_config_key(entry: str) -> None:
    """A ``--config`` entry whose key Snakemake's parser refuses (a dot: ``recipe.steps=10``), in one line."""
    import re

    key = entry.partition("=")[0]
    if not re.match(SNAKEMAKE_CONFIG_KEY, key):
        hint = (f"; a nested setting goes in a config file (base: config/config.yaml, then {key.split('.')[0]}: "
                "...)" if "." in key else "")
        raise InputError("command line", "--config", f"'{entry}': snakemake --config takes top-level keys only{hint}")
