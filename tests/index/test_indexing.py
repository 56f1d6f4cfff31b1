"""The index stage's precision: fp32 (sentence-transformers' vectors exactly) by default, bf16
autocast on request or with ``auto`` on a GPU that supports it. Run here with CPU autocast, the same
code path the GPU takes with device ``cuda``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from helpers.paths import SHARED


def test_auto_is_fp32_on_cpu():
    import contextlib

    import torch

    from lsrbench.model.encoder import encode_autocast

    ctx, resolved = encode_autocast("cpu", "auto")
    assert resolved == "fp32" and isinstance(ctx, contextlib.nullcontext)
    assert encode_autocast("cpu", "fp32")[1] == "fp32"
    ctx, resolved = encode_autocast("cpu", "bf16")
    assert resolved == "bf16" and ctx.fast_dtype == torch.bfloat16


def test_bf16_vectors_are_close_to_fp32():
    import torch
    from sentence_transformers import SparseEncoder

    from lsrbench.index.encode import encode_texts
    from lsrbench.model.encoder import build_sparse_encoder, encode_autocast

    path = SHARED / "models" / "splade-tiny-msmarco"
    if not path.is_dir():
        pytest.skip("../shared not present")
    model = build_sparse_encoder(str(path), 64, device="cpu")
    assert isinstance(model, SparseEncoder)
    texts = [json.loads(line)["text"] for line in open(SHARED / "data" / "vaswani" / "corpus.jsonl")][:60]
    fp32 = encode_texts(model, texts, "document", 16).toarray()
    ctx, _ = encode_autocast("cpu", "bf16")
    with ctx:
        bf16 = encode_texts(model, texts, "document", 16).toarray()
    assert bf16.dtype == np.float32 and bf16.shape == fp32.shape
    assert not np.array_equal(bf16, fp32)  # it really ran in bf16
    cos = (bf16 * fp32).sum(1) / (np.linalg.norm(bf16, axis=1) * np.linalg.norm(fp32, axis=1))
    assert cos.min() > 0.99
    both, either = ((bf16 != 0) & (fp32 != 0)).sum(), ((bf16 != 0) | (fp32 != 0)).sum()
    assert both / either > 0.9  # the same terms, up to those at the relu threshold
    assert not torch.is_autocast_enabled("cpu")  # only inside the block
