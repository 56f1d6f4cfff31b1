"""The per-step training log (``train_log.jsonl``): loss and its parts, regulariser weights, active dims, learning
rate, gradient norm; read only through :func:`read_train_log`. Progress lines go to the job's log."""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

from lsrbench.atomic import atomic_open
from lsrbench.model.resume import CHECKPOINT_LOG, CHECKPOINT_RE

log = logging.getLogger(__name__)

__all__ = ["train_log_callback", "train_progress_callback", "write_train_log", "read_train_log", "log_losses"]


def train_log_callback(splade_loss, rows: list[dict], live_path: Path | None):
    """The per-step log in ``rows``, mirrored to ``live_path`` and saved with every checkpoint."""
    from transformers import TrainerCallback

    class TrainLog(TrainerCallback):
        """One row per optimiser step: loss, its parts, regulariser weights, active dims."""

        def on_train_begin(self, args, state, control, **kwargs):
            self.live = None
            if live_path is not None and state.is_world_process_zero:
                self.live = open(live_path, "w", encoding="utf-8")
                for row in rows:
                    self.live.write(json.dumps(row) + "\n")
                self.live.flush()

        def on_train_end(self, args, state, control, **kwargs):
            if self.live is not None:
                self.live.close()
                self.live = None

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not logs or "loss" not in logs:
                return
            recs, splade_loss.records = splade_loss.records, []
            if not recs:
                return

            def mean(key):
                vals = [r[key] for r in recs if key in r]
                return sum(vals) / len(vals) if vals else None

            parts = ("base_loss", "query_regularizer_loss", "document_regularizer_loss")
            row = {
                "step": state.global_step,
                "loss": sum(mean(p) or 0.0 for p in parts),
                "ranking_loss": mean("base_loss"),
                "query_regularizer_loss": mean("query_regularizer_loss"),
                "document_regularizer_loss": mean("document_regularizer_loss"),
                "query_regularizer_weight": logs.get("query_regularizer_weight"),
                "document_regularizer_weight": logs.get("document_regularizer_weight"),
                "query_active_dims": mean("query_active_dims"),
                "document_active_dims": mean("document_active_dims"),
                "learning_rate": logs.get("learning_rate"),
                "grad_norm": logs.get("grad_norm"),
            }
            rows.append(row)
            if self.live is not None:
                self.live.write(json.dumps(row) + "\n")
                self.live.flush()

        def on_save(self, args, state, control, **kwargs):
            # Once the trainer has written the whole checkpoint: mark it complete, then drop older ones.
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if not state.is_world_process_zero or not folder.is_dir():
                return
            write_train_log(folder / CHECKPOINT_LOG, [r for r in rows if r["step"] <= state.global_step])
            for other in Path(args.output_dir).iterdir():
                m = CHECKPOINT_RE.match(other.name)
                if m and other != folder and other.is_dir():
                    shutil.rmtree(other, ignore_errors=True)

    return TrainLog()


def train_progress_callback(rows: list[dict], every: int | None = None, seconds: float = 60.0):
    """Progress lines of a training run in the job's log (step, loss, steps/s, ETA); must follow
    :func:`train_log_callback`."""
    from transformers import TrainerCallback

    from lsrbench.progress import Progress

    class TrainProgress(TrainerCallback):
        progress = None

        def on_train_begin(self, args, state, control, **kwargs):
            if state.is_world_process_zero:
                self.progress = Progress("train", state.max_steps, "steps", every=every, seconds=seconds, logger=log,
                                         done=state.global_step)

        def on_log(self, args, state, control, logs=None, **kwargs):
            if self.progress is not None and rows and rows[-1]["step"] == state.global_step:
                self.progress.update(state.global_step, loss=rows[-1]["loss"])

    return TrainProgress()


def write_train_log(path: str | os.PathLike, rows: list[dict]) -> None:
    """Write the per-step log (one JSON object per line), atomically."""
    with atomic_open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


def read_train_log(path: str | os.PathLike) -> list[dict]:
    """The per-step log as written by :func:`write_train_log`: one dict per optimiser step."""
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def log_losses(rows: list[dict], key: str = "ranking_loss") -> list[tuple[int, float]]:
    """``(step, value)`` of one logged quantity, the steps where it was recorded."""
    return [(row["step"], row[key]) for row in rows if row.get(key) is not None]
