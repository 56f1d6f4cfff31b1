"""The train stage: rescale the MLM head, then train SPLADE with sentence-transformers' stack."""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
from pathlib import Path

from .atomic import atomic_dir, atomic_open

log = logging.getLogger(__name__)


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


def _recording_losses(model, lambda_q: float, lambda_d: float):
    """SpladeLoss(SparseMultipleNegativesRankingLoss) that keep, per forward, the exact loss parts and
    the active dims of queries and documents (the trainer's own logs round to 4 digits)."""
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
                row["query_active_dims"], row["document_active_dims"] = self.loss.last_active
                self.records.append(row)
            return parts

    loss = RecordingSpladeLoss(
        model,
        loss=RecordingRankingLoss(model),
        query_regularizer_weight=lambda_q,
        document_regularizer_weight=lambda_d,
    )
    loss.records = []
    return loss


def _log_callback(splade_loss, log_fh):
    from transformers import TrainerCallback

    class TrainLog(TrainerCallback):
        """Writes one JSON line per optimiser step: loss, its parts, regulariser weights, active dims."""

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
            log_fh.write(json.dumps(row) + "\n")
            log_fh.flush()

    return TrainLog()


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
) -> dict:
    """Rescale ``W_head <- W_head / k`` and train SPLADE for ``recipe['steps']`` steps.

    Writes the model in SparseEncoder format to ``out_dir`` and one JSON line per step to
    ``log_path``. ``steps == 0`` saves the (rescaled) checkpoint untrained: the way to evaluate a
    published SPLADE model as it is. Returns a summary (first/last loss, steps, seconds).
    """
    import time

    from datasets import Dataset
    from sentence_transformers.sparse_encoder import (
        SparseEncoderTrainer,
        SparseEncoderTrainingArguments,
    )
    from sentence_transformers.sparse_encoder.callbacks.splade_callbacks import (
        SpladeRegularizerWeightSchedulerCallback,
    )
    from sentence_transformers.sentence_transformer.training_args import BatchSamplers

    from .models import build_sparse_encoder

    set_seed(recipe["seed"])
    model = build_sparse_encoder(
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
    steps = int(recipe["steps"])
    start = time.time()
    rows: list[dict] = []
    with atomic_open(log_path, "w", encoding="utf-8") as log_fh:
        if steps > 0:
            need = steps * recipe["batch_size"]
            if len(triplets) < need:
                # Cycle rather than run out: steps, not epochs, define the recipe.
                triplets = [triplets[i % len(triplets)] for i in range(need)]
            dataset = Dataset.from_list(
                [{"query": t["query"], "positive": t["positive"], "negative": t["negative"]} for t in triplets[:need]]
            )
            loss = _recording_losses(model, recipe["lambda_q"], recipe["lambda_d"])
            with tempfile.TemporaryDirectory() as tmp:
                args = SparseEncoderTrainingArguments(
                    output_dir=tmp,
                    max_steps=steps,
                    per_device_train_batch_size=recipe["batch_size"],
                    learning_rate=recipe["learning_rate"],
                    warmup_steps=recipe.get("warmup_steps", 0),
                    seed=recipe["seed"],
                    data_seed=recipe["seed"],
                    logging_steps=1,
                    save_strategy="no",
                    report_to="none",
                    disable_tqdm=True,
                    dataloader_drop_last=True,
                    batch_sampler=BatchSamplers.NO_DUPLICATES,
                    router_mapping={"query": "query", "positive": "document", "negative": "document"},
                    **_precision_flags(recipe.get("precision", "fp32")),
                )
                trainer = SparseEncoderTrainer(
                    model=model,
                    args=args,
                    train_dataset=dataset,
                    loss=loss,
                    callbacks=[
                        SpladeRegularizerWeightSchedulerCallback(
                            loss, scheduler_type="quadratic", warmup_ratio=recipe.get("regularizer_warmup_ratio", 0.33)
                        ),
                        _log_callback(loss, log_fh),
                    ],
                )
                trainer.train()
    rows = read_train_log(log_path)
    with atomic_dir(out_dir) as tmp_dir:
        model.save(str(tmp_dir))
    losses = [r["loss"] for r in rows if r.get("loss") is not None]
    return {
        "steps": steps,
        "seconds": round(time.time() - start, 3),
        "first_loss": losses[0] if losses else None,
        "last_loss": losses[-1] if losses else None,
        "finite": all(math.isfinite(x) for x in losses),
    }


def read_train_log(path: str | os.PathLike) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
