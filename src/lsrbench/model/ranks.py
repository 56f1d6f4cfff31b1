"""The processes of one data-parallel training run (torchrun's environment): how many, which one
this is, and agreement between them."""

from __future__ import annotations

import os

__all__ = ["training_processes", "world", "any_rank"]


def training_processes(setting: int | str | None) -> int:
    """How many processes train one run: ``auto`` (or None) means one per visible CUDA GPU."""
    if setting in (None, "auto"):
        import torch

        return max(1, torch.cuda.device_count()) if torch.cuda.is_available() else 1
    return max(1, int(setting))


def world() -> tuple[int, int]:
    """``(rank, world size)`` of this training process (torchrun's environment; ``(0, 1)`` alone)."""
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def any_rank(flag: bool) -> bool:
    """True when ``flag`` is true on any training process (a rank stopping alone would hang the others)."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return flag
    device = "cuda" if dist.get_backend() == "nccl" else "cpu"
    t = torch.tensor([1.0 if flag else 0.0], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item() > 0)
