"""Progress lines for log files (done/total, rate, ETA): first, last, and every ``every`` units or ``seconds``.
Written here rather than taken from tqdm, which redraws one terminal line and has no such rule."""

from __future__ import annotations

import logging
import math
import re
import time
from calendar import timegm
from dataclasses import dataclass
from typing import Callable

__all__ = ["Progress", "ProgressLine", "parse_progress", "parse_duration", "format_duration", "log_format", "log_to_file", "log_file", "LOG_FORMAT", "LOG_DATEFMT", "human_bytes"]

# Every line of a job's log starts with its UTC time: ``2026-07-01T12:00:00Z INFO name: message``.
LOG_FORMAT = "%(asctime)sZ %(levelname)s %(name)s: %(message)s"
LOG_DATEFMT = "%Y-%m-%dT%H:%M:%S"


def log_format() -> logging.Formatter:
    """The formatter of a job's log file: UTC time stamps (:data:`LOG_FORMAT`)."""
    formatter = logging.Formatter(LOG_FORMAT, LOG_DATEFMT)
    formatter.converter = time.gmtime
    return formatter


def log_to_file(path: str) -> None:
    """Send INFO and above to ``path`` (appended), time-stamped in UTC."""
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(log_format())
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)


def log_file() -> str | None:
    """The file the root logger writes to (set by :func:`log_to_file`), if any."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            return handler.baseFilename
    return None


def format_duration(seconds: float) -> str:
    """``1h02m03s``, ``4m05s``, ``7s``; ``?`` when unknown."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "?"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def parse_duration(text: str) -> float | None:
    """The seconds of a :func:`format_duration` text (``1h02m03s``); None for ``?`` or anything else."""
    match = _DURATION.match(text.strip())
    if not match or not any(match.groups()):
        return None
    hours, minutes, secs = (int(g or 0) for g in match.groups())
    return float(hours * 3600 + minutes * 60 + secs)


# A progress line of a job's log as :meth:`Progress.line` writes it, after the log format's head.
_LINE = re.compile(r"^(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)Z \S+ \S+: (?P<text>(?P<what>.+?): (?P<done>\d+)/"
                   r"(?P<total>\d+) (?P<unit>\S+) \(\d+%\).* \| (?P<rate>\S+) \S+/s \| elapsed \S+ \| ETA (?P<eta>\S+))$")


@dataclass(frozen=True)
class ProgressLine:
    """One progress line read back from a job's log (:func:`parse_progress`)."""

    time: float            # when it was written (UTC epoch seconds)
    text: str              # the line without its time stamp and logger
    what: str
    done: int
    total: int
    rate: float | None     # units per second of the job's process
    eta: float | None      # seconds left when it was written


def parse_progress(line: str) -> ProgressLine | None:
    """The progress line ``line`` of a job's log (:data:`LOG_FORMAT` then :meth:`Progress.line`), else None."""
    match = _LINE.match(line.rstrip("\n"))
    if not match:
        return None
    try:
        rate = float(match["rate"])
    except ValueError:
        rate = None
    return ProgressLine(time=float(timegm(time.strptime(match["time"], LOG_DATEFMT))), text=match["text"],
                        what=match["what"], done=int(match["done"]), total=int(match["total"]), rate=rate,
                        eta=parse_duration(match["eta"]))


class Progress:
    """Reports ``done`` of ``total`` units to ``logger``: ``update`` sets, ``advance`` adds, ``skip`` adds work
    done elsewhere (not in the rate). Returns the line logged, else None."""

    def __init__(self, what: str, total: int, unit: str, *, every: int | None = None, seconds: float = 60.0,
                 logger: logging.Logger | None = None, clock: Callable[[], float] = time.monotonic, done: int = 0):
        self.what, self.total, self.unit = what, max(0, int(total)), unit
        self.every = every if every is not None else max(1, self.total // 20)
        self.seconds = seconds
        self.logger = logger or logging.getLogger("lsrbench.progress")
        self.clock = clock
        self.done = self._start_done = int(done)
        self._start = clock()
        self._last_done: int | None = None
        self._last_time = self._start

    def skip(self, n: int) -> None:
        self.done += int(n)
        self._start_done += int(n)

    def advance(self, n: int, **fields) -> str | None:
        return self.update(self.done + int(n), **fields)

    def update(self, done: int, **fields) -> str | None:
        self.done = int(done)
        now = self.clock()
        due = (self._last_done is None or self.done >= self.total
               or self.done - self._last_done >= self.every or now - self._last_time >= self.seconds)
        if not due or self.done == self._last_done:
            return None
        self._last_done, self._last_time = self.done, now
        line = self.line(now, **fields)
        self.logger.info("%s", line)
        return line

    def rate(self, now: float | None = None) -> float | None:
        """Units per second of this process so far (None before any time has passed)."""
        elapsed = (self.clock() if now is None else now) - self._start
        worked = self.done - self._start_done
        return worked / elapsed if elapsed > 0 and worked > 0 else None

    def line(self, now: float, **fields) -> str:
        pct = 100.0 * self.done / self.total if self.total else 100.0
        head = " ".join([f"{self.what}: {self.done}/{self.total} {self.unit} ({pct:.0f}%)"]
                        + [f"{name} {_fmt(value)}" for name, value in fields.items() if value is not None])
        rate = self.rate(now)
        eta = (self.total - self.done) / rate if rate else (0.0 if self.done >= self.total else None)
        return " | ".join([head, f"{_fmt_rate(rate)} {self.unit}/s", f"elapsed {format_duration(now - self._start)}",
                           f"ETA {format_duration(eta)}"])


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _fmt_rate(rate: float | None) -> str:
    if rate is None:
        return "?"
    return f"{rate:.3g}" if rate < 100 else f"{rate:.0f}"


def human_bytes(n: float) -> str:
    """A size in decimal units (``12.3 MB``), as job logs and the collapse guard print it."""
    units = ("B", "kB", "MB", "GB", "TB")
    i = 0
    while n >= 1000 and i < len(units) - 1:
        n, i = n / 1000, i + 1
    return f"{n:.0f} B" if i == 0 else f"{n:.1f} {units[i]}"
