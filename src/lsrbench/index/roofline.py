"""A roofline estimate of a grid's GPU bill: FLOPs counted by ``torch.utils.flop_counter`` on a meta-device
model of the backbone's shape, over a bf16 peak; a training step is three forwards of all but the decoder plus
the decoder once."""

from __future__ import annotations

import functools

from lsrbench.model.families import family_of

__all__ = ["BACKBONE_SHAPES", "DATASHEET_BF16_TFLOPS", "forward_flops", "train_step_flops", "document_tokens",
           "stage_hours", "parameters", "shape_of"]

# The paper's backbones (config/paper.yaml's names) by the hub id whose published config gives their
# shape (:mod:`lsrbench.model.public_configs`); a name not here is looked up as a hub id or folder.
BACKBONE_SHAPES: dict[str, str] = {
    "bert": "bert-base-uncased", "distilbert": "distilbert-base-uncased", "albert": "albert-base-v2",
    "gte-mlm": "Alibaba-NLP/gte-en-mlm-base", "roberta": "roberta-base", "modernbert": "answerdotai/ModernBERT-base",
    "ettin": "jhu-clsp/ettin-encoder-150m",
}
# bf16 dense (no sparsity) tensor-core peaks from the vendors' datasheets, TFLOP/s.
DATASHEET_BF16_TFLOPS = {
    "H200": (989.4, "NVIDIA H200 Tensor Core GPU datasheet (SXM): BF16 1,979 TFLOPS with sparsity, i.e. 989 dense"),
    "H100": (989.4, "NVIDIA H100 Tensor Core GPU datasheet (SXM): BF16 1,979 TFLOPS with sparsity, i.e. 989 dense"),
}


def shape_of(model: str) -> tuple[dict, str]:
    """The config.json a FLOP count of ``model`` is made from, and its source."""
    from lsrbench.model.public_configs import backbone_config

    config, where = backbone_config({"model": BACKBONE_SHAPES.get(model, model)})
    if config is None:
        raise KeyError(where)
    return config, where


@functools.cache
def _meta_model(model: str):
    import torch
    from transformers import AutoModelForMaskedLM

    from lsrbench.model.public_configs import config_object

    built = config_object(shape_of(model)[0])
    built._attn_implementation = "eager"  # attention as matmuls: counted
    with torch.device("meta"):
        return AutoModelForMaskedLM.from_config(built)


def parameters(model: str) -> int:
    """Parameters of ``model``'s ``*ForMaskedLM`` (a tied head counted once): what its checkpoint holds."""
    return sum(p.numel() for p in _meta_model(model).parameters())


def forward_flops(backbone: str, tokens: int) -> dict:
    """FLOPs of one text of ``tokens`` tokens through the MLM model: ``total`` and the ``decoder``'s share."""
    total, decoder = _count(backbone, int(tokens))
    return {"total": total, "decoder": decoder}


@functools.cache
def _count(backbone: str, tokens: int) -> tuple[int, int]:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    model = _meta_model(backbone)
    ids = torch.zeros((1, tokens), dtype=torch.long, device="meta")
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(input_ids=ids)  # no attention mask: a data-dependent check on it cannot run on meta tensors
    vocab, width = family_of(model).decoder(model).weight.shape
    return int(counter.get_total_flops()), 2 * tokens * int(vocab) * int(width)


def train_step_flops(backbone: str, batch: int, query_tokens: int, document_tokens: int, fused: bool = True) -> int:
    """FLOPs of one training step of ``batch`` triplets (query + positive + negative; see the module docstring)."""
    total = 0
    for tokens, count in ((query_tokens, batch), (document_tokens, 2 * batch)):
        f = forward_flops(backbone, tokens)
        rest = f["total"] - f["decoder"]
        total += count * (3 * rest + (1 if fused else 3) * f["decoder"])
    return total


def document_tokens(words: float, cap: int, tokens_per_word: float = 1.3) -> int:
    """Estimated tokens of ``words`` words (about 1.3 per word plus two special tokens), at most ``cap``."""
    return int(min(cap, round(words * tokens_per_word) + 2))


def stage_hours(flops: float, peak_tflops: float, share_of_peak: float = 1.0) -> float:
    """Device-hours of ``flops`` at ``share_of_peak`` of a ``peak_tflops`` peak (1.0: the roofline bound)."""
    return float(flops) / (peak_tflops * 1e12 * share_of_peak) / 3600
