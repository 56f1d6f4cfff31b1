"""SPLADE max pooling (Formal et al., "SPLADE v2", 2021: ``w_j = max_t log(1 + relu(h_t . W[j] + b_j))``)
fused with the MLM decoder for training, without ever holding the ``[batch, tokens, vocab]`` logits
or their gradient; and what training and the index stage's fast encoder share: the recogniser of
the SPLADE layout they reproduce (:func:`splade_layout_problem`) and the probe that checks a fused
computation against sentence-transformers' own on a small batch (:func:`probe`).

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
            # Under autocast the decoder's input can be bf16 while the weight stays fp32 (a CPU's
            # autocast, or a head whose last op is not autocast to fp32): each gradient in its
            # input's dtype (a no-op when both are fp32).
            if ctx.needs_input_grad[0]:
                grad_hidden = torch.zeros_like(flat).index_add_(0, tokens, (g * weight[terms]).to(flat.dtype))
                grad_hidden = grad_hidden.view(b, t, h)
            if ctx.needs_input_grad[2]:
                grad_weight = torch.zeros_like(weight).index_add_(0, terms, (g * flat[tokens]).to(weight.dtype))
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


def splade_layout_problem(model) -> str | None:
    """None when ``model`` is exactly a fill-mask ``Transformer`` + ``SpladePooling('max', 'relu')``
    SparseEncoder whose decoder is a linear map (what the fused computations reproduce), else why not."""
    try:
        from sentence_transformers import SparseEncoder
        from sentence_transformers.base.modules import Transformer
        from sentence_transformers.sparse_encoder.modules import SpladePooling
    except ImportError as exc:  # pragma: no cover - pinned dependency
        return f"sentence-transformers layout not recognised: {exc}"
    if not isinstance(model, SparseEncoder):
        return f"not a SparseEncoder: {type(model).__name__}"
    modules = list(model._modules.values())
    if len(modules) != 2:
        return f"{len(modules)} modules, expected Transformer + SpladePooling"
    transformer, pooling = modules
    if not isinstance(transformer, Transformer) or getattr(transformer, "transformer_task", None) != "fill-mask":
        return f"first module {type(transformer).__name__} is not a fill-mask Transformer"
    if getattr(transformer, "query_expansion", None) is not None:
        return "query expansion"
    if not isinstance(pooling, SpladePooling):
        return f"second module {type(pooling).__name__} is not SpladePooling"
    if pooling.pooling_strategy != "max" or pooling.activation_function != "relu":
        return f"SpladePooling({pooling.pooling_strategy!r}, {pooling.activation_function!r})"
    auto_model = getattr(transformer, "auto_model", None)
    decoder = auto_model.get_output_embeddings() if hasattr(auto_model, "get_output_embeddings") else None
    weight = getattr(decoder, "weight", None)
    if decoder is None or weight is None or weight.ndim != 2:
        return "no linear output embeddings"
    try:
        if model._can_flatten_inputs():
            return "flattened (unpadded) inputs"
    except Exception:  # noqa: BLE001
        pass
    return None


class FusedUnsupported(Exception):
    """A fused computation cannot reproduce this model's forward pass (the reason is the message)."""


PROBE_TEXTS = (
    "the cat sat on the mat",
    "Sparse retrieval with learned term weights over a vocabulary",
    "a",
    "Rescaling the MLM head: W <- W / k before training, tied embeddings kept tied.",
    "The quick brown fox jumps over the lazy dog, twice: the quick brown fox jumps over the lazy dog.",
)


def probe(model, reference, fused, *, gradients: bool = False, rtol: float = 1e-5, atol: float = 1e-6,
          grad_rtol: float = PROBE_RTOL) -> str | None:
    """Whether ``fused()`` gives the vectors ``reference()`` gives (both: [batch, vocab] tensors of
    the same probe batch), within ``rtol``/``atol``; with ``gradients``, in train mode (both
    passes draw the same dropout masks) and with the same gradients of a loss touching every
    active term plus a quadratic (FLOPS-like) part, within ``grad_rtol`` of the largest gradient.
    None when they agree, else the reason. Anything unexpected is a reason too: the reference
    path is always right."""
    import torch

    params = [p for p in model.parameters() if p.requires_grad] if gradients else []
    was_training = model.training
    model.train(gradients)
    gen = torch.Generator().manual_seed(0)

    def run(forward):
        for p in params:
            p.grad = None
        grad_mode = torch.enable_grad() if gradients else torch.inference_mode()
        with grad_mode, torch.random.fork_rng(devices=[model.device] if model.device.type == "cuda" else []):
            torch.manual_seed(0)
            emb = forward()
            emb = emb.to_dense() if emb.is_sparse else emb
            if gradients:
                weight = torch.rand(emb.shape, generator=gen).to(emb.device, emb.dtype)
                ((emb * weight).sum() + 1e-2 * emb.sum(dim=0).pow(2).sum()).backward()
        return emb.detach().float().clone(), [None if p.grad is None else p.grad.detach().clone() for p in params]

    try:
        want, want_grads = run(reference)
        gen.manual_seed(0)
        got, got_grads = run(fused)
    except FusedUnsupported as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001
        return f"probe failed: {type(exc).__name__}: {exc}"
    finally:
        for p in params:
            p.grad = None
        model.train(was_training)
    if got.shape != want.shape or not torch.allclose(got, want, rtol=rtol, atol=atol):
        return "probe vectors differ from sentence-transformers'"
    # Absolute slack relative to the largest gradient anywhere: some parameters (a bias before a
    # LayerNorm) have analytically zero gradients that both paths only approximate.
    scale = max((float(a.abs().max()) for a in want_grads if a is not None), default=1.0) or 1.0
    for a, b in zip(want_grads, got_grads):
        if (a is None) != (b is None):
            return "probe gradients reach different parameters"
        if a is not None and not torch.allclose(b, a, rtol=grad_rtol, atol=grad_rtol * scale):
            return f"probe gradients differ (max abs diff {float((a - b).abs().max()):.3g})"
    return None


@contextlib.contextmanager
def fused_pooling(model, probe_texts: list[str] | None = None):
    """Within the block, ``model`` (a SPLADE ``SparseEncoder``: fill-mask Transformer + max/relu
    SpladePooling) computes its pooled vectors with :func:`splade_pool`; the model's weights, saved
    format and outputs are unchanged. Yields True when the fused path is on, False when the model
    is not one it reproduces (checked on a probe batch: same vectors, gradients within
    :data:`PROBE_RTOL`), in which case sentence-transformers' own pooling is used."""
    reason = splade_layout_problem(model) or _training_probe(model, probe_texts)
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


def _training_probe(model, texts) -> str | None:
    """:func:`probe` of the training-time fusion: same vectors (at 1e-5: a vocabulary chunk may go
    through a different matmul kernel than the full head) and gradients as SpladePooling."""
    from sentence_transformers.util import batch_to_device

    try:
        features = batch_to_device(model.preprocess(list(texts or PROBE_TEXTS[:4]), task="document"), model.device)
    except Exception as exc:  # noqa: BLE001
        return f"probe failed: {type(exc).__name__}: {exc}"

    def reference():
        return model(dict(features))["sentence_embedding"]

    def fused():
        with _patched(model):
            return model(dict(features))["sentence_embedding"]

    return probe(model, reference, fused, gradients=True)
