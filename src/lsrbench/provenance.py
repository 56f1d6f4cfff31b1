"""What produced an artifact: config hash, package versions, seed, device, code revision."""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import json
import platform
import socket
import subprocess
from pathlib import Path

from .atomic import atomic_open

PACKAGES = (
    "lsrbench", "torch", "transformers", "sentence-transformers", "tokenizers", "accelerate",
    "numpy", "scipy", "ir-measures", "ir-datasets", "bm25s", "pandas", "snakemake",
)


def package_versions() -> dict[str, str | None]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def device_description() -> dict:
    import torch

    info = {"cpu": platform.processor() or platform.machine(), "torch_threads": torch.get_num_threads()}
    if torch.cuda.is_available():
        info["cuda"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return info


def git_commit() -> str | None:
    try:
        root = Path(__file__).resolve().parents[2]
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def provenance(stage: str, config_hash: str, seed: int | None = None, **extra) -> dict:
    """A provenance record for one stage's outputs."""
    return {
        "stage": stage,
        "config_hash": config_hash,
        "seed": seed,
        "packages": package_versions(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "device": device_description(),
        "git_commit": git_commit(),
        "host": socket.gethostname(),
        "finished_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        **extra,
    }


def write_json(path, obj) -> None:
    with atomic_open(path, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, indent=2, sort_keys=True, default=str)
        fh.write("\n")
