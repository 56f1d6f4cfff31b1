"""Each job its own GPU(s): the lock-file claims of :mod:`lsrbench.pipeline.gpus`, tested on CPU with
simulated GPUs (LSRBENCH_GPU_COUNT) and real concurrent processes, and through the job runner as a
Snakemake job with ``resources: gpu=1`` reaches it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lsrbench.pipeline.gpus import claim_gpus, gpu_pool

HOLDER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from lsrbench.pipeline.gpus import claim_gpus
    got = claim_gpus(int(sys.argv[1]), poll_seconds=0.05)
    Path(sys.argv[2]).write_text(os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>") + "\\n")
    while not Path(sys.argv[3]).exists():  # hold the claim until told to exit
        time.sleep(0.05)
""")


def _env(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "SLURM_JOB_ID")}
    return {**env, "LSRBENCH_GPU_LOCK_DIR": str(tmp_path / "locks"), "LSRBENCH_GPU_COUNT": "4", **extra}


def _start(tmp_path, name, n, env):
    out, stop = tmp_path / f"{name}.out", tmp_path / f"{name}.stop"
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(n), str(out), str(stop)], env=env)
    return proc, out, stop


def _wait(path: Path, seconds: float = 60) -> str:
    end = time.time() + seconds
    while time.time() < end:
        if path.exists() and path.read_text().endswith("\n"):
            return path.read_text().strip()
        time.sleep(0.05)
    raise AssertionError(f"{path} never written")


def test_parallel_jobs_get_disjoint_gpus_and_a_freed_one_is_reused(tmp_path):
    env = _env(tmp_path)
    jobs = [_start(tmp_path, f"j{i}", n, env) for i, n in enumerate([1, 2, 1])]
    try:
        seen = [_wait(out).split(",") for _, out, _ in jobs]
        assert sorted(d for devices in seen for d in devices) == ["0", "1", "2", "3"]  # 1 + 2 + 1, no overlap
        assert [len(s) for s in seen] == [1, 2, 1]
        waiting = _start(tmp_path, "late", 1, env)  # all four are taken: it waits
        time.sleep(0.5)
        assert not waiting[1].exists()
        jobs[0][2].touch()  # the first job ends: its GPU is free again
        jobs[0][0].wait(30)
        assert _wait(waiting[1]) == seen[0][0]
        jobs.append(waiting)
    finally:
        for proc, _, stop in jobs:
            stop.touch()
        for proc, _, _ in jobs:
            proc.wait(30)


def test_killed_job_releases_its_gpu(tmp_path):
    env = _env(tmp_path, LSRBENCH_GPU_COUNT="1")
    proc, out, stop = _start(tmp_path, "a", 1, env)
    assert _wait(out) == "0"
    proc.kill()
    proc.wait(30)
    proc2, out2, stop2 = _start(tmp_path, "b", 1, env)
    try:
        assert _wait(out2) == "0"
    finally:
        stop2.touch()
        proc2.wait(30)


def test_pool_from_cuda_visible_devices_and_slurm_kept(tmp_path):
    env = _env(tmp_path, CUDA_VISIBLE_DEVICES="5,7")
    assert gpu_pool(env) == ["5", "7"]
    assert claim_gpus(1, env) == ["5"] and env["CUDA_VISIBLE_DEVICES"] == "5"
    other = _env(tmp_path, CUDA_VISIBLE_DEVICES="5,7")
    assert claim_gpus(1, other) == ["7"]  # 5 is held by this process's first claim
    slurm = {"SLURM_JOB_ID": "12", "CUDA_VISIBLE_DEVICES": "3", "LSRBENCH_GPU_LOCK_DIR": str(tmp_path / "l2")}
    assert claim_gpus(1, slurm) is None and slurm["CUDA_VISIBLE_DEVICES"] == "3"
    assert claim_gpus(0, _env(tmp_path)) is None
    with pytest.raises(RuntimeError, match="asks for 5 GPUs, this machine has 4"):
        claim_gpus(5, _env(tmp_path))
    none = {k: v for k, v in _env(tmp_path).items() if k != "LSRBENCH_GPU_COUNT"}
    if not Path("/proc/driver/nvidia/gpus").is_dir():
        assert claim_gpus(1, none) is None and "CUDA_VISIBLE_DEVICES" not in none


def test_the_job_runner_claims_the_gpus_a_job_requests(tmp_path):
    """A job of a rule with ``resources: gpu=1`` (train, index) runs with its own device visible, or,
    where torch has no GPU to use, stops before its function runs."""
    script = textwrap.dedent(f"""
        import json, os
        from types import SimpleNamespace
        from snakemake.iocontainers import Namedlist
        from lsrbench.pipeline.job_runner import run
        out = {str(tmp_path / "metrics.csv")!r}
        job = SimpleNamespace(threads=1, params=SimpleNamespace(stage="report_collect", settings={{}}),
                              input=Namedlist(fromdict={{"metric_files": []}}),
                              output=Namedlist(fromdict={{"metrics_csv": out, "sources_json": out + ".sources.json"}}), log=[],
                              resources=SimpleNamespace(gpu=1))
        run(job)
        print(json.dumps(os.environ.get("CUDA_VISIBLE_DEVICES")))
    """)
    proc = subprocess.run([sys.executable, "-c", script], env=_env(tmp_path, LSRBENCH_GPU_COUNT="2"),
                          capture_output=True, text=True)
    import torch

    if torch.cuda.is_available():
        assert proc.returncode == 0 and proc.stdout.strip().splitlines()[-1] == '"0"'
        assert (tmp_path / "metrics.csv").is_file()
        return
    # no usable GPU here (the simulated ones are locks only): the claim is made, then the job stops
    # in one line naming its claimed device, before its function runs (lsrbench.device)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("lsrbench: error:")]
    assert proc.returncode == 1 and len(errors) == 1, proc.stderr[-2000:]
    assert "use_gpu: true, but node" in errors[0] and "CUDA_VISIBLE_DEVICES '0'" in errors[0]
    assert not (tmp_path / "metrics.csv").exists()
