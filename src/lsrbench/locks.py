"""Who holds Snakemake's lock on a working directory."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LockHolder", "LOCKS", "record_holder", "lock_holder", "lock_line"]

LOCKS = Path(".snakemake") / "locks"
HOLDER_SUFFIX = ".holder.json"


@dataclass(frozen=True)
class LockHolder:
    """The run holding a folder's lock: ``since``, and where known ``pid``, ``host``, ``command``; ``alive``
    None on another host."""
    since: float
    pid: int | None
    host: str | None
    command: str | None
    alive: bool | None


def record_holder(workdir: str | os.PathLike = ".") -> None:
    """Record this process as the holder of ``workdir``'s lock (Snakemake removes the record with
    the lock folder when the run ends)."""
    folder = Path(workdir) / LOCKS
    if not folder.is_dir():  # --nolock: nothing is held
        return
    record = {"pid": os.getpid(), "host": socket.gethostname(), "command": " ".join(["snakemake", *sys.argv[1:]]),
              "started": time.time()}
    (folder / f"{os.getpid()}{HOLDER_SUFFIX}").write_text(json.dumps(record), encoding="utf-8")


def _alive(pid: int) -> bool:
    """Whether ``pid`` on this host is still a snakemake (not a new process that reused the pid)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        return b"snakemake" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # no /proc: the pid exists, which is all that can be told


def _recorded(folder: Path) -> list[dict]:
    records = []
    for path in sorted(folder.glob(f"*{HOLDER_SUFFIX}")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # being written
        if isinstance(record, dict) and isinstance(record.get("pid"), int):
            records.append(record)
    return records


def _running_here(workdir: Path) -> list[dict]:
    found = {}
    for entry in Path("/proc").glob("[0-9]*"):
        pid = int(entry.name)
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            if pid == os.getpid() or not any(b"snakemake" in part for part in command[:3]):
                continue
            if Path(os.readlink(entry / "cwd")) != workdir:
                continue
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # ended meanwhile, or not ours to read
        found[pid] = {"pid": pid, "parent": parent, "command": b" ".join(command).decode(errors="replace").strip()}
    return [p for p in found.values() if p["parent"] not in found]


def lock_holder(workdir: str | os.PathLike = ".") -> LockHolder | None:
    """The run holding Snakemake's lock on ``workdir``, or None when no lock is held."""
    folder = Path(workdir) / LOCKS
    try:
        locks = [p.stat().st_mtime for p in folder.glob("*.lock")]
    except OSError:
        return None  # removed meanwhile: the run ended
    if not locks:
        return None
    host = socket.gethostname()
    records = _recorded(folder)
    mine = [r for r in records if r.get("host") == host]
    if records and not mine:
        r = records[0]
        return LockHolder(min(locks), r["pid"], r.get("host"), r.get("command"), None)
    for r in mine:
        if _alive(r["pid"]):
            return LockHolder(min(locks), r["pid"], host, r.get("command"), True)
    running = _running_here(Path(workdir).resolve())
    if running:
        return LockHolder(min(locks), running[0]["pid"], host, running[0]["command"], True)
    gone = mine[0] if mine else {}
    return LockHolder(min(locks), gone.get("pid"), host if mine else None, gone.get("command"), False)


def lock_line(workdir: str | os.PathLike, holder: LockHolder, blocked: str) -> str:
    """One line: who holds ``workdir``'s lock since when, what is blocked, and what to do."""
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder.since))
    who = " ".join(x for x in (f"pid {holder.pid}" if holder.pid else "", f"on {holder.host}" if holder.host else "",
                               f"({holder.command})" if holder.command else "") if x)
    where = Path(workdir) / LOCKS
    if holder.alive:
        return (f"{where}: a snakemake run holds this folder since {since} ({who}): {blocked} while it runs; wait "
                "for it to end, or stop it (Ctrl-C in its terminal)")
    if holder.alive is None:
        return (f"{where}: a snakemake run holds this folder since {since} ({who}; another machine, so whether it "
                f"still runs cannot be told here): {blocked} while it runs; once it has ended, snakemake --unlock")
    ended = f"the run that took it ({who}) has ended" if who else "no snakemake runs in this folder on this machine"
    return (f"{where}: a lock left since {since} by a run that was stopped ({ended}): {blocked} until it is "
            "removed: snakemake --unlock (with the same --snakefile/-d), then run again")
