"""The probe (issue 19): the rescale applied exactly as training applies it, and every measure equal
to what an independent path computes: the x10 twin at k = 10 is the original at k = 1; step 0's
ranking loss, FLOPS terms and gradient norms are those the real trainer logs and applies on the
same batch; activations, scores and the ranking loss agree with sentence-transformers' own
encoder for the five MLM head families; a released checkpoint probes like its MLM checkpoint."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from helpers.families import FAMILIES, WORDS, model as family_model, tokenizer as family_tokenizer
from helpers.paths import shared_or_skip
from lsrbench.errors import InputError
from lsrbench.model.probe import probe_backbone

RECIPE = dict(seed=42, batch_size=8, query_max_length=12, document_max_length=40, lambda_q=5e-5, lambda_d=3e-5,
              fused_pooling=True)
# Everything a probe returns that is not a measure of the model.
LABELS = ("backbone", "k", "k_value", "mode", "head_scale", "head", "non_finite", "fused_pooling", "gradients",
          "batches", "batch_size", "triplets", "query_max_length", "document_max_length")


def _triplets(n: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)

    def text(lo, hi, i):
        return f"{i} " + " ".join(rng.choice(WORDS, size=int(rng.integers(lo, hi))))

    return [{"query": text(2, 6, i), "positive": text(10, 40, i), "negative": text(10, 40, i)} for i in range(n)]


def _measures(result: dict) -> dict:
    return {k: v for k, v in result.items() if k not in LABELS}


def _assert_same_measures(a: dict, b: dict, rel: float) -> None:
    assert set(_measures(a)) == set(_measures(b))
    for key, value in _measures(a).items():
        assert value == pytest.approx(b[key], rel=rel, abs=1e-9), key


@pytest.fixture(scope="module")
def families(tmp_path_factory) -> dict:
    out = {}
    for family in FAMILIES:
        folder = tmp_path_factory.mktemp(f"probe_{family}")
        tok = family_tokenizer(folder, family)
        family_model(family, tok, seed=20 + FAMILIES.index(family)).save_pretrained(folder)
        out[family] = folder
    return out


@pytest.fixture(scope="module")
def tiny_triplets() -> list[dict]:
    """Vaswani pseudo-query triplets (the tiny default's source) from 300 documents."""
    from lsrbench.data.beir import load_beir_folder
    from lsrbench.data.triplets import pseudo_query_triplets

    corpus = load_beir_folder(shared_or_skip("data", "vaswani")).corpus
    return pseudo_query_triplets(dict(list(corpus.items())[:300]), 40, 13)


def test_the_x10_twin_at_k10_is_the_original_at_k1(tiny_triplets):
    """SPLADE-tiny and its config twin (``head_scale: 10``): W*10/10 is W to float rounding, so
    every measure agrees, and so does ``k: auto`` resolved to 10."""
    model = str(shared_or_skip("models", "splade-tiny-msmarco"))
    recipe = {**RECIPE, "query_max_length": 16, "document_max_length": 48}
    (original,) = probe_backbone(model, {"model": model}, [(1, "shared")], tiny_triplets, recipe, n_triplets=16,
                                 backbone="splade-tiny")
    twin = probe_backbone(model, {"model": model, "head_scale": 10}, [(1, "shared"), (10, "shared"), ("auto", "shared")],
                          tiny_triplets, recipe, n_triplets=16, auto_k=10.0, backbone="splade-tiny-x10")
    for rescaled in twin[1:]:
        _assert_same_measures(rescaled, original, rel=2e-4)
        assert rescaled["head"]["frobenius_norm"] == pytest.approx(original["head"]["frobenius_norm"], rel=1e-6)
    assert [r["k"] for r in twin] == ["1", "10", "auto"] and twin[2]["k_value"] == 10.0
    # unrescaled, the twin's scores are far larger and its head norm ten times the original's
    assert twin[0]["score_scale"] > 10 * original["score_scale"]
    assert twin[0]["head"]["frobenius_norm"] == pytest.approx(10 * original["head"]["frobenius_norm"], rel=1e-6)
    assert original["non_finite"] == [] and original["triplets"] == 16 and original["batches"] == 2


@pytest.fixture(scope="module", params=["bert", "splade-tiny"])
def dropout_free(request, families, tmp_path_factory):
    """A checkpoint without dropout (train and eval mode compute the same function)."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    src = families["bert"] if request.param == "bert" else shared_or_skip("models", "splade-tiny-msmarco")
    out = tmp_path_factory.mktemp(f"nodropout_{request.param}")
    model = AutoModelForMaskedLM.from_pretrained(src, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(src).save_pretrained(out)
    return str(out)


class _HeadGradients:
    """A trainer callback keeping the head weight's gradient of every step, as the optimiser gets it."""

    def __new__(cls, model):
        from transformers import TrainerCallback

        from lsrbench.model.rescale import mlm_head

        class Capture(TrainerCallback):
            grads = []

            def on_pre_optimizer_step(self, args, state, control, **kwargs):
                self.grads.append(mlm_head(model[0].auto_model).weight.grad.detach().clone().double())

        capture = Capture()
        capture.grads = []
        return capture


def test_step0_losses_and_gradients_are_the_trainers(dropout_free, tmp_path, monkeypatch):
    """One batch, two steps of the real trainer at learning rate 0 (step 2 sees step 1's weights and
    batch): step 1 runs with the FLOPS weights at 0 (quadratic warm-up), step 2 at full lambda. The
    probe's ranking loss is step 1's logged loss, its FLOPS terms step 2's, its all-parameter
    gradient norm step 1's logged grad_norm, its head gradients those the optimiser received
    (undoing the trainer's clipping to norm 1)."""
    from lsrbench.model import train

    triplets = _triplets(8, seed=3)
    recipe = {**RECIPE, "lambda_q": 3e-2, "lambda_d": 2e-2, "steps": 2, "learning_rate": 0.0, "warmup_steps": 0,
              "regularizer_warmup_ratio": 0.25, "precision": "fp32", "checkpoint_steps": 0}
    captures = []
    monkeypatch.setattr(train, "_trainer", _with_capture(train._trainer, captures))
    train.train_splade(dropout_free, triplets, recipe, tmp_path / "model", tmp_path / "log.jsonl", k=2.0)
    rows = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    monkeypatch.undo()
    (probe,) = probe_backbone(dropout_free, {"model": dropout_free}, [(2, "shared")], triplets, recipe, n_triplets=8)
    assert rows[0]["query_regularizer_weight"] == 0 and rows[1]["query_regularizer_weight"] == recipe["lambda_q"]
    assert probe["ranking_loss"] == pytest.approx(rows[0]["loss"], rel=1e-5)
    assert probe["ranking_loss"] == pytest.approx(rows[1]["ranking_loss"], rel=1e-5)
    assert probe["flops_query_loss"] == pytest.approx(rows[1]["query_regularizer_loss"], rel=1e-5)
    assert probe["flops_document_loss"] == pytest.approx(rows[1]["document_regularizer_loss"], rel=1e-5)
    assert probe["model_grad_norm"] == pytest.approx(rows[0]["grad_norm"], rel=1e-4)
    ranking, total = (g / min(1.0, 1.0 / (row["grad_norm"] + 1e-6)) for g, row in zip(captures[0].grads, rows))
    assert probe["ranking_grad_norm"] == pytest.approx(float(ranking.norm()), rel=1e-4)
    assert probe["total_grad_norm"] == pytest.approx(float(total.norm()), rel=1e-4)
    assert probe["flops_grad_norm"] == pytest.approx(float((total - ranking).norm()), rel=1e-3)
    assert probe["flops_grad_norm"] > 1e-3 * probe["ranking_grad_norm"]  # the FLOPS part is really measured
    assert probe["fused_pooling"] is True


def _with_capture(make_trainer, captures: list):
    def trainer(model, args, dataset, loss, recipe, rows, live, callbacks):
        captures.append(_HeadGradients(model))
        return make_trainer(model, args, dataset, loss, recipe, rows, live, [*callbacks, captures[-1]])

    return trainer


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_probes_as_sentence_transformers_encodes(family, families):
    """At k = 1 and k = 4 (the head rescaled on a copy of the loaded model), the probe's
    activations, scores and ranking loss equal those of a SparseEncoder built at that k the way the
    train stage builds it, encoding with sentence-transformers' own SpladePooling (not fused)."""
    import torch

    from lsrbench.model.encoder import build_sparse_encoder

    path = str(families[family])
    triplets = _triplets(8, seed=FAMILIES.index(family))
    probes = probe_backbone(path, {"model": path}, [(1, "shared"), (4, "shared")], triplets, RECIPE, n_triplets=8)
    for probe in probes:
        model = build_sparse_encoder(path, 40, k=probe["k_value"], query_length=12, document_length=40, device="cpu")
        with torch.no_grad():
            q = model.encode_query([t["query"] for t in triplets], convert_to_tensor=True).to_dense()
            d = model.encode_document([t[c] for c in ("positive", "negative") for t in triplets],
                                      convert_to_tensor=True).to_dense()
        scores = (q @ d.T).double()
        assert probe["ranking_loss"] == pytest.approx(float(torch.nn.functional.cross_entropy(
            scores, torch.arange(8))), rel=1e-4)
        assert probe["positive_score"] == pytest.approx(float(scores.diagonal().mean()), rel=1e-4)
        assert probe["score_scale"] == pytest.approx(float(scores.std(dim=1, correction=0).mean()), rel=1e-4)
        assert probe["document_active_terms"] == pytest.approx(float((d > 0).sum(dim=1).double().mean()))
        assert probe["query_active_share"] == pytest.approx(float((q > 0).sum(dim=1).double().mean()) / q.shape[1])
        assert probe["document_max_weight"] == pytest.approx(float(d.max()), rel=1e-5)
        assert probe["max_logit"] == pytest.approx(float(torch.expm1(d.max(dim=1).values.double()).mean()), rel=1e-4)
        assert probe["non_finite"] == [] and probe["ranking_grad_norm"] > 0 and probe["flops_grad_norm"] > 0
    assert probes[1]["head"]["frobenius_norm"] == pytest.approx(probes[0]["head"]["frobenius_norm"] / 4, rel=1e-6)


def test_a_released_checkpoint_probes_like_its_mlm_checkpoint(families, tmp_path):
    """An ``evaluate_only`` folder (a SparseEncoder with modules.json, as the released stage saves
    it) is loaded as that stage loads it; at k = 1 it is the same model as the MLM checkpoint."""
    from lsrbench.model.encoder import build_sparse_encoder

    path = str(families["roberta"])
    build_sparse_encoder(path, 40, query_length=12, document_length=40, device="cpu").save(str(tmp_path / "released"))
    triplets = _triplets(16, seed=7)
    (released,) = probe_backbone(str(tmp_path / "released"), {"model": "r", "evaluate_only": True}, [(1, "shared")],
                                 triplets, RECIPE, n_triplets=16)
    (mlm,) = probe_backbone(path, {"model": path}, [(1, "shared")], triplets, RECIPE, n_triplets=16)
    _assert_same_measures(released, mlm, rel=1e-5)
    assert released["fused_pooling"] is True and released["batches"] == 2


def test_untie_rescales_only_the_head(families):
    """Untie at k = 1 computes the model itself (same activations, scores and losses; the head's own
    gradient then lacks the tied embedding path, so it is smaller); untie at k = 4 divides the head
    only (the head norm by 4) while shared at k = 4 shrinks the tied input embeddings too."""
    path = str(families["bert"])
    triplets = _triplets(8, seed=1)
    one, untie1, untie4, shared4 = probe_backbone(path, {"model": path}, [(1, "shared"), (1, "untie"), (4, "untie"),
                                                                           (4, "shared")], triplets, RECIPE, n_triplets=8)
    grads = ("ranking_grad_norm", "flops_grad_norm", "total_grad_norm", "model_grad_norm", "flops_to_ranking_grad")
    _assert_same_measures({k: v for k, v in untie1.items() if k not in grads},
                          {k: v for k, v in one.items() if k not in grads}, rel=1e-5)
    assert untie1["ranking_grad_norm"] < one["ranking_grad_norm"]
    assert untie1["backbone"].endswith("+untie") and untie1["head"]["tied"] is False and one["head"]["tied"] is True
    assert untie4["head"]["frobenius_norm"] == pytest.approx(shared4["head"]["frobenius_norm"], rel=1e-6)
    assert untie4["document_active_terms"] != shared4["document_active_terms"]


def test_an_overflowing_head_is_a_result_not_an_error(families):
    """A head so large that the logits overflow: the probe still returns, with None for the
    non-finite measures and their names listed."""
    path = str(families["distilbert"])
    (probe,) = probe_backbone(path, {"model": path, "head_scale": 1e38}, [(1, "shared")], _triplets(8), RECIPE,
                              n_triplets=8, gradients=False)
    assert "ranking_loss" in probe["non_finite"] and probe["ranking_loss"] is None
    assert "ranking_grad_norm" not in probe and probe["gradients"] is False
    assert all(probe[k] is None or math.isfinite(probe[k]) for k in probe if isinstance(probe[k], float))


def test_too_few_triplets_and_a_missing_auto_k_are_input_errors(families):
    path = str(families["albert"])
    with pytest.raises(InputError, match=r"^c\.yaml: recipe\.batch_size: 8 triplets per batch"):
        probe_backbone(path, {"model": path}, [(1, "shared")], _triplets(5), RECIPE, config_file="c.yaml")
    with pytest.raises(InputError, match=r"^c\.yaml: backbones\.b\.k: k auto needs its value"):
        probe_backbone(path, {"model": path}, [("auto", "shared")], _triplets(8), RECIPE, backbone="b",
                       config_file="c.yaml")
