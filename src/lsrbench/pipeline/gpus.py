"""Each job its own GPU(s) on a multi-GPU machine. Written here because neither Snakemake nor its executors assign
devices on a local machine."""

from __future__ import annotations

import fcntl
import logging
import os
import tempfile
import time
from pathlib import Path

log = logging.getLogger(__name__)

__all__ = ["claim_gpus", "gpu_pool", "LOCK_DIR_ENV", "COUNT_ENV"]

LOCK_DIR_ENV = "LSRBENCH_GPU_LOCK_DIR"
COUNT_ENV = "LSRBENCH_GPU_COUNT"
_held: list = []  # the open lock files of this process's claim


def gpu_pool(env=os.environ) -> list[str]:
    """The device ids a job may claim from (see the module docstring)."""
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [d.strip() for d in visible.split(",") if d.strip() and d.strip() != "-1"]
    if env.get(COUNT_ENV):
        return [str(i) for i in range(int(env[COUNT_ENV]))]
    nvidia = Path("/proc/driver/nvidia/gpus")
    return [str(i) for i in range(len(list(nvidia.iterdir())))] if nvidia.is_dir() else []


def _lock_dir(env) -> Path:
    path = Path(env.get(LOCK_DIR_ENV) or Path(tempfile.gettempdir()) / f"lsrbench-gpus-{os.getuid()}")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _try_claim(pool: list[str], n: int, folder: Path) -> list:
    got = []
    for device in pool:
        fh = open(folder / f"gpu-{device}.lock", "a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            continue
        got.append((device, fh))
        if len(got) == n:
            return got
    for _, fh in got:  # not enough free: claim none, try again later
        fh.close()
    return []


def claim_gpus(n: int, env=os.environ, poll_seconds: float = 2.0, timeout: float | None = None) -> list[str] | None:
    """Claim ``n`` free GPUs of the pool for this process and set ``env["CUDA_VISIBLE_DEVICES"]`` to them; waits
    while fewer are free."""
    if n <= 0 or (env.get("SLURM_JOB_ID") and env.get("CUDA_VISIBLE_DEVICES") is not None):
        return None
    pool = gpu_pool(env)
    if not pool:
        return None
    if n > len(pool):
        raise RuntimeError(f"a job asks for {n} GPUs, this machine has {len(pool)} ({','.join(pool)})")
    folder, start = _lock_dir(env), time.monotonic()
    while not (got := _try_claim(pool, n, folder)):
        if timeout is not None and time.monotonic() - start > timeout:
            raise TimeoutError(f"no {n} free GPUs of {','.join(pool)} within {timeout} s")
        time.sleep(poll_seconds)
    _held.extend(fh for _, fh in got)
    devices = [d for d, _ in got]
    env["CUDA_VISIBLE_DEVICES"] = ",".join(devices)
    log.info("GPUs %s claimed for this job (pool %s)", ",".join(devices), ",".join(pool))
    return devices
