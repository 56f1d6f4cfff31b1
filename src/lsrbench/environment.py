"""The installed libraries against ``requirements.lock``: ``lsrbench --version``, verify's version note, and the
one line for a library incompatibility."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

from lsrbench.errors import LibraryIncompatible, first_line

__all__ = ["LOCK_FILE", "REPORTED", "lock_path", "locked_versions", "installed_version", "installed_pins", "normalise",
           "lock_differences", "version_lines", "raising_module", "incompatibility"]

LOCK_FILE = "requirements.lock"
# The libraries whose versions decide lsrbench's numbers and DAG, named by --version.
REPORTED = ("torch", "transformers", "sentence-transformers", "snakemake")
INSTALL_LOCK = "pip install -r requirements.lock && pip install --no-deps -e ."
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)")


def normalise(name: str) -> str:
    """A distribution name as PEP 503 compares them (``Sentence_Transformers`` = ``sentence-transformers``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_path() -> Path | None:
    """``requirements.lock`` of the checkout this package runs from (an editable install), or None."""
    path = Path(__file__).resolve().parents[2] / LOCK_FILE
    return path if path.is_file() else None


def locked_versions(path: str | Path | None = None) -> dict[str, str]:
    """Normalised package name -> exact version pinned in a lock (``name==version`` lines)."""
    path = path or lock_path()
    if path is None:
        return {}
    pins = (_PIN.match(line) for line in Path(path).read_text(encoding="utf-8").splitlines())
    return {normalise(m.group(1)): m.group(2) for m in pins if m}


def installed_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def installed_pins(names) -> list[str]:
    """``name==version`` (or ``name absent``) of each package of ``names``, from metadata without importing."""
    return [f"{name}=={v}" if (v := installed_version(name)) else f"{name} absent" for name in names]


def lock_differences(versions: dict[str, str | None], locked: dict[str, str]) -> list[tuple[str, str, str]]:
    """``(package, version, locked version)`` for each package the lock pins at another version."""
    found = ((normalise(name), version) for name, version in versions.items() if version is not None)
    return sorted((name, version, locked[name]) for name, version in found if name in locked and locked[name] != version)


def version_lines() -> list[str]:
    """``lsrbench --version``: lsrbench, the :data:`REPORTED` libraries, and whether the installed
    packages are the lock's."""
    locked = locked_versions()
    lines = [f"lsrbench {installed_version('lsrbench') or 'not installed'}"]
    for name in REPORTED:
        pinned = locked.get(normalise(name))
        lines.append(f"{name} {installed_version(name) or 'not installed'}" + (f" (lock: {pinned})" if pinned else ""))
    path = lock_path()
    if path is None:
        return [*lines, f"no {LOCK_FILE} beside this install: the versions cannot be compared with the lock"]
    installed = {d.metadata["Name"]: d.version for d in importlib.metadata.distributions() if d.metadata["Name"]}
    differ = lock_differences(installed, locked)
    missing = sorted(set(locked) - {normalise(n) for n in installed})
    if not differ:
        lines.append(f"matches {path}: every installed package at its locked version"
                     + (f" ({len(missing)} locked packages not installed: {', '.join(missing[:5])}"
                        f"{', ...' if len(missing) > 5 else ''})" if missing else ""))
        return lines
    shown = ", ".join(f"{n} {v} (lock {w})" for n, v, w in differ[:8]) + (", ..." if len(differ) > 8 else "")
    return [*lines, f"does not match {path}: {len(differ)} package(s) at other versions: {shown}; "
                    f"install the lock: {INSTALL_LOCK}"]


def raising_module(exc: BaseException) -> str | None:
    """The installed distribution's module whose code raised ``exc`` (innermost site-packages frame), or
    None."""
    tb, module = exc.__traceback__, None
    while tb is not None:
        name = tb.tb_frame.f_globals.get("__name__", "")
        where = tb.tb_frame.f_code.co_filename or ""
        if name and not name.startswith("lsrbench") and ("site-packages" in where or "dist-packages" in where):
            module = name
        tb = tb.tb_next
    return module


def _distribution(module: str) -> str:
    names = importlib.metadata.packages_distributions().get(module) or [module]
    return names[0]


def incompatibility(exc: BaseException, doing: str, caller: str | None = None) -> LibraryIncompatible:
    """The one line for lsrbench's incompatibility with a library: which library at which versions, what
    lsrbench was doing, its first line, what to do."""
    raised = raising_module(exc) or (exc.name if isinstance(exc, ImportError) else None)
    named = []  # the raising distribution, then the one lsrbench called, each once
    for name in (_distribution(raised.partition(".")[0]) if raised else None, caller):
        if name and normalise(name) not in {normalise(n) for n in named}:
            named.append(name)
    versions = " via ".join(f"{n} {installed_version(n) or '(not installed)'}" for n in named) or "libraries"
    locked = locked_versions()
    pinned = [f"{n} {locked[normalise(n)]}" for n in named if normalise(n) in locked and locked[normalise(n)] != installed_version(n)]
    advice = (f"the lock has {', '.join(pinned)}: {INSTALL_LOCK}" if pinned
              else f"install the lock ({INSTALL_LOCK}) or report it; `lsrbench --version` compares")
    return LibraryIncompatible(f"lsrbench is incompatible with the installed {versions} while {doing} "
                               f"({type(exc).__name__}: {first_line(exc)}); this is not a problem with your input: {advice}")
