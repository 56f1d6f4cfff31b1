"""The paper's intervention, ``W_head <- W_head / k`` before training (arXiv 2606.18811), and the head's norms.
Written here because it is the object of study and three lines on transformers' ``get_output_embeddings()``."""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from lsrbench.model.auto_k import NORM_STATISTICS
from lsrbench.model.families import family_of

RescaleMode = Literal["shared", "untie"]


def mlm_head(model: nn.Module) -> nn.Module:
    """The vocabulary projection (``W_head``, ``b``) of a ``*ForMaskedLM`` model."""
    head = family_of(model).decoder(model)
    if head is None or getattr(head, "weight", None) is None:
        raise ValueError(f"{type(model).__name__} has no MLM output embeddings")
    return head


def head_is_tied(model: nn.Module) -> bool:
    """True when the head's weight is the very tensor of the input embeddings."""
    return family_of(model).is_tied(model, mlm_head(model))


@torch.no_grad()
def rescale_mlm_head(model: nn.Module, k: float, mode: RescaleMode = "shared") -> nn.Module:
    """Divide the MLM head weight by ``k`` in place; the bias is not scaled."""
    if not k > 0:
        raise ValueError(f"rescale factor k must be positive, got {k}")
    if mode not in ("shared", "untie"):
        raise ValueError(f"rescale mode must be 'shared' or 'untie', got {mode!r}")
    head = mlm_head(model)
    if mode == "untie":
        family_of(model).untie(model, head)
    head.weight.div_(k)
    return model


@torch.no_grad()
def head_norms(model: nn.Module) -> dict:
    """Frobenius norm, mean and max row L2 norm, bias norm and shapes of the MLM head."""
    head = mlm_head(model)
    weight = head.weight.detach().float()
    # Row norms reduced in float64 (a float32 reduction over millions of entries is off by ~1e-4).
    rows = weight.norm(dim=1).double()
    bias = getattr(head, "bias", None)
    return {
        **dict(zip(NORM_STATISTICS, (float(rows.square().sum().sqrt()), float(rows.mean()), float(rows.max())))),
        "bias_norm": float(bias.detach().double().norm()) if bias is not None else 0.0,
        "has_bias": bias is not None,
        "vocab_size": int(weight.shape[0]),
        "hidden_size": int(weight.shape[1]),
        "tied": bool(head_is_tied(model)),
    }


@torch.no_grad()
def decoder_input_change(model: nn.Module, batch: dict, k: float, mode: RescaleMode = "shared") -> float:
    """``||x_k - x_1|| / ||x_1||`` of the decoder's input when the head is rescaled in ``mode`` (a copy): what the
    rescale changes besides the logits (0 for ``untie``)."""
    import copy

    def decoder_input(m: nn.Module) -> torch.Tensor:
        seen = {}
        handle = mlm_head(m).register_forward_pre_hook(lambda _, args: seen.setdefault("x", args[0]))
        try:
            m.eval()
            m(**batch)
        finally:
            handle.remove()
        return seen["x"].double()

    mask = batch["attention_mask"].bool()
    before = decoder_input(model)[mask]
    after = decoder_input(rescale_mlm_head(copy.deepcopy(model), k, mode))[mask]
    return float((after - before).norm() / before.norm())
