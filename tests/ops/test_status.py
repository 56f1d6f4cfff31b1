"""``lsrbench status`` on a hand-made working directory: Snakemake's own records written with
Snakemake's own file persistence (snakemake.persistence.file), so the reading is checked against
the writer, not against a copy of its encoding."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from snakemake.persistence import MetadataRecord
from snakemake.persistence.file import FilePersistence

from helpers.snakemake import micro_config, toy_inputs
from lsrbench.cli import main
from lsrbench.dag.fingerprint import FileDigests
from lsrbench.report.reports import report_outputs
from lsrbench.ops.gc import config_layout
from lsrbench.ops.status import read_status, status_text
from lsrbench.progress import LOG_DATEFMT

NOW = 1_800_000_000.0


def _stamp(when: float) -> str:
    return time.strftime(LOG_DATEFMT, time.gmtime(when)) + "Z"


def _finish(work: Path, job, persistence: FilePersistence, seconds: float) -> None:
    """Every output of ``job`` on disk, and Snakemake's metadata record of each (start, end)."""
    for out in job.outputs:
        path = work / out
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir() if out.endswith(("/full", "/model")) else path.write_text("{}")
        persistence._write_record(out, MetadataRecord(rule=job.rule, starttime=NOW - 100, endtime=NOW - 100 + seconds))


@pytest.fixture
def grid(tmp_path):
    """A micro config and its working directory: the dataset done (10 s), training k=1 running as
    SLURM job 4242 with a progress line 5 s old (ETA 20 s then), training k=1e-30 stopped (a log,
    no outputs, no marker), the rest pending."""
    config = micro_config(tmp_path, *toy_inputs(tmp_path))
    work = tmp_path / "work"
    work.mkdir()
    layout = config_layout([str(config)], None, "results", FileDigests(None))
    status = read_status(layout, work, [str(config)], [])
    jobs = {(j.rule, j.key.get("k")): j for j in status.jobs}
    persistence = FilePersistence(path=work / ".snakemake")
    _finish(work, jobs["dataset", None], persistence, 10.0)
    running, stopped = jobs["train", "1"], jobs["train", "1e-30"]
    for job in (running, stopped):
        (work / job.log).parent.mkdir(parents=True, exist_ok=True)
    (work / running.log).write_text(
        f"{_stamp(NOW - 30)} INFO lsrbench.job: train: reading triplets\n"
        f"{_stamp(NOW - 5)} INFO lsrbench.model.train_log: train: 1/3 steps (33%) loss 1.949 | 0.1 steps/s | "
        f"elapsed 10s | ETA 20s\n{_stamp(NOW - 1)} INFO transformers: saving checkpoint\n")
    (work / stopped.log).write_text(f"{_stamp(NOW - 50)} ERROR lsrbench.job: train: out of memory\n")
    persistence._mark_incomplete(running.outputs[0], "4242")
    persistence._write_locks("output", running.outputs)
    return {"config": config, "work": work, "layout": layout, "persistence": persistence, "running": running}


def test_running_job_progress_counts_and_eta(grid, tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"backbones": {"rand-roberta": {"index_jobs": 2, "index_hours": 60 / 3600,
                                                               "evaluate_jobs": 2, "evaluate_hours": None}}}))
    reports = report_outputs(grid["layout"].config, "results")
    status = read_status(grid["layout"], grid["work"], ["c.yaml"], reports, json.loads(plan.read_text()), now=NOW)
    states = {(j.rule, j.key.get("k")): j.state for j in status.jobs}
    assert states[("dataset", None)] == "done" and states[("train", "1")] == "running"
    assert states[("train", "1e-30")] == "stopped" and states[("index", "1")] == "pending"
    by_rule = {j.rule: j for j in status.jobs if j.state == "done"}
    assert by_rule["dataset"].seconds == 10.0
    train = next(j for j in status.jobs if j.state == "running")
    # its own line: ETA 20 s when written 5 s ago; the stopped training: 3 steps at the running one's 0.1 steps/s
    assert train.estimate == 15.0 and train.estimate_from == "its progress line" and train.external_jobid == "4242"
    left = {(j.rule, j.key.get("k")): (j.estimate, j.estimate_from) for j in status.jobs if j.state != "done"}
    assert left[("train", "1e-30")] == (30.0, "measured steps/s (train)")
    assert left[("index", "1")] == (30.0, "lsrbench plan")  # 60 s for the plan's 2 index jobs
    assert left[("evaluate", "1")] == (None, "")
    text = status_text(status)
    assert "running (1):\n  train run=rand-roberta k=1 [job 4242] for " in text
    assert "    train: 1/3 steps (33%) loss 1.949 | 0.1 steps/s | elapsed 10s | ETA 20s (5s ago)\n" in text
    assert "stopped without finishing (failed or killed: see the log) (1):" in text and "out of memory" in text
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| rule")}
    assert rows["dataset"] == ["1/1", "0", "10s"] and rows["train"] == ["0/2", "1", "-"]
    assert rows["total"][0] == "1/11" and rows["report files"][0] == f"0/{len(reports)}"
    # 15 + 30 + 2 x 30 s (index) of job time, one job running now; evaluate, norm, ... not estimated
    assert "ETA ~1m45s: 1m45s of job time left in 4 of 10 jobs not done, at 1 job(s) at a time" in text


def test_cli_marker_without_lock_is_an_interrupted_job(grid, capsys):
    args = ["status", "--configfile", str(grid["config"]), "--results", str(grid["work"] / "results")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Snakemake running here" in out and "train run=rand-roberta k=1 [job 4242]" in out
    grid["persistence"]._delete_locks()
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "no Snakemake running here (no lock)" in out
    assert "marked incomplete, no Snakemake running (interrupted; --rerun-incomplete re-runs them) (1):" in out
    assert not list((grid["work"] / "results").rglob("file-digests.json"))  # status writes nothing


def test_cli_bad_plan_file_is_one_line(grid, tmp_path, capsys):
    (tmp_path / "bad.json").write_text("[1, 2]")
    assert main(["status", "--configfile", str(grid["config"]), "--results", str(grid["work"] / "results"),
                 "--plan", str(tmp_path / "bad.json")]) != 0
    err = capsys.readouterr().err.strip()
    assert err == f"lsrbench: error: {tmp_path / 'bad.json'}: backbones: missing: not a plan of lsrbench plan --json FILE"


def test_cli_watch_prints_again_until_interrupted(grid, capsys, monkeypatch):
    import lsrbench.ops.status as status

    sleeps = []

    def sleep(seconds):
        sleeps.append(seconds)
        if len(sleeps) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(status.time, "sleep", sleep)
    assert main(["status", "--configfile", str(grid["config"]), "--results", str(grid["work"] / "results"), "--watch", "2.5"]) == 0
    assert sleeps == [2.5, 2.5] and capsys.readouterr().out.count("lsrbench status: ") == 2
    assert main(["status", "--watch", "0"]) == 2  # one line (lsrbench.cli_errors.OneLineParser)
    assert "--watch: '0': expected a number of seconds above 0" in capsys.readouterr().err
