"""The paper's intervention and the quantity it compensates for: divide the MLM head's weight by a
constant k before training, ``W_head <- W_head / k`` ("Rescaling MLM-Head for Neural Sparse
Retrieval", arXiv 2606.18811), and measure the head's norms.

Written here because it is the object of study and is three lines on top of transformers'
``get_output_embeddings()``, which finds the head for every ``*ForMaskedLM`` family; what differs
between families (tying, a shared bias) is said once per family in :mod:`lsrbench.model.families`.
"""

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
    """Divide the MLM head weight by ``k`` in place: ``W_head <- W_head / k``.

    ``mode="shared"`` (the paper's choice) divides the weight tensor itself, so a head tied to the
    input embeddings stays tied and the input embeddings shrink by ``k`` too. ``mode="untie"`` first
    gives the head its own copy of the weight (and marks the config untied, so saving and reloading
    keeps it untied), then scales only that copy; the input embeddings are left unchanged.

    The output bias is *not* scaled: the paper rescales W only, so ``h.W/k + b``.
    ``k == 1`` in ``shared`` mode is a no-op.
    """
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
    # A float32 reduction over millions of entries is off by ~1e-4 relative; a row (hidden-size
    # entries) is exact enough, so reduce the rows in float64 (no float64 copy of the whole head).
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
    """Relative change ``||x_k - x_1|| / ||x_1||`` of the MLM decoder's input ``x`` (the hidden
    states the head's vocabulary projection reads, over the batch's real tokens) when the head is
    rescaled by ``k`` in ``mode`` before the forward pass: what the rescale does to the model
    *besides* dividing the logits. In ``shared`` mode a tied head shrinks the input embeddings by
    ``k`` too; ``untie`` leaves them, so its change is 0. ``batch``: tokenizer output (input_ids,
    attention_mask, ...). ``model`` is not modified (a copy is rescaled)."""
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
