"""The cadence and the fields of progress lines (lsrbench.progress), with a fake clock."""

from __future__ import annotations

import logging
import re

from lsrbench.progress import Progress, format_duration, log_format, parse_duration, parse_progress


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _progress(total, **kw):
    clock = FakeClock()
    return Progress("train", total, "steps", clock=clock, logger=logging.getLogger("test.progress"), **kw), clock


def test_every_five_percent_or_sixty_seconds_first_and_last_always():
    progress, clock = _progress(100)  # every 5 steps or 60 s
    logged = []
    for step in range(1, 101):
        clock.now = step * 2.0 if step <= 20 else 40.0 + (step - 20) * 30.0  # slow after step 20
        if progress.update(step) is not None:
            logged.append(step)
    # steps 1..20 every 2 s: the first, then every 5 steps; then 30 s per step: every 2 steps (60 s)
    assert logged[:5] == [1, 6, 11, 16, 21]
    assert logged[5:] == list(range(23, 101, 2)) + [100]


def test_line_fields_rate_eta_and_extra_values():
    progress, clock = _progress(50)
    clock.now = 5.0
    line = progress.update(10, loss=0.123456)
    assert line == "train: 10/50 steps (20%) loss 0.1235 | 2 steps/s | elapsed 5s | ETA 20s"
    clock.now = 25.0
    assert progress.update(50) == "train: 50/50 steps (100%) | 2 steps/s | elapsed 25s | ETA 0s"


def test_skipped_work_counts_as_done_but_not_in_the_rate():
    """A resumed run (or reused shards): the ETA comes from this process's own speed."""
    clock = FakeClock()
    progress = Progress("index", 1000, "docs", clock=clock, done=400)
    progress.skip(100)  # a reused shard
    clock.now = 10.0
    line = progress.advance(50)
    assert line.startswith("index: 550/1000 docs (55%) | 5 docs/s | elapsed 10s | ETA 1m30s")


def test_nothing_new_logs_nothing_and_no_time_yet_has_no_rate():
    progress, clock = _progress(10, every=1)
    assert progress.update(0) == "train: 0/10 steps (0%) | ? steps/s | elapsed 0s | ETA ?"
    assert progress.update(0) is None


def test_log_lines_carry_a_utc_timestamp(caplog):
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "hello", None, None)
    record.created = 0.0  # 1970-01-01T00:00:00 UTC, whatever the local zone
    assert log_format().format(record) == "1970-01-01T00:00:00Z INFO x: hello"
    assert re.fullmatch(r"1h01m01s", format_duration(3661)) and format_duration(None) == "?"


def test_a_logged_progress_line_reads_back(tmp_path):
    """What lsrbench status reads from a job's log is what Progress wrote there, through the log format."""
    logger = logging.getLogger("test.progress.file")
    handler = logging.FileHandler(tmp_path / "train.log")
    handler.setFormatter(log_format())
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    clock = FakeClock()
    progress = Progress("index slice documents", 650, "docs", clock=clock, logger=logger)
    clock.now = 4.0
    progress.update(48)
    handler.close()
    logger.removeHandler(handler)
    line = (tmp_path / "train.log").read_text().splitlines()[-1]
    read = parse_progress(line)
    assert (read.what, read.done, read.total, read.rate) == ("index slice documents", 48, 650, 12.0)
    assert read.eta == 50.0 and read.text == "index slice documents: 48/650 docs (7%) | 12 docs/s | elapsed 4s | ETA 50s"
    assert parse_progress("2026-12-01T04:13:30Z INFO lsrbench.job: evaluate: done in 9s") is None
    assert parse_progress("2026-12-01T00:00:10Z INFO x: train: 0/3 steps (0%) | ? steps/s | elapsed 0s | ETA ?").eta is None
    assert [parse_duration(format_duration(s)) for s in (0, 59, 61, 3725)] == [0, 59, 61, 3725]
    assert parse_duration("?") is None
