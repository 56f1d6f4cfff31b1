"""The train stage: rescale the MLM head, then train SPLADE with sentence-transformers' stack."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import re
import shutil
import tempfile
from pathlib import Path

from .atomic import atomic_dir, atomic_open, keyed_dir

log = logging.getLogger(__name__)

# Written into ``checkpoint-N/`` (atomically) once the trainer has finished saving everything of
# that checkpoint: the per-step log up to step N. A checkpoint folder without it was cut short
# (a job killed mid-save) and is never resumed from.
CHECKPOINT_LOG = "lsrbench_train_log.jsonl"
# In the checkpoint folder: the key of the training run the checkpoints belong to.
CHECKPOINT_KEY = "lsrbench_run.json"
_CHECKPOINT_RE = re.compile(r"^checkpoint-(\d+)$")


class NonFiniteLoss(Exception):
    """Raised inside the loss's forward, before any backward or optimiser step, when a loss part
    is NaN or infinite: the model then still holds the weights of the previous step."""

    def __init__(self, parts: dict):
        self.parts = parts
        super().__init__(f"non-finite loss {parts}")


def set_seed(seed: int) -> None:
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _precision_flags(precision: str) -> dict:
    import torch

    if precision == "auto":
        if torch.cuda.is_available() and torch.cuda.is_bf16_supported():
            precision = "bf16"
        else:
            precision = "fp32"
    if precision in ("bf16", "fp16") and not torch.cuda.is_available():
        log.warning("precision %s requested without a GPU: training in fp32", precision)
        precision = "fp32"
    return {"bf16": precision == "bf16", "fp16": precision == "fp16"}


def training_processes(setting: int | str | None) -> int:
    """How many processes train one run: ``auto`` (or None) means one per visible CUDA GPU."""
    if setting in (None, "auto"):
        import torch

        return max(1, torch.cuda.device_count()) if torch.cuda.is_available() else 1
    return max(1, int(setting))


def world() -> tuple[int, int]:
    """``(rank, world size)`` of this training process (torchrun's environment; ``(0, 1)`` alone)."""
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def _any_rank(flag: bool) -> bool:
    """True when ``flag`` is true on any training process: a rank that stops alone would leave the
    others waiting in the next gradient all-reduce."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return flag
    device = "cuda" if dist.get_backend() == "nccl" else "cpu"
    t = torch.tensor([1.0 if flag else 0.0], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item() > 0)


def _recording_losses(model, lambda_q: float, lambda_d: float, gather: bool = False):
    """SpladeLoss(SparseMultipleNegativesRankingLoss) that keep, per forward, the exact loss parts and
    the active dims of queries and documents (the trainer's own logs round to 4 digits).
    ``gather``: several training processes share their documents as in-batch negatives
    (sentence-transformers' ``gather_across_devices``), so every query is ranked against the whole
    global batch as on one device."""
    import torch
    from sentence_transformers.sparse_encoder.losses import SparseMultipleNegativesRankingLoss, SpladeLoss

    class RecordingRankingLoss(SparseMultipleNegativesRankingLoss):
        def compute_loss_from_embeddings(self, embeddings, labels=None):
            with torch.no_grad():
                self.last_active = (
                    (embeddings[0] != 0).sum(dim=1).float().mean().item(),
                    torch.cat([(e != 0).sum(dim=1).float() for e in embeddings[1:]]).mean().item(),
                )
            return super().compute_loss_from_embeddings(embeddings, labels)

    class RecordingSpladeLoss(SpladeLoss):
        records: list[dict] = []

        def forward(self, sentence_features, labels=None):
            parts = super().forward(sentence_features, labels)
            if self.training:
                row = {name: float(value.detach()) for name, value in parts.items()}
                if _any_rank(not all(math.isfinite(row[name]) for name in parts)):
                    raise NonFiniteLoss({name: row[name] for name in parts})
                row["query_active_dims"], row["document_active_dims"] = self.loss.last_active
                self.records.append(row)
            return parts

    loss = RecordingSpladeLoss(
        model,
        loss=RecordingRankingLoss(model, gather_across_devices=gather),
        query_regularizer_weight=lambda_q,
        document_regularizer_weight=lambda_d,
    )
    loss.records = []
    return loss


def _log_callback(splade_loss, rows: list[dict], live_path: Path | None):
    """The per-step log, kept in ``rows`` (which may already hold the steps of a resumed checkpoint),
    mirrored line by line to ``live_path`` for watching a job, and saved with every checkpoint."""
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
            # Called once the trainer has written the whole checkpoint (weights, optimiser,
            # scheduler, RNG states, trainer state): mark it complete, then drop older ones.
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if not state.is_world_process_zero or not folder.is_dir():
                return
            _write_log(folder / CHECKPOINT_LOG, [r for r in rows if r["step"] <= state.global_step])
            for other in Path(args.output_dir).iterdir():
                m = _CHECKPOINT_RE.match(other.name)
                if m and other != folder and other.is_dir():
                    shutil.rmtree(other, ignore_errors=True)

    return TrainLog()


def _write_log(path: str | os.PathLike, rows: list[dict]) -> None:
    with atomic_open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


def _training_key(model_path: str, triplets: list[dict], recipe: dict, k: float, mode: str, head_scale: float,
                  revision: str | None) -> str:
    """What a checkpoint must match to be resumed from: everything that determines the training
    trajectory (``checkpoint_steps`` only says how often it is saved, so it is left out)."""
    h = hashlib.sha256()
    for t in triplets:
        h.update(json.dumps([t["query"], t["positive"], t["negative"]]).encode())
    obj = {"model_path": str(model_path), "revision": revision, "k": float(k), "mode": mode,
           "head_scale": float(head_scale), "triplets_sha256": h.hexdigest(),
           "recipe": {key: v for key, v in recipe.items() if key != "checkpoint_steps"}}
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def prepare_checkpoints(checkpoint_dir: str | os.PathLike, key: str) -> Path | None:
    """Make ``checkpoint_dir`` hold only checkpoints of the training run ``key``; return the latest
    complete one (or None).

    Checkpoints of another run (the recipe, data or model changed) are deleted, and so is any
    checkpoint folder without its completion mark (written last, see :data:`CHECKPOINT_LOG`).
    """
    complete: list[tuple[int, Path]] = []
    with keyed_dir(checkpoint_dir, CHECKPOINT_KEY, key) as (root, stale):
        for child in root.iterdir():
            m = _CHECKPOINT_RE.match(child.name)
            if not child.is_dir() or not m:
                continue
            if stale or not (child / CHECKPOINT_LOG).is_file():
                log.warning("removing %s checkpoint %s", "stale" if stale else "incomplete", child)
                shutil.rmtree(child, ignore_errors=True)
            else:
                complete.append((int(m.group(1)), child))
    return max(complete)[1] if complete else None


def train_splade(
    model_path: str,
    triplets: list[dict],
    recipe: dict,
    out_dir: str | os.PathLike,
    log_path: str | os.PathLike,
    *,
    k: float = 1.0,
    mode: str = "shared",
    head_scale: float = 1.0,
    trust_remote_code: bool = False,
    revision: str | None = None,
    checkpoint_dir: str | os.PathLike | None = None,
    checkpoint_steps: int | None = None,
) -> dict:
    """Rescale ``W_head <- W_head / k`` and train SPLADE for ``recipe['steps']`` steps.

    Writes the model in SparseEncoder format to ``out_dir`` and one JSON line per step to
    ``log_path``. ``steps == 0`` saves the (rescaled) checkpoint untrained: the way to evaluate a
    published SPLADE model as it is. Returns a summary (first/last loss, steps, seconds, status).

    With ``checkpoint_dir`` and ``checkpoint_steps`` (default ``recipe['checkpoint_steps']``) > 0 the full training state is saved
    there every ``checkpoint_steps`` steps, and a call that finds a complete checkpoint of the same
    training run (same model, data, k and recipe) resumes from it: same weights, optimiser,
    scheduler, RNG states, data position, and the per-step log continues where it stopped.

    A loss part that becomes NaN or infinite stops training before that step's update; the run
    is then finished as ``collapsed`` (``summary['status']``) with the last weights that are all
    finite (the previous step's, else the latest checkpoint's, else the initial model's).
    """
    import time

    import torch
    from datasets import Dataset
    from sentence_transformers.sparse_encoder import (
        SparseEncoderTrainer,
        SparseEncoderTrainingArguments,
    )
    from sentence_transformers.sparse_encoder.callbacks.splade_callbacks import (
        SpladeRegularizerWeightSchedulerCallback,
    )
    from sentence_transformers.sentence_transformer.training_args import BatchSamplers

    from .fused_pooling import fused_pooling
    from .models import build_sparse_encoder

    def build():
        set_seed(recipe["seed"])
        return build_sparse_encoder(
            model_path,
            recipe.get("document_max_length", 256),
            trust_remote_code=trust_remote_code,
            revision=revision,
            head_scale=head_scale,
            k=k,
            mode=mode,
            query_length=recipe.get("query_max_length"),
            document_length=recipe.get("document_max_length"),
        )

    def all_finite(m) -> bool:
        """Finite weights, and finite vectors for a few training documents (huge but finite weights
        can still overflow to inf in the forward pass)."""
        if not all(bool(torch.isfinite(p).all()) for p in m.parameters()):
            return False
        with torch.no_grad():
            probe = m.encode_document([t["positive"] for t in triplets[:8]], convert_to_tensor=True)
            probe = probe.coalesce().values() if probe.is_sparse else probe
        return bool(torch.isfinite(probe).all())

    model = build()
    steps = int(recipe["steps"])
    every = int((recipe.get("checkpoint_steps") if checkpoint_steps is None else checkpoint_steps) or 0)
    start = time.time()
    rows: list[dict] = []
    status: dict = {"status": "ok"}
    resumed_from = None
    pooling_fused = None  # whether training used lsrbench's fused pooling (None: no training)
    if steps > 0:
        need = steps * recipe["batch_size"]
        if len(triplets) < need:
            # Cycle rather than run out: steps, not epochs, define the recipe.
            triplets = [triplets[i % len(triplets)] for i in range(need)]
        triplets = triplets[:need]
        dataset = Dataset.from_list(
            [{"query": t["query"], "positive": t["positive"], "negative": t["negative"]} for t in triplets]
        )
        rank, size = world()
        if recipe["batch_size"] % size:
            raise ValueError(f"batch_size {recipe['batch_size']} is not a multiple of the {size} training processes")
        loss = _recording_losses(model, recipe["lambda_q"], recipe["lambda_d"], gather=size > 1)
        with tempfile.TemporaryDirectory() as tmp:
            if checkpoint_dir is not None and every > 0:
                out = Path(checkpoint_dir)
                key = _training_key(model_path, triplets, recipe, k, mode, head_scale, revision)
                # The main process clears stale checkpoints; the others look once it has (below).
                latest = prepare_checkpoints(out, key) if rank == 0 else None
                live = out / "train_log.live.jsonl"
                save = {"save_strategy": "steps", "save_steps": every, "save_total_limit": None}
            else:
                out, live, latest = Path(tmp), None, None
                save = {"save_strategy": "no"}
            args = SparseEncoderTrainingArguments(
                output_dir=str(out),
                max_steps=steps,
                # The recipe's batch is the global one: each of `size` processes takes its share.
                per_device_train_batch_size=recipe["batch_size"] // size,
                learning_rate=recipe["learning_rate"],
                warmup_steps=recipe.get("warmup_steps", 0),
                seed=recipe["seed"],
                data_seed=recipe["seed"],
                logging_steps=1,
                report_to="none",
                disable_tqdm=True,
                dataloader_drop_last=True,
                batch_sampler=BatchSamplers.NO_DUPLICATES,
                router_mapping={"query": "query", "positive": "document", "negative": "document"},
                **save,
                **_precision_flags(recipe.get("precision", "fp32")),
            )
            if size > 1:
                import torch.distributed as dist

                _ = args.device  # sets up the process group
                dist.barrier()
                if rank != 0 and checkpoint_dir is not None and every > 0:
                    latest = prepare_checkpoints(out, key)  # nothing stale is left: only finds the latest
            if latest is not None:
                rows.extend(read_train_log(latest / CHECKPOINT_LOG))
                resumed_from = str(latest)
                log.info("resuming from %s (step %d)", latest, rows[-1]["step"] if rows else 0)
            trainer = SparseEncoderTrainer(
                model=model,
                args=args,
                train_dataset=dataset,
                loss=loss,
                callbacks=[
                    SpladeRegularizerWeightSchedulerCallback(
                        loss, scheduler_type="quadratic", warmup_ratio=recipe.get("regularizer_warmup_ratio", 0.33)
                    ),
                    _log_callback(loss, rows, live),
                ],
            )
            fused = contextlib.nullcontext(False)
            if recipe.get("fused_pooling", True):
                fused = fused_pooling(model, [t["positive"] for t in triplets[:4]])
            try:
                with fused as pooling_fused:
                    trainer.train(resume_from_checkpoint=str(latest) if latest is not None else None)
            except NonFiniteLoss as exc:
                bad = {name: v for name, v in exc.parts.items() if not math.isfinite(v)}
                step = trainer.state.global_step + 1
                finite = [r for r in rows if r.get("loss") is not None and math.isfinite(r["loss"])]
                status = {
                    "status": "collapsed: non-finite training loss",
                    "reason": "non-finite training loss (" + ", ".join(f"{n}={v}" for n, v in bad.items()) + ")",
                    "step": step,
                    "last_finite_loss": finite[-1]["loss"] if finite else None,
                    "last_finite_step": finite[-1]["step"] if finite else None,
                }
                log.warning("training collapsed at step %d: %s", step, status["reason"])
                model_step = trainer.state.global_step
                if not all_finite(model):
                    model_step = None
                    ckpts = sorted((int(m.group(1)), c) for c in out.iterdir()
                                   if (m := _CHECKPOINT_RE.match(c.name)) and (c / CHECKPOINT_LOG).is_file())
                    for ckpt_step, ckpt in reversed(ckpts):
                        trainer._load_from_checkpoint(str(ckpt))
                        if all_finite(model):
                            model_step = ckpt_step
                            break
                    if model_step is None:
                        model = build()
                        model_step = 0
                status["model_step"] = model_step
                status["model_finite"] = all_finite(model)
    if status["status"] == "ok" and triplets and not all_finite(model):
        finite = [r for r in rows if r.get("loss") is not None and math.isfinite(r["loss"])]
        status = {"status": "collapsed: non-finite vectors",
                  "reason": "the model's vectors are NaN or infinite on training documents",
                  "step": steps, "last_finite_loss": finite[-1]["loss"] if finite else None,
                  "last_finite_step": finite[-1]["step"] if finite else None,
                  "model_step": steps, "model_finite": False}
    if world()[0] == 0:  # one writer of the outputs when several processes trained
        _write_log(log_path, rows)
        with atomic_dir(out_dir) as tmp_dir:
            model.save(str(tmp_dir))
    losses = [r["loss"] for r in rows if r.get("loss") is not None]
    return {
        "steps": steps,
        "seconds": round(time.time() - start, 3),
        "first_loss": losses[0] if losses else None,
        "last_loss": losses[-1] if losses else None,
        "finite": all(math.isfinite(x) for x in losses),
        "resumed_from": resumed_from,
        "resumed_from_step": int(_CHECKPOINT_RE.match(Path(resumed_from).name).group(1)) if resumed_from else None,
        "status": status,
        "fused_pooling": pooling_fused,
        "processes": world()[1],
    }


def discard_checkpoints(checkpoint_dir: str | os.PathLike) -> None:
    """Remove a run's checkpoints once its outputs are all written (they are only for resuming)."""
    shutil.rmtree(checkpoint_dir, ignore_errors=True)


def read_train_log(path: str | os.PathLike) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
