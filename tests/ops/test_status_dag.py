"""``lsrbench status`` on a real running micro DAG (``pytest -m slow``): while Snakemake trains, the
command names the running training with its progress line, and its done count is Snakemake's own
"N of M steps done" (no report has run yet); its jobs per rule are those of Snakemake's dry run;
once Snakemake has finished, everything is done."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from helpers.paths import REPO
from helpers.snakemake import SNAKEMAKE, job_counts, micro_config, run_snakemake

pytestmark = pytest.mark.slow
STEPS = 400  # long enough for a few progress lines (every 5 %) while status is run


def _status(cfg, work) -> str:
    proc = subprocess.run([sys.executable, "-m", "lsrbench", "status", "--configfile", str(cfg), "--results", str(work / "results")],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def _snakemake_done(log) -> int:
    counts = re.findall(r"^(\d+) of \d+ steps", log.read_text(), re.M)
    return int(counts[-1]) if counts else 0


def _rows(text: str) -> dict[str, list[str]]:
    return {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| rule")}


def _while_training(proc, cfg, work, log) -> str:
    """The status output while a training runs and has logged progress, taken when no job of
    Snakemake finished during the call (so its done count can be compared with Snakemake's)."""
    deadline = time.time() + 420
    while time.time() < deadline and proc.poll() is None:
        before = _snakemake_done(log)
        out = _status(cfg, work)
        if re.search(rf"^    train: \d+/{STEPS} steps", out, re.M) and _snakemake_done(log) == before:
            return out
        time.sleep(0.5)
    pytest.fail(f"no running training with a progress line seen (snakemake exit {proc.poll()}):\n"
                f"{log.read_text()[-3000:]}")


def test_status_of_a_running_then_finished_micro_dag(tmp_path, vaswani_slice, tiny_roberta):
    cfg = micro_config(tmp_path, vaswani_slice, tiny_roberta, steps=STEPS, checkpoint_steps=100)
    work = tmp_path / "work"
    work.mkdir()
    planned = job_counts(run_snakemake("-n", "--forceall", "-d", str(work), "--configfile", str(cfg)).stdout)
    log = tmp_path / "snakemake.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen([*SNAKEMAKE, "--cores", "2", "-d", str(work), "--configfile", str(cfg)], cwd=REPO,
                                stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        running = _while_training(proc, cfg, work, log)
        print(running)
        assert "Snakemake running here (.snakemake/locks)" in running
        assert re.search(r"^running \(\d\):\n  train run=rand-roberta k=(1|1e-30) for \S+$", running, re.M)
        rows = _rows(running)
        stages = [rule for rule in rows if rule not in ("total", "report files")]
        assert {rule: int(rows[rule][0].split("/")[1]) for rule in stages} == {r: planned[r] for r in stages}
        # every other planned rule is a report rule (or all): none is missing from status
        assert set(planned) - set(stages) - {"total", "all"} <= {"collect", "chance", "table1", "table_beir", "norms_report",
                                                                 "tradeoff", "loss_curves", "claims"} | {
            r for r in planned if r.startswith("html_")}
        done, total = map(int, rows["total"][0].split("/"))
        # Snakemake's count also holds the report jobs that need no training (the chance levels)
        finished = re.findall(r"^Finished jobid: \d+ \(Rule: (\w+)\)", log.read_text(), re.M)
        assert len(finished) == _snakemake_done(log)
        assert done == sum(rule in stages for rule in finished) and total == sum(planned[r] for r in stages)
        # while training, the only reports made are the chance levels (chance.json and its manifest)
        early = [rule for rule in finished if rule not in stages]
        assert set(early) <= {"chance"}, early
        assert int(rows["train"][1]) >= 1 and rows["report files"][0].startswith(f"{2 * len(early)}/")
        assert proc.wait(timeout=900) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    finished = _status(cfg, work)
    print(finished)
    rows = _rows(finished)
    assert all(rows[r][0] == f"{planned[r]}/{planned[r]}" for r in stages)
    assert rows["total"][0] == f"{total}/{total}" and rows["report files"][0].split("/")[0] == \
        rows["report files"][0].split("/")[1]
    assert "no Snakemake running here (no lock)" in finished and finished.rstrip().endswith("all done")
    assert "running (" not in finished
