"""The fused decoder + SPLADE max pooling used in training gives sentence-transformers' values and
gradients: on raw tensors against the textbook formula (padding, an empty text, ties between
tokens, a head without bias), on random models of the five MLM head families (the probe), and on a
short real training run against the same run with ``SpladePooling`` itself."""

from __future__ import annotations

import json
import math

import pytest

from helpers.paths import SHARED
from helpers.families import FAMILIES, model as _model, tokenizer as _tokenizer


def _reference(hidden, mask, weight, bias):
    """sentence-transformers' SpladePooling on the decoder's logits: mask, relu, log1p, max over tokens."""
    import torch.nn.functional as F

    logits = F.linear(hidden, weight, bias)
    return (logits * mask.unsqueeze(-1).to(logits.dtype)).relu().log1p().max(dim=1).values


@pytest.mark.parametrize("with_bias", [True, False])
def test_values_and_gradients_equal_the_formula(with_bias):
    import torch

    from lsrbench.model import fused_pooling

    torch.manual_seed(0)
    b, t, h, v = 5, 7, 16, 300
    hidden = torch.randn(b, t, h, dtype=torch.float64)
    hidden[1, 2] = hidden[1, 4]  # two identical real tokens: a tie in the max
    mask = torch.ones(b, t, dtype=torch.long)
    mask[0, 4:] = 0  # padding
    mask[3, :] = 0  # a text with no real token at all
    weight = torch.randn(v, h, dtype=torch.float64) * 0.5
    bias = torch.randn(v, dtype=torch.float64) * 0.5 if with_bias else None
    probe = torch.rand(b, v, dtype=torch.float64)

    def grads(fn):
        leaves = [x.detach().clone().requires_grad_(True) for x in (hidden, weight)]
        lb = bias.detach().clone().requires_grad_(True) if bias is not None else None
        out = fn(leaves[0], mask, leaves[1], lb)
        ((out * probe).sum() + (out.sum(dim=0) ** 2).sum()).backward()
        return out.detach(), [leaves[0].grad, leaves[1].grad] + ([lb.grad] if lb is not None else [])

    old = fused_pooling._CHUNK_ELEMENTS
    fused_pooling._CHUNK_ELEMENTS = {"cpu": b * t * 64, "cuda": b * t * 64}  # several vocabulary chunks
    try:
        got, got_grads = grads(fused_pooling.splade_pool)
    finally:
        fused_pooling._CHUNK_ELEMENTS = old
    want, want_grads = grads(_reference)
    # float64 rounding only: a vocabulary chunk may go through another matmul kernel than the full head
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    assert torch.all(got[3] == 0) and (got > 0).any()
    for a, g in zip(want_grads, got_grads):
        torch.testing.assert_close(g, a, rtol=1e-12, atol=1e-12)
    assert torch.all(got_grads[0][0, 4:] == 0)  # padding gets no gradient


