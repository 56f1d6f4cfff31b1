"""SPLADE max pooling fused with the MLM decoder for training, and the probe that checks it against
sentence-transformers'. Written here because ``SpladePooling`` applies ``log1p(relu(.))`` to the full logits,
most of a CPU step; the max commutes with it, so the backward is a gather/scatter."""

from __future__ import annotations

import contextlib
import functools
import logging

from lsrbench.model.families import family_of, replaced_forward

log = logging.getLogger(__name__)

# Elements of one logits block, by device: on a CPU a cache-sized block makes the masked max cheap.
_CHUNK_ELEMENTS = {"cpu": 1 << 18, "cuda": 1 << 23}
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
            elements = _CHUNK_ELEMENTS.get(hidden.device.type, _CHUNK_ELEMENTS["cuda"])
            step = max(64, min(vocab, elements // max(1, b * t)))
            for lo in range(0, vocab, step):
                hi = min(vocab, lo + step)
                logits = F.linear(hidden, weight[lo:hi], None if bias is None else bias[lo:hi])
                logits.masked_fill_(pad, float("-inf"))
                values, positions = logits.max(dim=1)
                out[:, lo:hi] = values
                arg[:, lo:hi] = positions
            ctx.save_for_backward(hidden, weight, arg)
            ctx.bias_dtype = None if bias is None else bias.dtype
            return out

        @staticmethod
        @torch.amp.custom_bwd(device_type="cuda")
        def backward(ctx, grad):
            hidden, weight, arg = ctx.saved_tensors
            b, t, h = hidden.shape
            # Under autocast the input may be bf16 and the weight fp32: accumulate in fp32, return each
            # gradient in its input's dtype.
            work = torch.promote_types(torch.promote_types(hidden.dtype, weight.dtype), torch.float32)
            rows, terms = torch.nonzero(grad, as_tuple=True)
            g = grad[rows, terms].to(work).unsqueeze(-1)
            tokens = rows * t + arg[rows, terms]
            flat = hidden.reshape(b * t, h)
            grad_hidden = grad_weight = grad_bias = None
            # Each gradient in its input's dtype (bf16 input, fp32 weight under autocast).
            if ctx.needs_input_grad[0]:
                grad_hidden = torch.zeros((b * t, h), dtype=work, device=hidden.device).index_add_(
                    0, tokens, g * weight[terms].to(work))
                grad_hidden = grad_hidden.view(b, t, h).to(hidden.dtype)
            if ctx.needs_input_grad[2]:
                grad_weight = torch.zeros(weight.shape, dtype=work, device=weight.device).index_add_(
                    0, terms, g * flat[tokens].to(work)).to(weight.dtype)
            if ctx.bias_dtype is not None and ctx.needs_input_grad[3]:
                grad_bias = grad.to(work).sum(dim=0).to(ctx.bias_dtype)
            return grad_hidden, None, grad_weight, grad_bias

    return MaxPooledDecoder


def splade_pool(hidden, attention_mask, weight, bias):
    """SPLADE max pooling of the decoder's input: ``log1p(relu(max_t (h_t W^T + b)))``."""
    keep = attention_mask != 0
    pooled = _function().apply(hidden, keep, weight, bias)
    # A text without any real token has -inf everywhere: relu makes it 0 (and its gradient 0).
    return pooled.relu().log1p()


def splade_layout_problem(model) -> str | None:
    """None when ``model`` is a fill-mask Transformer + ``SpladePooling('max', 'relu')`` with a linear decoder,
    else why not."""
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
    decoder = family_of(auto_model).decoder(auto_model)
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


UNIT_ROUNDOFF = {"bf16": 2.0**-8, "fp16": 2.0**-11}


def precision_tolerance(precision: str) -> tuple[float, float]:
    """``(rtol, atol) = (2u, 4u)``: how far two SPLADE vectors of one batch computed under autocast in
    ``precision`` (unit roundoff u) may differ, since ``log1p(relu(.))`` has slope below 1 and each side rounds
    once."""
    u = UNIT_ROUNDOFF[precision]
    return 2 * u, 4 * u


def probe(model, reference, fused, *, gradients: bool = False, rtol: float = 1e-5, atol: float = 1e-6,
          grad_rtol: float = PROBE_RTOL, precision: str = "fp32") -> str | None:
    """None when ``fused()`` and ``reference()`` give the same vectors (and, with ``gradients``, gradients) on a
    probe batch, in fp32 and then under autocast in ``precision``; else the reason."""
    params = [p for p in model.parameters() if p.requires_grad] if gradients else []
    was_training = model.training
    model.train(gradients)
    try:
        want, want_grads = _probe_pass(model, reference, params, gradients)
        got, got_grads = _probe_pass(model, fused, params, gradients)
        reason = _differs(got, want, got_grads, want_grads, rtol, atol, grad_rtol)
        if reason is None and precision in UNIT_ROUNDOFF:
            ref_p = _probe_pass(model, reference, params, gradients, precision)
            got_p = _probe_pass(model, fused, params, gradients, precision)
            reason = _differs_at_precision(got_p, ref_p, want_grads, precision)
    except FusedUnsupported as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001
        return f"probe failed{'' if precision == 'fp32' else f' under {precision} autocast'}: {type(exc).__name__}: {exc}"
    finally:
        for p in params:
            p.grad = None
        model.train(was_training)
    return reason


def _probe_pass(model, forward, params, gradients: bool, precision: str = "fp32"):
    import torch

    for p in params:
        p.grad = None
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    autocast = torch.autocast(model.device.type, dtype=dtype) if dtype else contextlib.nullcontext()
    grad_mode = torch.enable_grad() if gradients else torch.inference_mode()
    with grad_mode, torch.random.fork_rng(devices=[model.device] if model.device.type == "cuda" else []):
        torch.manual_seed(0)
        with autocast:
            emb = forward()
        emb = (emb.to_dense() if emb.is_sparse else emb).float()
        if gradients:
            weight = torch.rand(emb.shape, generator=torch.Generator().manual_seed(0)).to(emb.device)
            ((emb * weight).sum() + 1e-2 * emb.sum(dim=0).pow(2).sum()).backward()
    return emb.detach().clone(), [None if p.grad is None else p.grad.detach().float().clone() for p in params]


def _differs(got, want, got_grads, want_grads, rtol, atol, grad_rtol) -> str | None:
    import torch

    if got.shape != want.shape or not torch.allclose(got, want, rtol=rtol, atol=atol):
        return "probe vectors differ from sentence-transformers'"
    # Slack relative to the largest gradient: some gradients are analytically zero and both paths only approximate them.
    scale = max((float(a.abs().max()) for a in want_grads if a is not None), default=1.0) or 1.0
    for a, b in zip(want_grads, got_grads):
        if (a is None) != (b is None):
            return "probe gradients reach different parameters"
        if a is not None and not torch.allclose(b, a, rtol=grad_rtol, atol=grad_rtol * scale):
            return f"probe gradients differ (max abs diff {float((a - b).abs().max()):.3g})"
    return None


def fused_pooling_problem(model, probe_texts: list[str] | None = None, precision: str = "fp32") -> str | None:
    """None when :func:`fused_pooling` reproduces ``model`` (layout, vectors and gradients on a probe batch), else
    why not."""
    return splade_layout_problem(model) or _training_probe(model, probe_texts, precision)


def _differs_at_precision(got, ref, exact_grads, precision: str) -> str | None:
    import torch

    rtol, atol = precision_tolerance(precision)
    if got[0].shape != ref[0].shape or not torch.allclose(got[0], ref[0], rtol=rtol, atol=atol):
        return (f"probe vectors under {precision} autocast differ from sentence-transformers' beyond {precision} "
                f"rounding (max abs diff {float((got[0] - ref[0]).abs().max()):.3g})")
    slack = UNIT_ROUNDOFF[precision] * max((float(a.abs().max()) for a in exact_grads if a is not None), default=1.0)
    for exact, a, b in zip(exact_grads, ref[1], got[1]):
        if (a is None) != (b is None):
            return f"probe gradients under {precision} autocast reach different parameters"
        if exact is not None and float((b - exact).abs().max()) > 2 * float((a - exact).abs().max()) + slack:
            return (f"probe gradients under {precision} autocast further from the fp32 ones than {precision} "
                    f"rounding explains ({float((b - exact).abs().max()):.3g} vs {float((a - exact).abs().max()):.3g})")
    return None


@contextlib.contextmanager
def fused_pooling(model, probe_texts: list[str] | None = None, precision: str = "fp32", check: bool = True):
    """Within the block, ``model`` pools with :func:`splade_pool` (weights and outputs unchanged); yields False,
    keeping sentence-transformers' pooling, when the probe batch disagrees."""
    reason = fused_pooling_problem(model, probe_texts, precision) if check else splade_layout_problem(model)
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
    family = family_of(transformer.auto_model)
    decoder = family.decoder(transformer.auto_model)
    bias = family.decoder_bias(decoder)

    def pass_hidden(x, *args, **kwargs):
        return x  # the model's "logits" become the decoder's input; the pooling applies the decoder

    def pool(self, features):
        features["sentence_embedding"] = splade_pool(features["token_embeddings"], features["attention_mask"],
                                                     decoder.weight, bias)
        if self.embedding_dimension is None:
            self.embedding_dimension = int(decoder.weight.shape[0])
        return features

    with family.capture(decoder, pass_hidden), replaced_forward(pooling, types.MethodType(pool, pooling)):
        yield


def _training_probe(model, texts, precision: str = "fp32") -> str | None:
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

    return probe(model, reference, fused, gradients=True, precision=precision)
