"""A roofline estimate of the GPU bill of a grid (issue 21): FLOPs per encoded text and per training
step of each backbone, counted by ``torch.utils.flop_counter`` on a model of its published shape
built on the meta device (no weights, no compute, no download), over a bf16 matmul peak (measured
on the GPU, or a vendor's datasheet figure). FLOPs / peak is a lower bound of the time (100% of
the peak); :func:`stage_hours` also gives it at a stated share of the peak.

What is counted: every matrix product of the ``*ForMaskedLM`` forward (eager attention, so the
``T^2`` products are counted as executed; sliding-window layers compute full products under a
mask there), i.e. backbone, head transform and the decoder over every token. A training step
(SpladeLoss on (query, positive, negative) triplets, lsrbench's fused pooling) is three times the
forward of everything but the decoder (backward of a matmul = two matmuls of its size) plus the
decoder's forward once: the fused pooling's backward is a gather/scatter over the active
(text, term) pairs, not a matmul (``fused=False``, sentence-transformers' ``SpladePooling``:
three times the decoder too).
"""

from __future__ import annotations

import functools

from lsrbench.model.families import FAMILIES, family_of

__all__ = ["BACKBONE_SHAPES", "DATASHEET_BF16_TFLOPS", "forward_flops", "train_step_flops", "document_tokens",
           "stage_hours"]

# Published shapes of the paper's backbones (their hub config.json): a family of
# :mod:`lsrbench.model.families` and its config's settings.
BACKBONE_SHAPES: dict[str, tuple[str, dict, str]] = {
    "bert": ("bert", {}, "bert-base-uncased: transformers' BertConfig defaults (12 x 768, vocab 30,522)"),
    "distilbert": ("distilbert", {}, "distilbert-base-uncased: DistilBertConfig defaults (6 x 768)"),
    "albert": ("albert", dict(embedding_size=128, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                              intermediate_size=3072, vocab_size=30000), "albert-base-v2 (12 x 768, embedding 128)"),
    "gte-mlm": ("bert", dict(vocab_size=30528), "Alibaba-NLP/gte-en-mlm-base: its own architecture (remote "
                                             "code) counted as BERT-base's widths, vocab 30,528 (approximate)"),
    "roberta": ("roberta", dict(vocab_size=50265, max_position_embeddings=514, type_vocab_size=1),
                "roberta-base (12 x 768, vocab 50,265)"),
    "modernbert": ("modernbert", {}, "answerdotai/ModernBERT-base: ModernBertConfig defaults (22 x 768, vocab 50,368)"),
    "ettin": ("modernbert", {}, "jhu-clsp/ettin-encoder-150m: ModernBERT-base's shape (22 x 768, vocab 50,368)"),
}

# bf16 dense (no sparsity) tensor-core peaks from the vendors' datasheets, TFLOP/s.
DATASHEET_BF16_TFLOPS = {
    "H200": (989.4, "NVIDIA H200 Tensor Core GPU datasheet (SXM): BF16 1,979 TFLOPS with sparsity, i.e. 989 dense"),
    "H100": (989.4, "NVIDIA H100 Tensor Core GPU datasheet (SXM): BF16 1,979 TFLOPS with sparsity, i.e. 989 dense"),
}


@functools.cache
def _meta_model(backbone: str):
    import torch
    import transformers

    family, kwargs, _ = BACKBONE_SHAPES[backbone]
    spec = FAMILIES[family]
    config = getattr(transformers, spec.config_class)(**kwargs)
    config._attn_implementation = "eager"  # attention as matmuls: counted
    with torch.device("meta"):
        return getattr(transformers, spec.masked_lm)(config)


def forward_flops(backbone: str, tokens: int) -> dict:
    """FLOPs of one text of ``tokens`` tokens through ``backbone``'s MLM model: ``total`` and the
    ``decoder``'s share (the vocabulary projection of every token)."""
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
    """Estimated tokens of a text of ``words`` words: subword tokens (about 1.3 per English word for
    WordPiece and the BPE vocabularies here) plus the two special tokens, at most ``cap``."""
    return int(min(cap, round(words * tokens_per_word) + 2))


def stage_hours(flops: float, peak_tflops: float, share_of_peak: float = 1.0) -> float:
    """Device-hours of ``flops`` at ``share_of_peak`` of a ``peak_tflops`` peak (1.0: the roofline bound)."""
    return float(flops) / (peak_tflops * 1e12 * share_of_peak) / 3600
