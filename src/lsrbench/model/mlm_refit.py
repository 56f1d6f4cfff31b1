"""The MLM re-fit: a masked-LM starting point from a checkpoint whose head was trained for something else: the head
re-initialised but ``W_head``, then the model trained as an MLM (docs/miniature.md)."""

from __future__ import annotations

import logging
import math
import os
import random
import time

from lsrbench.atomic import atomic_dir
from lsrbench.errors import InputError
from lsrbench.model.families import GENERIC, family_of
from lsrbench.model.load_options import model_kwargs

log = logging.getLogger(__name__)

__all__ = ["split_texts", "reinit_head", "head_parameters", "masked_lm_loss", "held_out_loss",
           "refit_mlm"]

# Texts per held-out batch (a fixed split, fixed masks: the same numbers before and after).
_HELD_OUT_BATCH = 64
# The held-out masking seed, apart from the training seed: every re-fit is measured on the same masked tokens.
_HELD_OUT_MASK_SEED = 0


def split_texts(texts: list[str], held_out: int, seed: int) -> tuple[list[str], list[str]]:
    """``(training, held_out)``: the texts shuffled with ``seed``, the first ``held_out`` kept apart."""
    order = list(range(len(texts)))
    random.Random(seed).shuffle(order)
    return [texts[i] for i in order[held_out:]], [texts[i] for i in order[:held_out]]


def _decoder(model):
    decoder = family_of(model).decoder(model)
    if decoder is None or getattr(decoder, "weight", None) is None:
        raise ValueError(f"{type(model).__name__} has no MLM output embeddings")
    return decoder


def head_parameters(model) -> dict:
    """The head parameters the re-fit trains, by name: under the family's head keys, except ``W_head``."""
    family = family_of(model)
    if family is GENERIC:
        raise ValueError(f"{type(model).__name__}: no registered backbone family, so no known MLM head to re-fit")
    matrix = _decoder(model).weight
    return {name: p for name, p in model.named_parameters()
            if any(part in name for part in family.head_keys) and p is not matrix}


def reinit_head(model, seed: int) -> list[str]:
    """Re-initialise :func:`head_parameters` with the model's own ``_init_weights``, seeded; returns their
    names."""
    import torch

    decoder = _decoder(model)
    params = head_parameters(model)
    owners = {name.rsplit(".", 1)[0] for name in params}
    torch.manual_seed(seed)
    modules = dict(model.named_modules())
    for owner in sorted(owners):
        module = modules[owner]
        if module is decoder:
            continue  # its weight is W_head; its bias is zeroed below
        for p in module.parameters(recurse=False):
            p._is_hf_initialized = False  # loaded weights are marked, and transformers' init skips marked ones
        model._init_weights(module)
    bias = family_of(model).decoder_bias(decoder)
    if bias is not None:
        with torch.no_grad():
            bias.zero_()  # as the families' _init_weights set an MLM output bias
    return sorted(params)


def masked_lm_loss(model, batch: dict):
    """The MLM cross-entropy of a collated batch, the decoder applied at the masked positions only."""
    import torch
    import torch.nn.functional as F

    family = family_of(model)
    decoder = _decoder(model)
    captured = []

    def capture(hidden):
        captured.append(hidden)
        return hidden.new_zeros(hidden.shape[:-1] + (1,))

    inputs = {k: v for k, v in batch.items() if k != "labels"}
    with family.capture(decoder, capture):
        model(**inputs)
    labels = batch["labels"]
    chosen = labels != -100
    hidden = captured[-1][chosen]
    logits = F.linear(hidden, decoder.weight, family.decoder_bias(decoder))
    if not bool(chosen.any()):
        return torch.zeros((), requires_grad=True)
    return F.cross_entropy(logits.float(), labels[chosen])


def _encoded(tokenizer, texts: list[str], max_length: int) -> list[dict]:
    return [dict(e) for e in (tokenizer(t, truncation=True, max_length=max_length) for t in texts)]


def held_out_loss(model, tokenizer, texts: list[str], max_length: int, mlm_probability: float) -> float | None:
    """The mean MLM loss over held-out texts with fixed masks."""
    import torch
    from transformers import DataCollatorForLanguageModeling

    if not texts:
        return None
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=mlm_probability, seed=_HELD_OUT_MASK_SEED)
    encoded = _encoded(tokenizer, texts, max_length)
    was_training = model.training
    model.eval()
    total, tokens = 0.0, 0
    with torch.no_grad():
        for lo in range(0, len(encoded), _HELD_OUT_BATCH):
            batch = collator(encoded[lo:lo + _HELD_OUT_BATCH])
            n = int((batch["labels"] != -100).sum())
            if n:
                total += float(masked_lm_loss(model, batch)) * n
                tokens += n
    model.train(was_training)
    return total / tokens if tokens else None


