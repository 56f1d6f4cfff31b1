"""Data-parallel training of one run: the train stage re-runs itself in ``n`` torchrun processes, each entering
here with ``CALL.json`` (the stage function and its arguments)."""

from __future__ import annotations

import importlib
import json
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["run_distributed", "main"]


def run_distributed(n: int, function: str, kwargs: dict, status_path: str) -> dict:
    """Run ``function(**kwargs)`` in ``n`` torchrun processes, each with its share of the job's threads; returns
    the status the main process wrote."""
    from lsrbench.progress import log_file

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as fh:
        # the processes log (progress lines included) into this job's log file
        json.dump({"function": function, "kwargs": kwargs, "log_file": log_file()}, fh)
    env = dict(os.environ)
    threads = max(1, int(env.get("OMP_NUM_THREADS") or os.cpu_count() or 1) // n)
    env.update({var: str(threads) for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")})
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={n}",
           "-m", "lsrbench.stages.distributed", fh.name]
    try:
        proc = subprocess.run(cmd, env=env)
    finally:
        os.unlink(fh.name)
    if proc.returncode != 0:
        raise RuntimeError(f"distributed training ({n} processes) failed with exit code {proc.returncode}")
    return json.loads(Path(status_path).read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0], encoding="utf-8") as fh:
        call = json.load(fh)
    module, name = call["function"].split(":")
    if call.get("log_file"):
        from lsrbench.progress import log_to_file

        log_to_file(call["log_file"])
    else:
        logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    getattr(importlib.import_module(module), name)(**call["kwargs"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
