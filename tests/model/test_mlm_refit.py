"""The MLM re-fit (lsrbench.model.mlm_refit; docs/miniature.md): the masked-only loss is the model's
own MLM loss, the head is re-initialised but for W_head, and a short re-fit lowers the held-out
MLM loss of real texts and saves a checkpoint the other stages load."""

from __future__ import annotations

import json

import pytest
import torch

from lsrbench.model.mlm_refit import head_parameters, held_out_loss, masked_lm_loss, refit_mlm, reinit_head, split_texts


def _texts(folder) -> list[str]:
    return [json.loads(line)["text"] for line in open(folder / "corpus.jsonl", encoding="utf-8")]


def _load(folder):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    return AutoModelForMaskedLM.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)


def test_masked_only_loss_is_the_models_own(tiny_roberta, vaswani_slice):
    """The decoder at the masked positions only gives the value of ``*ForMaskedLM``'s own loss."""
    from transformers import DataCollatorForLanguageModeling

    model, tok = _load(tiny_roberta)
    model.eval()
    batch = DataCollatorForLanguageModeling(tok, mlm_probability=0.15, seed=3)(
        [dict(tok(t, truncation=True, max_length=64)) for t in _texts(vaswani_slice)[:8]])
    assert int((batch["labels"] != -100).sum()) > 10
    with torch.no_grad():
        ours, theirs = masked_lm_loss(model, batch), model(**batch).loss
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6)


def test_reinit_head_keeps_w_head_and_resets_the_rest(tiny_roberta):
    """Every head parameter but the (tied) vocabulary matrix gets transformers' initialisation:
    LayerNorm at ones/zeros, the output bias at zero; W_head and the encoder are untouched; the
    same seed, the same head."""
    model, _ = _load(tiny_roberta)
    with torch.no_grad():
        for p in head_parameters(model).values():
            p.add_(0.5)  # a head that was trained for something else
    matrix = model.get_output_embeddings().weight.detach().clone()
    encoder = {n: p.detach().clone() for n, p in model.named_parameters() if n not in head_parameters(model)}
    names = reinit_head(model, seed=7)
    assert names == sorted(head_parameters(model)) and "lm_head.dense.weight" in names
    assert torch.equal(model.get_output_embeddings().weight, matrix)
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight  # still tied
    for n, p in model.named_parameters():
        if n in encoder:
            assert torch.equal(p, encoder[n]), n
    assert torch.equal(model.lm_head.layer_norm.weight, torch.ones_like(model.lm_head.layer_norm.weight))
    assert torch.count_nonzero(model.lm_head.bias) == 0
    first = model.lm_head.dense.weight.detach().clone()
    assert 0 < float(first.std()) < 0.1  # normal(0, initializer_range = 0.02)
    again, _ = _load(tiny_roberta)
    reinit_head(again, seed=7)
    assert torch.equal(again.lm_head.dense.weight, first)


def test_split_texts_is_seeded_and_disjoint():
    texts = [f"text {i}" for i in range(50)]
    train, held = split_texts(texts, 10, seed=0)
    assert len(held) == 10 and len(train) == 40 and not set(train) & set(held)
    assert split_texts(texts, 10, seed=0) == (train, held) and split_texts(texts, 10, seed=1) != (train, held)


def test_refit_lowers_held_out_loss_and_saves_a_loadable_mlm(tiny_roberta, vaswani_slice, tmp_path):
    """A short re-fit on real Vaswani texts: the held-out MLM loss (fixed masks) goes down from the
    re-initialised head's, the per-step log has every step, and the saved folder is a tied
    *ForMaskedLM checkpoint whose held-out loss is the summary's."""
    texts = _texts(vaswani_slice)
    rows: list[dict] = []
    settings = {"steps": 30, "batch_size": 16, "learning_rate": 5e-3, "held_out": 40, "max_length": 64, "seed": 0}
    summary = refit_mlm(str(tiny_roberta), texts, tmp_path / "refit", settings, log_rows=rows)
    assert [r["step"] for r in rows] == list(range(1, 31))
    assert summary["held_out_texts"] == 40 and summary["training_texts"] == len(texts) - 40
    assert summary["held_out_loss_after"] < summary["held_out_loss_before"] - 0.3
    model, tok = _load(tmp_path / "refit")
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight
    _, held = split_texts(texts, 40, 0)
    assert held_out_loss(model, tok, held, 64, 0.15) == pytest.approx(summary["held_out_loss_after"], rel=1e-5)


def test_refit_is_deterministic(tiny_roberta, vaswani_slice, tmp_path):
    texts = _texts(vaswani_slice)[:120]
    settings = {"steps": 4, "batch_size": 8, "held_out": 16, "max_length": 32}
    refit_mlm(str(tiny_roberta), texts, tmp_path / "a", settings)
    refit_mlm(str(tiny_roberta), texts, tmp_path / "b", settings)
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == (tmp_path / "b" / "model.safetensors").read_bytes()


def test_a_model_of_no_known_family_is_refused(tiny_roberta):
    class Unknown(torch.nn.Module):
        def get_output_embeddings(self):
            return torch.nn.Linear(2, 3)

    with pytest.raises(ValueError, match="no registered backbone family"):
        head_parameters(Unknown())


def test_a_head_only_refit_leaves_the_encoder_and_w_head_as_they_were(tiny_roberta, vaswani_slice, tmp_path):
    """``train: head``: only the re-initialised head parameters move; the encoder and W_head (tied:
    the input embeddings) are the checkpoint's, bit for bit, and the held-out loss still goes down."""
    texts = _texts(vaswani_slice)
    settings = {"steps": 20, "batch_size": 16, "learning_rate": 1e-2, "held_out": 40, "max_length": 64, "train": "head"}
    summary = refit_mlm(str(tiny_roberta), texts, tmp_path / "head", settings)
    before, _ = _load(tiny_roberta)
    after, _ = _load(tmp_path / "head")
    head = head_parameters(before)
    assert summary["trained_parameter_count"] == sum(p.numel() for p in head.values())
    moved = {n for (n, a), (_, b) in zip(before.named_parameters(), after.named_parameters()) if not torch.equal(a, b)}
    assert moved == set(head) and summary["held_out_loss_after"] < summary["held_out_loss_before"]
