"""Training-time SPLADE pooling fused with the MLM decoder: max over tokens of ``h_t . W[j] + b_j``,
then ``log1p(relu(.))``, without ever holding the ``[batch, tokens, vocab]`` logits or their gradient.

Why our own code: sentence-transformers' ``SpladePooling`` takes the full logits from the model and
applies ``log1p(relu(.))`` to all of them before the max; on a CPU, those vocabulary-sized
elementwise ops and their backward are most of a training step. The max commutes with the
monotone ``log1p(relu(.))`` and its gradient reaches one token per (text, term), so the backward is
a gather/scatter over the active (text, term) pairs instead of two vocabulary-wide matmuls. Values
equal sentence-transformers' exactly; gradients equal them up to float summation order (the
trainer checks this on a probe batch before using it, see :func:`fused_pooling`).
"""

from __future__ import annotations

import contextlib
import functools
import logging

log = logging.getLogger(__name__)

# Elements of one [batch, tokens, chunk] logits block in the forward pass.
_CHUNK_ELEMENTS = 1 << 23
# Relative tolerance of the probe's gradient comparison (float32 summation order only).
PROBE_RTOL = 1e-4


@functools.cache
def _function():
    import torch
    import torch.nn.functional as F

    class MaxPooledDecoder(torch.autograd.Function):
        """``max_t (hidden[b, t] @ W.T + bias)`` over the real tokens of each text: [batch, vocab]."""

        @staticmethod
        @torch.amp.custom_fwd(device_type="cuda")
        def forward(ctx, hidden, keep, weight, bias):
            b, t, h = hidden.shape
            vocab = weight.shape[0]
            out = torch.empty((b, vocab), dtype=hidden.dtype, device=hidden.device)
            arg = torch.empty((b, vocab), dtype=torch.long, device=hidden.device)
            pad = (~keep).unsqueeze(-1)
            step = max(64, min(vocab, _CHUNK_ELEMENTS // max(1, b * t)))
            for lo in range(0, vocab, step):
                hi = min(vocab, lo + step)
                logits = F.linear(hidden, weight[lo:hi], None if bias is None else bias[lo:hi])
                logits.masked_fill_(pad, float("-inf"))
                values, positions = logits.max(dim=1)
                out[:, lo:hi] = values
                arg[:, lo:hi] = positions
            ctx.save_for_backward(hidden, weight, arg)
            ctx.has_bias = bias is not None
            return out

        @staticmethod
        @torch.amp.custom_bwd(device_type="cuda")
        def backward(ctx, grad):
            hidden, weight, arg = ctx.saved_tensors
            b, t, h = hidden.shape
            # Only (text, term) pairs with a non-zero gradient matter: relu zeroes the rest.
            rows, terms = torch.nonzero(grad, as_tuple=True)
            g = grad[rows, terms].unsqueeze(-1)
            tokens = rows * t + arg[rows, terms]
            flat = hidden.reshape(b * t, h)
            grad_hidden = grad_weight = grad_bias = None
            if ctx.needs_input_grad[0]:
                grad_hidden = torch.zeros_like(flat).index_add_(0, tokens, g * weight[terms])
                grad_hidden = grad_hidden.view(b, t, h)
            if ctx.needs_input_grad[2]:
                grad_weight = torch.zeros_like(weight).index_add_(0, terms, g * flat[tokens])
            if ctx.has_bias and ctx.needs_input_grad[3]:
                grad_bias = grad.sum(dim=0)
            return grad_hidden, None, grad_weight, grad_bias

    return MaxPooledDecoder


def splade_pool(hidden, attention_mask, weight, bias):
    """SPLADE max pooling of the decoder's input: ``log1p(relu(max_t (h_t W^T + b)))``."""
    keep = attention_mask != 0
    pooled = _function().apply(hidden, keep, weight, bias)
    # A text without any real token has -inf everywhere: relu makes it 0 (and its gradient 0).
    return pooled.relu().log1p()


@contextlib.contextmanager
def fused_pooling(model, probe_texts: list[str] | None = None):
    """Within the block, ``model`` (a SPLADE ``SparseEncoder``: fill-mask Transformer + max/relu
    SpladePooling) computes its pooled vectors with :func:`splade_pool`; the model's weights, saved
    format and outputs are unchanged. Yields True when the fused path is on, False when the model
    is not one it reproduces (checked on a probe batch: same vectors, gradients within
    :data:`PROBE_RTOL`), in which case sentence-transformers' own pooling is used."""
    from .encode import _FastSplade

    reason = _FastSplade._unsupported(model)
    if reason is None:
        reason = _probe(model, probe_texts)
    if reason is not None:
        log.warning("training with sentence-transformers' SpladePooling (%s)", reason)
        yield False
        return
    with _patched(model):
        yield True


@contextlib.contextmanager
def _patched(model):
    import types

    transformer, pooling = model[0], model[1]
    decoder = transformer.auto_model.get_output_embeddings()
    bias = getattr(decoder, "bias", None)
    bias = bias if bias is not None and bias.ndim == 1 else None

    def pass_hidden(x, *args, **kwargs):
        return x  # the model's "logits" become the decoder's input; the pooling applies the decoder

    def pool(self, features):
        features["sentence_embedding"] = splade_pool(features["token_embeddings"], features["attention_mask"],
                                                     decoder.weight, bias)
        if self.embedding_dimension is None:
            self.embedding_dimension = int(decoder.weight.shape[0])
        return features

    saved = {m: m.__dict__.get("forward") for m in (decoder, pooling)}
    decoder.forward = pass_hidden
    pooling.forward = types.MethodType(pool, pooling)
    try:
        yield
    finally:
        for m, fwd in saved.items():
            if fwd is None:
                del m.forward
            else:
                m.forward = fwd


_PROBE_TEXTS = (
    "the cat sat on the mat",
    "Sparse retrieval with learned term weights over a vocabulary",
    "a",
    "Rescaling the MLM head: W <- W / k before training, tied embeddings kept tied.",
)


def _probe(model, texts) -> str | None:
    """Same vectors and gradients as sentence-transformers' pooling on a probe batch (train mode,
    with the same RNG seed for both passes so dropout draws the same masks); None when they
    agree, else the reason. Vectors are compared at
    1e-5: a vocabulary chunk may go through a different matmul kernel than the full head."""
    import torch

    texts = list(texts or _PROBE_TEXTS)
    was_training = model.training
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    try:
        features = model.preprocess(texts, task="document")
        from sentence_transformers.util import batch_to_device

        features = batch_to_device(features, model.device)
        gen = torch.Generator().manual_seed(0)

        def run():
            for p in params:
                p.grad = None
            with torch.random.fork_rng(devices=[model.device] if model.device.type == "cuda" else []):
                torch.manual_seed(0)
                emb = model(dict(features))["sentence_embedding"]
            emb = emb.to_dense() if emb.is_sparse else emb
            probe_w = torch.rand(emb.shape, generator=gen).to(emb.device, emb.dtype)
            # A loss touching every active term, plus a quadratic (FLOPS-like) part.
            ((emb * probe_w).sum() + 1e-2 * emb.sum(dim=0).pow(2).sum()).backward()
            return emb.detach().clone(), [None if p.grad is None else p.grad.detach().clone() for p in params]

        want, want_grads = run()
        gen.manual_seed(0)
        with _patched(model):
            got, got_grads = run()
    except Exception as exc:  # noqa: BLE001 - anything unexpected: the reference path is always right
        return f"probe failed: {type(exc).__name__}: {exc}"
    finally:
        for p in params:
            p.grad = None
        model.train(was_training)
    if got.shape != want.shape or not torch.allclose(got, want, rtol=1e-5, atol=1e-6):
        return "probe vectors differ from sentence-transformers'"
    # Absolute slack relative to the largest gradient anywhere: some parameters (a bias before a
    # LayerNorm) have analytically zero gradients that both paths only approximate.
    scale = max((float(a.abs().max()) for a in want_grads if a is not None), default=1.0) or 1.0
    for p, a, b in zip(params, want_grads, got_grads):
        if (a is None) != (b is None):
            return "probe gradients reach different parameters"
        if a is not None and not torch.allclose(b, a, rtol=PROBE_RTOL, atol=PROBE_RTOL * scale):
            return f"probe gradients differ (max abs diff {float((a - b).abs().max()):.3g})"
    return None
