"""The one device choice (lsrbench.device): a job that asked for a GPU and finds none stops in one line
naming the node, torch's CUDA build, the driver and what to do; the driver branch a CUDA build needs;
a CPU job stays on the CPU."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys

from helpers.paths import REPO
from lsrbench.device import DEVICE_ENV, DRIVER_BRANCH_FOR_CUDA, driver_problem, model_device, select_job_device


def _stack(cuda_build, driver):
    return {"node": "n1", "torch": "2.13.0", "cuda_build": cuda_build, "driver": driver, "driver_source": "test",
            "visible": None, "cuda_available": False, "devices": []}


def test_the_driver_branch_each_cuda_build_needs():
    assert driver_problem(_stack("13.0", "580.65.06")) is None
    assert driver_problem(_stack("13.0", "535.104.05")) == (
        "driver 535.104.05 is older than R580, which torch's CUDA 13.0 build needs")
    assert driver_problem(_stack("12.4", "535.104.05")) is None
    assert driver_problem(_stack("12.4", "520.61.05")) == (
        "driver 520.61.05 is older than R525, which torch's CUDA 12.4 build needs")
    assert driver_problem(_stack(None, "580.65.06")) == "this torch is a CPU-only build"
    assert driver_problem(_stack("13.0", None)) == "no NVIDIA driver answers"


def test_the_cuda_lock_is_the_build_whose_driver_branch_preflight_names():
    """The lock's CUDA runtime wheel is CUDA 13, so the driver branch said everywhere is R580."""
    lock = (REPO / "envs" / "requirements-cuda.lock").read_text()
    runtime = re.search(r"^nvidia-cuda-runtime==(\d+)\.", lock, re.M)
    assert runtime and runtime.group(1) == "13" and DRIVER_BRANCH_FOR_CUDA["13"] == 580
    assert "R580" in (REPO / "README.md").read_text()


def test_a_gpu_job_without_a_usable_gpu_is_one_line(tmp_path):
    """No device visible (CUDA_VISIBLE_DEVICES empty: a node whose GPUs are taken or broken, as on
    this CPU machine): the job's device choice raises the one line, on any machine."""
    script = ("from lsrbench.device import select_job_device\n"
              "from lsrbench.errors import OneLineError\n"
              "try:\n    select_job_device(1, 'my.yaml')\n"
              "except OneLineError as exc:\n    print('LINE', exc)\n")
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    env.pop(DEVICE_ENV, None)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True).stdout
    line = next(x for x in out.splitlines() if x.startswith("LINE "))[5:]
    import torch

    assert line.startswith(f"my.yaml: use_gpu: true, but node {socket.gethostname()} has no usable GPU for this job: ")
    assert f"torch {torch.__version__}, torch.version.cuda {torch.version.cuda}; driver" in line
    assert "CUDA_VISIBLE_DEVICES ''" in line
    assert line.endswith("an NVIDIA driver of branch R580 or newer, or set use_gpu: false to run on the CPU")
    assert "\n" not in line


def test_a_cpu_job_stays_on_the_cpu(monkeypatch):
    """use_gpu: false asks for the CPU: chosen, and kept for this process and its children."""
    monkeypatch.delenv(DEVICE_ENV, raising=False)
    assert select_job_device(0) == "cpu"
    assert os.environ[DEVICE_ENV] == "cpu" and model_device() == "cpu"


def test_a_model_job_of_a_gpu_config_given_no_gpu_by_its_profile_stops(tmp_path):
    """use_gpu: true, but a profile set the job's gpu resource to 0 (a SLURM profile's train_gpus: 0):
    the job stops before its function runs instead of training on the CPU."""
    import textwrap

    script = textwrap.dedent(f"""
        from types import SimpleNamespace
        from snakemake.iocontainers import Namedlist
        from lsrbench.pipeline.job_runner import run
        out = {str(tmp_path / "metrics.csv")!r}
        job = SimpleNamespace(threads=1, params=SimpleNamespace(stage="report_collect", settings={{}}, use_gpu=True,
                                                                runtime={{"config_file": "my.yaml"}}),
                              input=Namedlist(fromdict={{"metric_files": []}}),
                              output=Namedlist(fromdict={{"metrics_csv": out, "sources_json": out + ".sources.json"}}),
                              log=[], resources=SimpleNamespace(gpu=0))
        run(job)
    """)
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("lsrbench: error:")]
    assert proc.returncode == 1 and len(errors) == 1, proc.stderr[-2000:]
    assert errors[0].startswith("lsrbench: error: my.yaml: use_gpu: true, but node ")
    assert not (tmp_path / "metrics.csv").exists()
