"""Resumable training: the trainer state saved every ``checkpoint_steps`` beside a run's outputs, keyed by what
determines the trajectory."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sys
from pathlib import Path

from lsrbench.atomic import keyed_dir
from lsrbench.hashing import sha256_texts, stable_hash

log = logging.getLogger(__name__)

__all__ = ["CHECKPOINT_LOG", "CHECKPOINT_KEY", "CHECKPOINT_RE", "training_key", "prepare_checkpoints",
           "complete_checkpoints", "checkpoint_step", "discard_checkpoints", "checkpoint_problem"]

# Written last into ``checkpoint-N/``: a checkpoint without it was cut short and is never resumed from.
CHECKPOINT_LOG = "lsrbench_train_log.jsonl"
CHECKPOINT_KEY = "lsrbench_run.json"
CHECKPOINT_RE = re.compile(r"^checkpoint-(\d+)$")


def training_key(model_path: str, triplets: list[dict], recipe: dict, k: float, mode: str, head_scale: float,
                  revision: str | None, head_scale_mode: str = "shared") -> str:
    """What a checkpoint must match to be resumed from (not ``checkpoint_steps`` or ``report_to``)."""
    texts = [json.dumps([t["query"], t["positive"], t["negative"]]) for t in triplets]
    obj = {"model_path": str(model_path), "revision": revision, "k": float(k), "mode": mode,
           "head_scale": float(head_scale), "triplets_sha256": sha256_texts(range(len(texts)), texts),
           "recipe": {key: v for key, v in recipe.items() if key not in ("checkpoint_steps", "report_to")}}
    if head_scale_mode != "shared":  # a matched head scaled alone; the keys of every other run as they were
        obj["head_scale_mode"] = head_scale_mode
    return stable_hash(obj)


def prepare_checkpoints(checkpoint_dir: str | os.PathLike, key: str) -> Path | None:
    """Keep only complete checkpoints of run ``key`` in ``checkpoint_dir`` and return the latest readable one; an
    unreadable one is renamed ``.damaged``."""
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
    complete.sort(reverse=True)
    for i, (_, child) in enumerate(complete):
        problem = checkpoint_problem(child)
        if problem is None:
            return child
        _set_aside(child, problem, complete[i + 1][1] if i + 1 < len(complete) else None)
    return None


def checkpoint_problem(folder: str | os.PathLike) -> str | None:
    """Why a complete-looking checkpoint is unreadable (a cut safetensors or torch file, bad JSON), or None."""
    import zipfile

    from lsrbench.model.weights_header import safetensors_problem

    for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
        name = path.relative_to(folder)
        if path.suffix == ".safetensors":
            problem = safetensors_problem(path)
            if problem:
                return f"{name}: {problem}"
        elif path.suffix in (".pt", ".pth", ".bin"):
            try:
                with zipfile.ZipFile(path) as archive:
                    bad = archive.testzip()
            except (zipfile.BadZipFile, OSError, EOFError) as exc:
                return f"{name}: not a whole torch file ({exc})"
            if bad is not None:
                return f"{name}: damaged (its member {bad} fails its CRC)"
        elif path.suffix == ".json":
            try:
                json.loads(path.read_text(encoding="utf-8"))
            except (ValueError, OSError) as exc:
                return f"{name}: not readable JSON ({exc})"
    return None


DAMAGED_SUFFIX = ".damaged"


def _set_aside(folder: Path, problem: str, fallback: Path | None) -> None:
    """Rename a damaged checkpoint out of the way (kept, for a look; never resumed from), said in one line."""
    aside = folder.with_name(folder.name + DAMAGED_SUFFIX)
    n = 1
    while aside.exists():
        n += 1
        aside = folder.with_name(f"{folder.name}{DAMAGED_SUFFIX}{n}")
    folder.rename(aside)
    then = (f"training resumes from {fallback.name}, the last whole one" if fallback is not None
            else "no whole checkpoint is left: training restarts from step 0")
    line = f"{folder}: damaged checkpoint ({problem}): set aside as {aside.name}; {then}"
    log.warning("%s", line)
    print(f"lsrbench: note: {line}", file=sys.stderr)


def discard_checkpoints(checkpoint_dir: str | os.PathLike) -> None:
    """Remove a finished run's checkpoints, keeping any set aside as damaged."""
    root = Path(checkpoint_dir)
    if not any(root.glob(f"*{DAMAGED_SUFFIX}*")):
        shutil.rmtree(root, ignore_errors=True)
        return
    for child in root.iterdir():
        if DAMAGED_SUFFIX in child.name:
            continue
        if child.is_dir():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


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