def test_mixed_dtypes_under_bf16_autocast():
    """bf16 decoder input with an fp32 weight (what a CPU's bf16 autocast hands the head; issue 21's
    GPU script found the backward failing on it): gradients in their inputs' dtypes, close to
    SpladePooling's under the same autocast."""
    import torch

    from lsrbench.model import fused_pooling

    torch.manual_seed(0)
    b, t, h, v = 4, 6, 16, 200
    mask = torch.ones(b, t, dtype=torch.long)
    mask[0, 3:] = 0
    hidden0, weight0, bias0 = torch.randn(b, t, h), torch.randn(v, h) * 0.5, torch.randn(v) * 0.5
    probe = torch.rand(b, v)

    def grads(fn):
        hidden = hidden0.to(torch.bfloat16).requires_grad_(True)
        weight, bias = weight0.clone().requires_grad_(True), bias0.clone().requires_grad_(True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = fn(hidden, mask, weight, bias)
        (out.float() * probe).sum().backward()
        return out.detach().float(), hidden.grad, weight.grad, bias.grad

    got, want = grads(fused_pooling.splade_pool), grads(_reference)
    assert got[1].dtype == torch.bfloat16 and got[2].dtype == torch.float32
    torch.testing.assert_close(got[0], want[0], rtol=2e-2, atol=2e-2)
    # bf16 logits tie more often than fp32 ones, and the two poolings may pick different tokens of a
    # tie (both valid): most entries agree closely, the whole gradient within a few percent.
    for g, w in zip(got[1:], want[1:]):
        g, w = g.float(), w.float()
        assert torch.isclose(g, w, rtol=5e-2, atol=5e-2).float().mean() > 0.9
        assert torch.linalg.norm(g - w) <= 0.1 * torch.linalg.norm(w)


@pytest.fixture(scope="module", params=FAMILIES)
def family_model(request, tmp_path_factory):
    from lsrbench.model.encoder import build_sparse_encoder

    folder = tmp_path_factory.mktemp(f"fused_{request.param}")
    tok = _tokenizer(folder, request.param)
    _model(request.param, tok, seed=10 + FAMILIES.index(request.param)).save_pretrained(folder)
    return request.param, build_sparse_encoder(str(folder), 64, query_length=12, document_length=40, device="cpu")


def test_probe_accepts_every_head_family_and_restores_the_model(family_model):
    from lsrbench.model.fused_pooling import fused_pooling

    family, model = family_model
    decoder = model[0].auto_model.get_output_embeddings()
    with fused_pooling(model) as on:  # the probe passed: same vectors and gradients as SpladePooling
        assert on, family
        assert "forward" in decoder.__dict__ and "forward" in model[1].__dict__
    assert "forward" not in decoder.__dict__ and "forward" not in model[1].__dict__


def _probe_features(model):
    from sentence_transformers.util import batch_to_device

    from lsrbench.model.fused_pooling import PROBE_TEXTS

    return batch_to_device(model.preprocess(list(PROBE_TEXTS[:4]), task="document"), model.device)


def test_probe_in_bf16_accepts_every_head_family(family_model):
    """Training under bf16 autocast probes the fused path under bf16 autocast (CPU autocast here:
    the decoder input is bf16, which the fused backward once refused)."""
    from lsrbench.model.fused_pooling import _training_probe, fused_pooling

    family, model = family_model
    assert _training_probe(model, None, "bf16") is None, family
    with fused_pooling(model, precision="bf16") as on:
        assert on, family


def _decoder_inputs(model, texts):
    """The MLM decoder's input (fp32, eval mode), the attention mask, and the decoder's weight and bias."""
    import torch

    from sentence_transformers.util import batch_to_device

    features = batch_to_device(model.preprocess(list(texts), task="document"), model.device)
    decoder = model[0].auto_model.get_output_embeddings()
    seen = {}
    handle = decoder.register_forward_pre_hook(lambda _, args: seen.setdefault("x", args[0].detach()))
    try:
        model.eval()
        with torch.inference_mode():
            model(dict(features))
    finally:
        handle.remove()
    return seen["x"], features["attention_mask"], decoder.weight.detach(), decoder.bias.detach()


def _check_one_side_of_the_bound(model, texts):
    """The derivation of precision_tolerance, one side of it: sentence-transformers' pooling under
    bf16 autocast is within half the two-sided bound (u w + 2u) of the exact pooling of the same
    bf16-rounded inputs (what two bf16 paths share: the bound is on what they do not), and beyond
    the fp32 probe's tolerance."""
    import torch

    from lsrbench.model.fused_pooling import UNIT_ROUNDOFF, precision_tolerance

    hidden, mask, weight, bias = _decoder_inputs(model, texts)
    exact = _reference(*(x.bfloat16().double() for x in (hidden,)), mask,
                       *(x.bfloat16().double() for x in (weight, bias)))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        bf16 = _reference(hidden, mask, weight, bias).double()
    rtol, atol = precision_tolerance("bf16")
    assert (rtol, atol) == (2 * UNIT_ROUNDOFF["bf16"], 4 * UNIT_ROUNDOFF["bf16"]) == (2**-7, 2**-6)
    excess = (bf16 - exact).abs() - (rtol * exact + atol) / 2
    assert float(excess.max()) <= 0
    assert not torch.allclose(bf16, exact, rtol=1e-5, atol=1e-6)
    return float((bf16 - exact).abs().max())


def test_bf16_pooling_is_within_the_derived_tolerance(family_model):
    from lsrbench.model.fused_pooling import PROBE_TEXTS

    _check_one_side_of_the_bound(family_model[1], PROBE_TEXTS)


def test_bf16_pooling_of_splade_tiny_is_within_the_derived_tolerance():
    """The same on the real SPLADE-tiny (vocabulary 30,522) and 16 Vaswani abstracts at 256 tokens."""
    from lsrbench.model.encoder import build_sparse_encoder

    path = SHARED / "models" / "splade-tiny-msmarco"
    if not path.is_dir():
        pytest.skip("../shared not present")
    model = build_sparse_encoder(str(path), 256, device="cpu")
    texts = [json.loads(line)["text"] for _, line in zip(range(16), open(SHARED / "data" / "vaswani" / "corpus.jsonl"))]
    assert 0 < _check_one_side_of_the_bound(model, texts)


@pytest.mark.parametrize("flaw", ["vectors", "gradients"])
def test_bf16_probe_rejects_what_bf16_rounding_does_not_explain(family_model, flaw):
    """A fused path that is exact in fp32 but, under autocast only, off by four bf16 roundings in
    its vectors or by half its gradient is refused by the bf16 stage of the probe."""
    import torch

    from lsrbench.model.fused_pooling import _patched, probe

    family, model = family_model
    features = _probe_features(model)

    def reference():
        return model(dict(features))["sentence_embedding"]

    def flawed():
        with _patched(model):
            emb = model(dict(features))["sentence_embedding"]
        if not torch.is_autocast_enabled("cpu"):
            return emb
        if flaw == "vectors":
            return emb * (1 + 2**-6) + 2**-6
        return emb + 0.5 * (emb - emb.detach())  # same values, gradients x 1.5

    assert probe(model, reference, flawed, gradients=True) is None  # fp32 cannot see it
    reason = probe(model, reference, flawed, gradients=True, precision="bf16")
    assert reason is not None and "under bf16 autocast" in reason and flaw in reason, (family, reason)


def test_a_model_it_does_not_reproduce_keeps_spladepooling(family_model):
    _, model = family_model
    from lsrbench.model.fused_pooling import fused_pooling

    pooling = model[1]
    pooling.pooling_strategy = "sum"
    try:
        with fused_pooling(model) as on:
            assert on is False
            assert "forward" not in pooling.__dict__
    finally:
        pooling.pooling_strategy = "max"


def _train(tmp_path, fused: bool, name: str):
    from lsrbench.model.train import train_splade
    from lsrbench.model.train_log import read_train_log

    model = SHARED / "models" / "splade-tiny-msmarco"
    if not model.is_dir():
        pytest.skip("../shared not present")
    rows = [json.loads(line) for line in open(SHARED / "data" / "vaswani" / "corpus.jsonl")][:64]
    triplets = [{"query": r["text"][:40], "positive": r["text"], "negative": rows[(i + 7) % len(rows)]["text"]}
                for i, r in enumerate(rows)]
    from lsrbench.config.schema import with_defaults

    recipe = with_defaults("recipe", {"steps": 4, "batch_size": 4, "learning_rate": 1e-4, "lambda_q": 5e-5,
                                      "lambda_d": 3e-5, "seed": 3, "query_max_length": 16,
                                      "document_max_length": 48, "fused_pooling": fused})
    summary = train_splade(str(model), triplets, recipe, tmp_path / f"{name}_model", tmp_path / f"{name}.jsonl")
    return summary, read_train_log(tmp_path / f"{name}.jsonl")


def test_training_under_bf16_autocast_probes_and_trains_fused(tmp_path, monkeypatch):
    """Where the trainer runs bf16 autocast (forced here on the CPU), the probe runs in bf16 and
    training takes the fused path through real steps (its backward under autocast included)."""
    import lsrbench.model.fused_pooling as fp
    import lsrbench.model.train as train

    probed = []
    real_probe = fp._training_probe
    monkeypatch.setattr(fp, "_training_probe", lambda m, t, precision="fp32": probed.append(precision) or real_probe(m, t, precision))
    monkeypatch.setattr(train, "_precision_flags", lambda precision: {"bf16": True, "fp16": False})
    # transformers refuses bf16 without a GPU unless use_cpu; accelerate autocasts on the CPU alike
    monkeypatch.setattr("transformers.training_args.is_torch_bf16_gpu_available", lambda: True)
    seen_autocast = []
    real_pool = fp.splade_pool
    monkeypatch.setattr(fp, "splade_pool", lambda *a: seen_autocast.append(__import__("torch").is_autocast_enabled("cpu"))
                        or real_pool(*a))
    summary, log = _train(tmp_path, True, "bf16")
    assert probed == ["bf16"] and summary["fused_pooling"] is True
    # the probe's fp32 pass, then its bf16 pass and every training step's poolings under autocast
    assert seen_autocast[0] is False and len(seen_autocast) > 2 and all(seen_autocast[1:])
    assert len(log) == 4 and all(math.isfinite(row["loss"]) for row in log)


def test_training_follows_spladepooling(tmp_path):
    """Four steps with dropout on: the same losses and active dims as SpladePooling's run, up to
    the float summation order of the gradients."""
    fused, fused_log = _train(tmp_path, True, "fused")
    plain, plain_log = _train(tmp_path, False, "plain")
    assert fused["fused_pooling"] is True and plain["fused_pooling"] is False
    assert len(fused_log) == len(plain_log) == 4
    for a, b in zip(plain_log, fused_log):
        for key in ("loss", "ranking_loss", "query_regularizer_loss", "document_regularizer_loss"):
            assert b[key] == pytest.approx(a[key], rel=1e-4, abs=1e-7), (a["step"], key)
        assert b["document_active_dims"] == pytest.approx(a["document_active_dims"], rel=1e-3)
