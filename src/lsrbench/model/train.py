"""The train stage's driver: rescale the MLM head, then train SPLADE with sentence-transformers'
``SparseEncoderTrainer``, with resumable checkpoints, the per-step log, data-parallel processes and collapse as
a result."""

from __future__ import annotations

import contextlib
import logging
import math
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from lsrbench.atomic import atomic_dir
from lsrbench.errors import InputError
from lsrbench.model.resume import (
    CHECKPOINT_LOG,
    checkpoint_step,
    complete_checkpoints,
    prepare_checkpoints,
    training_key,
)
from lsrbench.model.losses import NonFiniteLoss, recording_splade_loss
from lsrbench.model.ranks import world
from lsrbench.model.train_log import read_train_log, train_log_callback, train_progress_callback, write_train_log

log = logging.getLogger(__name__)

__all__ = ["train_splade", "set_seed", "check_batches_possible"]

# The columns of a training example (the sampler keeps every text of a batch distinct).
TRIPLET_COLUMNS = ("query", "positive", "negative")
# Which column is tokenized as a query and which as a document.
ROUTER_MAPPING = {"query": "query", "positive": "document", "negative": "document"}


def set_seed(seed: int) -> None:
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _precision_flags(precision: str) -> dict:
    import torch

    from lsrbench.device import model_device

    on_gpu = model_device() == "cuda"
    if precision == "auto":
        precision = "bf16" if on_gpu and torch.cuda.is_bf16_supported() else "fp32"
    if precision in ("bf16", "fp16") and not on_gpu:
        log.warning("precision %s requested for a CPU job (use_gpu: false): training in fp32", precision)
        precision = "fp32"
    return {"bf16": precision == "bf16", "fp16": precision == "fp16"}


