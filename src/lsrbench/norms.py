"""The norm stage: size of each backbone's MLM head, the quantity the paper's k compensates for."""

from __future__ import annotations

import torch
from torch import nn

from .rescale import head_is_tied, mlm_head


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
        "frobenius_norm": float(rows.square().sum().sqrt()),
        "mean_row_norm": float(rows.mean()),
        "max_row_norm": float(rows.max()),
        "bias_norm": float(bias.detach().double().norm()) if bias is not None else 0.0,
        "has_bias": bias is not None,
        "vocab_size": int(weight.shape[0]),
        "hidden_size": int(weight.shape[1]),
        "tied": bool(head_is_tied(model)),
    }