def _train_mlm(model, tokenizer, train_texts: list[str], s: dict, rows: list) -> None:
    import tempfile

    from datasets import Dataset
    from transformers import DataCollatorForLanguageModeling, Trainer, TrainerCallback, TrainingArguments
    from transformers.trainer_callback import PrinterCallback

    from lsrbench.device import model_device
    from lsrbench.progress import Progress

    progress = Progress("mlm_refit", s["steps"], "steps", logger=log)

    class Rows(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                rows.append({"step": state.global_step, "loss": logs["loss"], "learning_rate": logs.get("learning_rate")})
                progress.update(state.global_step, loss=logs["loss"])

    class MaskedOnly(Trainer):
        def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
            loss = masked_lm_loss(model, inputs)
            return (loss, None) if return_outputs else loss

    dataset = Dataset.from_list(_encoded(tokenizer, train_texts, s["max_length"]))
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=s["mlm_probability"], seed=s["seed"])
    with tempfile.TemporaryDirectory() as tmp:
        args = TrainingArguments(
            output_dir=tmp, max_steps=int(s["steps"]), per_device_train_batch_size=int(s["batch_size"]),
            learning_rate=float(s["learning_rate"]), warmup_steps=float(s["warmup_ratio"]),
            weight_decay=float(s["weight_decay"]), seed=int(s["seed"]), data_seed=int(s["seed"]), logging_steps=1,
            report_to="none", save_strategy="no", disable_tqdm=True, dataloader_drop_last=True,
            remove_unused_columns=False, use_cpu=model_device() == "cpu")
        trainer = MaskedOnly(model=model, args=args, train_dataset=dataset, data_collator=collator, callbacks=[Rows()])
        trainer.remove_callback(PrinterCallback)
        trainer.train()


def refit_mlm(model_path: str, texts: list[str], out_dir: str | os.PathLike, settings: dict, *,
              trust_remote_code: bool = False, revision: str | None = None, log_rows: list | None = None,
              config_file: str = "config", field: str = "mlm_refit") -> dict:
    """Re-fit ``model_path`` as an MLM on ``texts`` and save it to ``out_dir``; returns held-out loss before and
    after, parameters re-set, texts and seconds."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from lsrbench.config.schema import property_defaults

    from lsrbench.device import model_device

    model_device()  # a GPU job without a usable GPU stops here, before the model loads
    s = {**property_defaults("config.schema.yaml", "backbones", "*", "mlm_refit"), **settings}
    start = time.time()
    common = {"trust_remote_code": trust_remote_code, **({"revision": revision} if revision else {})}
    load = model_kwargs(**common)  # first: it registers the model types lsrbench loads without remote code
    tokenizer = AutoTokenizer.from_pretrained(model_path, **common)
    model = AutoModelForMaskedLM.from_pretrained(model_path, **load)
    from lsrbench.model.checkpoint import check_lengths_fit

    check_lengths_fit(model, {f"{field}.max_length": s["max_length"]}, config_file, model_path)
    try:
        reset = reinit_head(model, s["seed"])
    except ValueError as exc:
        raise InputError(config_file, field, str(exc)) from None
    train_texts, held = split_texts(texts, s["held_out"], s["seed"])
    if len(train_texts) < s["batch_size"]:
        raise InputError(config_file, f"{field}.batch_size", f"{len(train_texts)} training texts after the held-out "
                                                             f"{len(held)} cannot fill a batch of {s['batch_size']}")
    if s["train"] == "head":  # the encoder and W_head frozen: the head alone learns the MLM
        for name, p in model.named_parameters():
            p.requires_grad = name in reset
    before = held_out_loss(model, tokenizer, held, s["max_length"], s["mlm_probability"])
    rows = log_rows if log_rows is not None else []
    _train_mlm(model, tokenizer, train_texts, s, rows)
    model = model.cpu()
    after = held_out_loss(model, tokenizer, held, s["max_length"], s["mlm_probability"])
    trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
    for p in model.parameters():
        p.requires_grad = True
    with atomic_dir(out_dir) as tmp_dir:
        model.save_pretrained(str(tmp_dir))
        tokenizer.save_pretrained(str(tmp_dir))
    losses = [r["loss"] for r in rows]
    summary = {"steps": int(s["steps"]), "reinitialised_parameters": reset,
               "trained_parameter_count": int(trained),
               "training_texts": len(train_texts), "held_out_texts": len(held),
               "held_out_loss_before": before, "held_out_loss_after": after,
               "first_loss": losses[0] if losses else None, "last_loss": losses[-1] if losses else None,
               "finite": all(math.isfinite(x) for x in losses), "seconds": round(time.time() - start, 3)}
    log.info("mlm_refit: %d steps, %d parameters trained; held-out MLM loss %.4f -> %.4f", summary["steps"],
             summary["trained_parameter_count"], before or float("nan"), after or float("nan"))
    return summary