@dataclass
class _Run:
    model_path: str
    triplets: list[dict]
    recipe: dict
    k: float
    mode: str
    head_scale: float
    trust_remote_code: bool
    revision: str | None
    head_scale_mode: str = "shared"

    def build(self):
        """The SparseEncoder at step 0: the checkpoint, its head rescaled, seeded."""
        from lsrbench.model.encoder import build_sparse_encoder

        set_seed(self.recipe["seed"])
        return build_sparse_encoder(
            self.model_path, self.recipe["document_max_length"],
            trust_remote_code=self.trust_remote_code, revision=self.revision, head_scale=self.head_scale,
            head_scale_mode=self.head_scale_mode, k=self.k, mode=self.mode, query_length=self.recipe["query_max_length"],
            document_length=self.recipe["document_max_length"],
        )

    def all_finite(self, model) -> bool:
        """Finite weights, and finite vectors for a few training documents (huge weights can overflow in the
        forward)."""
        import torch

        if not all(bool(torch.isfinite(p).all()) for p in model.parameters()):
            return False
        with torch.no_grad():
            probe = model.encode_document([t["positive"] for t in self.triplets[:8]], convert_to_tensor=True)
            probe = probe.coalesce().values() if probe.is_sparse else probe
        return bool(torch.isfinite(probe).all())

    def key(self) -> str:
        return training_key(self.model_path, self.triplets, self.recipe, self.k, self.mode, self.head_scale,
                            self.revision, self.head_scale_mode)


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
    head_scale_mode: str = "shared",
    trust_remote_code: bool = False,
    revision: str | None = None,
    checkpoint_dir: str | os.PathLike | None = None,
    checkpoint_steps: int | None = None,
    config_file: str | os.PathLike | None = None,
    callbacks: list | None = None,
    report_to: tuple[str, ...] | list[str] = (),
) -> dict:
    """Rescale ``W_head <- W_head / k`` and train SPLADE for ``recipe['steps']`` steps into ``out_dir``, one log
    line per step; returns a summary."""
    steps = int(recipe["steps"])
    every = int((recipe["checkpoint_steps"] if checkpoint_steps is None else checkpoint_steps) or 0)
    if steps > 0:
        triplets = _cycled(triplets, steps * recipe["batch_size"])
        check_batches_possible(triplets, recipe["batch_size"] // world()[1], config_file)
    run = _Run(model_path, triplets, recipe, k, mode, head_scale, trust_remote_code, revision, head_scale_mode)
    start = time.time()
    model = run.build()
    _check_lengths(model, recipe, config_file, model_path)
    rows: list[dict] = []
    outcome = {"status": {"status": "ok"}, "resumed_from": None, "fused_pooling": None}
    if steps > 0:
        with _reporting(report_to, Path(log_path).parent, config_file) as reporting:
            model, outcome = _train(run, model, rows, checkpoint_dir if every > 0 else None, every, callbacks or [],
                                    reporting)
        if outcome["status"]["status"] == "ok" and outcome["steps_taken"] != steps:
            raise InputError(config_file, "recipe.batch_size", (
                f"training took {outcome['steps_taken']} of its {steps} steps (recipe.steps): the trainer's "
                f"no-duplicates sampler could not fill enough batches of {recipe['batch_size']} triplets without "
                "repeating a text; give more distinct triplets (training_data.n_triplets) or a smaller batch"))
    status = outcome["status"]
    if status["status"] == "ok" and triplets and not run.all_finite(model):
        status = {**_last_finite(rows), "status": "collapsed: non-finite vectors",
                  "reason": "the model's vectors are NaN or infinite on training documents",
                  "step": steps, "model_step": steps, "model_finite": False}
    if world()[0] == 0:  # one writer of the outputs when several processes trained
        write_train_log(log_path, rows)
        # The card's training time differs run to run: left out so a run writes the same bytes.
        model.model_card_data._training_start_time = None
        with atomic_dir(out_dir) as tmp_dir:
            model.save(str(tmp_dir))
    losses = [r["loss"] for r in rows if r.get("loss") is not None]
    resumed_from = outcome["resumed_from"]
    log.info("training finished: %s; loss %s -> %s", status["status"], losses[0] if losses else None,
             losses[-1] if losses else None)
    return {
        "steps": steps,
        "seconds": round(time.time() - start, 3),
        "first_loss": losses[0] if losses else None,
        "last_loss": losses[-1] if losses else None,
        "finite": all(math.isfinite(x) for x in losses),
        "resumed_from": resumed_from,
        "resumed_from_step": checkpoint_step(resumed_from) if resumed_from else None,
        "status": status,
        "fused_pooling": outcome["fused_pooling"],
        "processes": world()[1],
    }


def _check_lengths(model, recipe: dict, config_file, model_path) -> None:
    from lsrbench.model.checkpoint import check_lengths_fit

    lengths = {f"recipe.{name}": recipe[name] for name in ("query_max_length", "document_max_length")}
    check_lengths_fit(model[0].auto_model, lengths, config_file, model_path)


def check_batches_possible(triplets: list[dict], batch_size: int, config_file=None) -> None:
    """Refuse triplets from which the no-duplicates sampler cannot fill one batch (the trainer would silently take
    0 steps)."""
    distinct = {column: len({t[column] for t in triplets}) for column in TRIPLET_COLUMNS}
    column, fewest = min(distinct.items(), key=lambda item: item[1])
    if fewest < batch_size:
        raise InputError(config_file, "recipe.batch_size", (
            f"{batch_size} triplets per batch (per training process), but the training triplets have only "
            f"{fewest} distinct {column} texts, and a batch may not repeat a text (in-batch negatives): "
            "give more distinct triplets (training_data.n_triplets) or a smaller batch"))


def _cycled(triplets: list[dict], need: int) -> list[dict]:
    if len(triplets) < need:
        triplets = [triplets[i % len(triplets)] for i in range(need)]
    return triplets[:need]


def _last_finite(rows: list[dict]) -> dict:
    finite = [r for r in rows if r.get("loss") is not None and math.isfinite(r["loss"])]
    return {"last_finite_loss": finite[-1]["loss"] if finite else None,
            "last_finite_step": finite[-1]["step"] if finite else None}


@contextlib.contextmanager
def _reporting(report_to, folder: Path, config_file):
    report_to = list(report_to or [])
    if "tensorboard" not in report_to:
        yield report_to
        return
    from transformers.integrations import is_tensorboard_available

    if not is_tensorboard_available():
        raise InputError(config_file, "recipe.report_to", "tensorboard needs the tensorboard package: "
                                                   "pip install -e '.[tensorboard]'")
    previous = os.environ.get("TENSORBOARD_LOGGING_DIR")
    os.environ["TENSORBOARD_LOGGING_DIR"] = str(folder / "tensorboard")
    try:
        yield report_to
    finally:
        if previous is None:
            os.environ.pop("TENSORBOARD_LOGGING_DIR", None)
        else:
            os.environ["TENSORBOARD_LOGGING_DIR"] = previous


def _train(run: _Run, model, rows: list[dict], checkpoint_dir, every: int, callbacks: list, report_to: list[str]):
    from datasets import Dataset

    recipe = run.recipe
    dataset = Dataset.from_list([{key: t[key] for key in TRIPLET_COLUMNS} for t in run.triplets])
    rank, size = world()
    if recipe["batch_size"] % size:
        raise ValueError(f"batch_size {recipe['batch_size']} is not a multiple of the {size} training processes")
    loss = recording_splade_loss(model, recipe["lambda_q"], recipe["lambda_d"], gather=size > 1)
    outcome = {"status": {"status": "ok"}, "resumed_from": None, "fused_pooling": None, "steps_taken": 0}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(checkpoint_dir) if checkpoint_dir is not None else Path(tmp)
        key = run.key() if checkpoint_dir is not None else None
        latest = prepare_checkpoints(out, key) if key and rank == 0 else None
        args = _training_args(recipe, out, size, every if key else 0, report_to)
        if size > 1:
            import torch.distributed as dist

            _ = args.device  # sets up the process group
            dist.barrier()
            if rank != 0 and key:
                latest = prepare_checkpoints(out, key)
        if latest is not None:
            rows.extend(read_train_log(latest / CHECKPOINT_LOG))
            outcome["resumed_from"] = str(latest)
            log.info("resuming from %s (step %d)", latest, rows[-1]["step"] if rows else 0)
        live = out / "train_log.live.jsonl" if key else None
        trainer = _trainer(model, args, dataset, loss, recipe, rows, live, callbacks)
        log.info("training %d steps of %d triplets (k=%g, %s head) on %s, %d process(es)%s", recipe["steps"],
                 recipe["batch_size"], run.k, run.mode, model.device, size,
                 f", live per-step log {live}" if live is not None else "")
        fused = contextlib.nullcontext(False)
        if recipe["fused_pooling"]:
            from lsrbench.model.fused_pooling import fused_pooling

            # probed in the precision the trainer's autocast will run it in
            flags = _precision_flags(recipe["precision"])
            fused = fused_pooling(model, [t["positive"] for t in run.triplets[:4]],
                                  precision=next((p for p in ("bf16", "fp16") if flags[p]), "fp32"))
        try:
            with fused as pooling_fused:
                outcome["fused_pooling"] = pooling_fused
                trainer.train(resume_from_checkpoint=str(latest) if latest is not None else None)
        except NonFiniteLoss as exc:
            outcome["status"] = _collapsed(exc, trainer.state.global_step, rows)
            model = _roll_back(run, trainer, model, out, outcome["status"])
        outcome["steps_taken"] = trainer.state.global_step
        # The card's loss table from the whole history, so a resumed run's card is a straight run's.
        model.model_card_data.training_logs = [{"Epoch": e["epoch"], "Step": e["step"], "Training Loss": e["loss"]}
                                               for e in trainer.state.log_history if "loss" in e]
    return model, outcome


def _recipe_value(recipe: dict, key: str):
    from lsrbench.config.schema import property_defaults

    return recipe[key] if key in recipe else property_defaults("config.schema.yaml", "recipe")[key]


def _training_args(recipe: dict, out: Path, processes: int, every: int, report_to: list[str]):
    from sentence_transformers.sentence_transformer.training_args import BatchSamplers
    from sentence_transformers.sparse_encoder import SparseEncoderTrainingArguments

    from lsrbench.device import model_device

    save = ({"save_strategy": "steps", "save_steps": every, "save_total_limit": None} if every > 0
            else {"save_strategy": "no"})
    return SparseEncoderTrainingArguments(
        output_dir=str(out),
        max_steps=int(recipe["steps"]),
        per_device_train_batch_size=recipe["batch_size"] // processes,
        learning_rate=recipe["learning_rate"],
        warmup_steps=recipe["warmup_steps"],
        weight_decay=_recipe_value(recipe, "weight_decay"),
        seed=recipe["seed"],
        data_seed=recipe["seed"],
        logging_steps=1,
        report_to=report_to or "none",
        disable_tqdm=True,
        dataloader_drop_last=True,
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        router_mapping=ROUTER_MAPPING,
        # The job's device, never the trainer's pick; accelerate counts CPU processes only when told.
        use_cpu=model_device() == "cpu",
        **save,
        **_precision_flags(recipe["precision"]),
    )


def _trainer(model, args, dataset, loss, recipe: dict, rows: list[dict], live: Path | None, callbacks: list):
    from sentence_transformers.sparse_encoder import SparseEncoderTrainer
    from sentence_transformers.sparse_encoder.callbacks.splade_callbacks import SpladeRegularizerWeightSchedulerCallback

    from transformers.trainer_callback import PrinterCallback

    trainer = SparseEncoderTrainer(
        model=model, args=args, train_dataset=dataset, loss=loss,
        callbacks=[
            SpladeRegularizerWeightSchedulerCallback(
                loss, scheduler_type="quadratic", warmup_ratio=recipe["regularizer_warmup_ratio"]),
            train_log_callback(loss, rows, live),
            train_progress_callback(rows),
            *callbacks,
        ],
    )
    # Progress lines instead of the trainer's per-step stdout.
    trainer.remove_callback(PrinterCallback)
    return trainer


def _collapsed(exc: NonFiniteLoss, global_step: int, rows: list[dict]) -> dict:
    bad = {name: v for name, v in exc.parts.items() if not math.isfinite(v)}
    step = global_step + 1
    status = {"status": "collapsed: non-finite training loss",
              "reason": "non-finite training loss (" + ", ".join(f"{n}={v}" for n, v in bad.items()) + ")",
              "step": step, **_last_finite(rows)}
    log.warning("training collapsed at step %d: %s", step, status["reason"])
    return status


def _roll_back(run: _Run, trainer, model, out: Path, status: dict):
    model_step = trainer.state.global_step
    if not run.all_finite(model):
        model_step = None
        for ckpt_step, ckpt in reversed(complete_checkpoints(out)):
            trainer._load_from_checkpoint(str(ckpt))
            if run.all_finite(model):
                model_step = ckpt_step
                break
        if model_step is None:
            model = run.build()
            model_step = 0
    status["model_step"] = model_step
    status["model_finite"] = run.all_finite(model)
    return model
