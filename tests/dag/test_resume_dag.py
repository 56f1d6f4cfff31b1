"""Resume through Snakemake: the whole Snakemake process group is SIGKILLed while a train job runs;
after ``--unlock`` the same command resumes that job from its latest complete checkpoint (kept
beside the outputs, where Snakemake does not delete it), and the per-step log has every step once.
(Bit-identity with an uninterrupted run is tested on the training function in test_resume.py.)"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

import pytest

from helpers.snakemake import SNAKEMAKE, micro_config, train_dir

pytestmark = pytest.mark.slow
STEPS = 100


def _long_training(tmp_path, vaswani_slice, tiny_roberta):
    """The micro config trained for STEPS steps with a checkpoint every 5, its work folder, the
    training's folder and the snakemake command that makes it."""
    cfg = micro_config(tmp_path, vaswani_slice, tiny_roberta, steps=STEPS, checkpoint_steps=5)
    work = tmp_path / "work"
    work.mkdir()
    run_dir = train_dir(work, cfg, "rand-roberta", "1")
    cmd = [*SNAKEMAKE, str((run_dir / "train_log.jsonl").relative_to(work)), "--cores", "2", "-d", str(work),
           "--configfile", str(cfg)]
    return cfg, work, run_dir, cmd


def test_snakemake_killed_mid_training_resumes_from_checkpoint(tmp_path, vaswani_slice, tiny_roberta):
    cfg, work, run_dir, cmd = _long_training(tmp_path, vaswani_slice, tiny_roberta)

    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        done = [p for p in run_dir.glob("checkpoints/checkpoint-*") if (p / "lsrbench_train_log.jsonl").is_file()]
        if any(int(p.name.split("-")[1]) >= 10 for p in done):
            break
        time.sleep(0.05)
    assert proc.poll() is None, "training finished before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (run_dir / "train_log.jsonl").exists() and not (run_dir / "model").exists()
    steps = [int(p.name.split("-")[1]) for p in run_dir.glob("checkpoints/checkpoint-*")
             if (p / "lsrbench_train_log.jsonl").is_file()]
    assert steps and max(steps) < STEPS

    subprocess.run([*cmd, "--unlock"], capture_output=True, check=True)
    rerun = subprocess.run([*cmd, "--rerun-incomplete"], capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    summary = json.loads((run_dir / "train_provenance.json").read_text())["summary"]
    assert summary["resumed_from_step"] == max(steps)
    log = [json.loads(line)["step"] for line in (run_dir / "train_log.jsonl").read_text().splitlines()]
    assert log == list(range(1, STEPS + 1))
    assert not (run_dir / "checkpoints").exists()  # removed once the outputs exist
    assert re.search(r"resuming from .*checkpoint-\d+", (run_dir / "train.log").read_text())


def test_ctrl_c_ends_each_job_with_one_line_and_the_run_resumes(tmp_path, vaswani_slice, tiny_roberta):
    """Ctrl-C (SIGINT to Snakemake's process group, as a terminal sends it) while both trainings run:
    each job ends with one line saying what it keeps and how to go on, no traceback (before: a
    40-line KeyboardInterrupt traceback per job); the same command then resumes from the saved
    checkpoint and finishes."""
    cfg, work, run_dir, cmd = _long_training(tmp_path, vaswani_slice, tiny_roberta)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if any((p / "lsrbench_train_log.jsonl").is_file() for p in run_dir.glob("checkpoints/checkpoint-*")):
            break
        time.sleep(0.05)
    assert proc.poll() is None, "training finished before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0 and "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    lines = [line for line in err.splitlines() if line.startswith("lsrbench: interrupted: ")]
    assert len(lines) == 1, err[-3000:]
    saved = re.fullmatch(rf"lsrbench: interrupted: {re.escape(str(run_dir.relative_to(work)))}: its checkpoint of step "
                         r"(\d+) is saved \(.*checkpoint-\d+\), training resumes from it; run the same command again "
                         r"to go on", lines[0])
    assert saved, lines[0]
    rerun = subprocess.run(cmd, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    summary = json.loads((run_dir / "train_provenance.json").read_text())["summary"]
    assert summary["resumed_from_step"] >= int(saved.group(1))
    log = [json.loads(line)["step"] for line in (run_dir / "train_log.jsonl").read_text().splitlines()]
    assert log == list(range(1, STEPS + 1))
