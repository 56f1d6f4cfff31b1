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
import yaml

from helpers.snakemake import SNAKEMAKE, micro_config, train_dir

pytestmark = pytest.mark.slow
STEPS = 100


def test_snakemake_killed_mid_training_resumes_from_checkpoint(tmp_path, vaswani_slice, tiny_roberta):
    cfg = micro_config(tmp_path, vaswani_slice, tiny_roberta)
    config = yaml.safe_load(cfg.read_text())
    config["recipe"].update(steps=STEPS, checkpoint_steps=5)
    cfg.write_text(yaml.safe_dump(config, sort_keys=False))
    work = tmp_path / "work"
    work.mkdir()
    run_dir = train_dir(work, cfg, "rand-roberta", "1")
    cmd = [*SNAKEMAKE, str((run_dir / "train_log.jsonl").relative_to(work)), "--cores", "2", "-d", str(work),
           "--configfile", str(cfg)]

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
