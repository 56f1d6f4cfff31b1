"""The one choice of the device a model runs on: a job that asked for a GPU gets one or stops in one line before
loading a model (never a silent CPU fallback); one that did not runs on the CPU."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

from lsrbench.errors import InputError

__all__ = ["DEVICE_ENV", "DRIVER_BRANCH_FOR_CUDA", "model_device", "select_job_device", "require_gpu", "gpu_stack", "describe_stack",
           "driver_version", "driver_problem"]

DEVICE_ENV = "LSRBENCH_DEVICE"
# The oldest NVIDIA driver branch per CUDA major (12.x: R525, 13.x: R580); the lock's torch wheels are CUDA 13.
DRIVER_BRANCH_FOR_CUDA = {"12": 525, "13": 580}
LOCK = "envs/requirements-cuda.lock"


def model_device() -> str:
    """``cuda`` or ``cpu``: the job runner's choice, else a GPU when one is usable."""
    import torch

    chosen = os.environ.get(DEVICE_ENV)
    if chosen == "cuda":
        require_gpu()
        return "cuda"
    if chosen == "cpu":
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def select_job_device(gpus: int, config_file: str | None = None) -> str:
    """The job runner's device for a job of ``gpus`` GPUs, checked now and recorded for this process and its
    children."""
    device = "cuda" if gpus > 0 else "cpu"
    os.environ[DEVICE_ENV] = device
    if device == "cuda":
        require_gpu(config_file)
    return device


def require_gpu(config_file: str | None = None) -> None:
    """Nothing when torch can use a CUDA GPU; else an InputError on ``use_gpu`` naming node, devices, CUDA
    build, driver and what to do."""
    import torch

    if torch.cuda.is_available():
        return
    stack = gpu_stack()
    problem = driver_problem(stack) or "torch sees no CUDA device"
    raise InputError(config_file or "the config", "use_gpu", (
        f"true, but node {stack['node']} has no usable GPU for this job: {problem} ({describe_stack(stack)}); run "
        f"it on a GPU node with {LOCK} installed and an NVIDIA driver of branch R{_branch_needed(stack) or 580} or "
        "newer, or set use_gpu: false to run on the CPU"))


def describe_stack(stack: dict) -> str:
    """``torch 2.13.0, torch.version.cuda 13.0; driver 580.65.06 (nvidia-smi); CUDA_VISIBLE_DEVICES=0``."""
    driver = f"driver {stack['driver']} ({stack['driver_source']})" if stack["driver"] else \
        f"driver: none answers ({stack['driver_source']})"
    visible = "unset" if stack["visible"] is None else repr(stack["visible"])
    return f"torch {stack['torch']}, torch.version.cuda {stack['cuda_build']}; {driver}; CUDA_VISIBLE_DEVICES {visible}"


def gpu_stack() -> dict:
    """This node's GPU stack: hostname, torch and its CUDA build, the driver, the visible devices."""
    import torch

    version, source = driver_version()
    return {"node": socket.gethostname(), "torch": torch.__version__, "cuda_build": torch.version.cuda,
            "driver": version, "driver_source": source, "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "cuda_available": torch.cuda.is_available(),
            "devices": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
            if torch.cuda.is_available() else []}


def driver_version() -> tuple[str | None, str]:
    """The NVIDIA driver's version and where it was read (the kernel module's
    ``/proc/driver/nvidia/version``, else ``nvidia-smi``), or None and why none answers."""
    proc_file = Path("/proc/driver/nvidia/version")
    if proc_file.is_file():
        for word in proc_file.read_text(errors="replace").split():
            if word[:1].isdigit() and word.count(".") >= 1:
                return word, str(proc_file)
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None, "no NVIDIA kernel module (/proc/driver/nvidia) and no nvidia-smi on PATH"
    try:
        out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"nvidia-smi failed ({type(exc).__name__})"
    first = out.stdout.strip().splitlines()[:1]
    if out.returncode != 0 or not first:
        return None, f"nvidia-smi answers: {' '.join((out.stdout + out.stderr).split())[:160] or out.returncode}"
    return first[0].strip(), "nvidia-smi"


def driver_problem(stack: dict) -> str | None:
    """Why torch's build and this driver cannot run together (None when nothing says so)."""
    if stack["cuda_build"] is None:
        return "this torch is a CPU-only build"
    if stack["driver"] is None:
        return "no NVIDIA driver answers"
    needed = _branch_needed(stack)
    try:
        branch = int(stack["driver"].split(".")[0])
    except ValueError:
        return None
    if needed and branch < needed:
        return (f"driver {stack['driver']} is older than R{needed}, which torch's CUDA {stack['cuda_build']} "
                "build needs")
    return None


def _branch_needed(stack: dict) -> int | None:
    return DRIVER_BRANCH_FOR_CUDA.get(str(stack["cuda_build"] or "").split(".")[0])
