"""Resumable training: the full trainer state saved every ``checkpoint_steps`` steps beside a run's
outputs (not a Snakemake output, so a failed job's checkpoints survive), keyed by everything that
determines the training trajectory, so that a restarted job resumes only its own run."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from pathlib import Path

from lsrbench.atomic import keyed_dir
from lsrbench.hashing import sha256_texts, stable_hash

log = logging.getLogger(__name__)

__all__ = ["CHECKPOINT_LOG", "CHECKPOINT_KEY", "CHECKPOINT_RE", "training_key", "prepare_checkpoints",
           "complete_checkpoints", "checkpoint_step", "discard_checkpoints"]

# Written into ``checkpoint-N/`` (atomically) once the trainer has finished saving everything of
# that checkpoint: the per-step log up to step N. A checkpoint folder without it was cut short
# (a job killed mid-save) and is never resumed from.
CHECKPOINT_LOG = "lsrbench_train_log.jsonl"
# In the checkpoint folder: the key of the training run the checkpoints belong to.
CHECKPOINT_KEY = "lsrbench_run.json"
CHECKPOINT_RE = re.compile(r"^checkpoint-(\d+)$")


def training_key(model_path: str, triplets: list[dict], recipe: dict, k: float, mode: str, head_scale: float,
                  revision: str | None, head_scale_mode: str = "shared") -> str:
    """What a checkpoint must match to be resumed from: everything that determines the training
    trajectory (``checkpoint_steps`` only says how often it is saved, ``report_to`` where the
    trainer also reports: both are left out)."""
    texts = [json.dumps([t["query"], t["positive"], t["negative"]]) for t in triplets]
    obj = {"model_path": str(model_path), "revision": revision, "k": float(k), "mode": mode,
           "head_scale": float(head_scale), "triplets_sha256": sha256_texts(range(len(texts)), texts),
           "recipe": {key: v for key, v in recipe.items() if key not in ("checkpoint_steps", "report_to")}}
    if head_scale_mode != "shared":  # a matched head scaled alone; the keys of every other run as they were
        obj["head_scale_mode"] = head_scale_mode
    return stable_hash(obj)


def prepare_checkpoints(checkpoint_dir: str | os.PathLike, key: str) -> Path | None:
    """Make ``checkpoint_dir`` hold only checkpoints of the training run ``key``; return the latest
    complete one (or None).

    Checkpoints of another run (the recipe, data or model changed) are deleted, and so is any
    checkpoint folder without its completion mark (written last, see :data:`CHECKPOINT_LOG`).
    """
    complete: list[tuple[int, Path]] = []
    with keyed_dir(checkpoint_dir, CHECKPOINT_KEY, key) as (root, stale):
        for child in root.iterdir():
            m = CHECKPOINT_RE.match(child.name)
            if not child.is_dir() or not m:
                continue
            if stale or not (child / CHECKPOINT_LOG).is_file():
                log.warning("removing %s checkpoint %s", "stale" if stale else "incomplete", child)
                shutil.rmtree(child, ignore_errors=True)
            else:
                complete.append((int(m.group(1)), child))
    return max(complete)[1] if complete else None


def discard_checkpoints(checkpoint_dir: str | os.PathLike) -> None:
    """Remove a run's checkpoints once its outputs are all written (they are only for resuming)."""
    shutil.rmtree(checkpoint_dir, ignore_errors=True)


def complete_checkpoints(checkpoint_dir: str | os.PathLike) -> list[tuple[int, Path]]:
    """``(step, folder)`` of every complete checkpoint, oldest first."""
    root = Path(checkpoint_dir)
    if not root.is_dir():
        return []
    return sorted((int(m.group(1)), c) for c in root.iterdir()
                  if (m := CHECKPOINT_RE.match(c.name)) and (c / CHECKPOINT_LOG).is_file())


def checkpoint_step(folder: str | os.PathLike) -> int:
    """The step a checkpoint folder (``checkpoint-N``) was saved at."""
    return int(CHECKPOINT_RE.match(Path(folder).name).group(1))
