"""Released sparse encoders (evaluate_only backbones) in both formats they come in: a
SparseEncoder folder is used as it is, a SPLADE-trained *ForMaskedLM checkpoint becomes SPLADE with
its head untouched; both give the vectors of the model they are."""

from __future__ import annotations

import torch

from helpers.paths import shared_or_skip
from lsrbench.model.checkpoint import load_mlm, transformer_folder
from lsrbench.model.encoder import build_sparse_encoder, is_sparse_encoder, released_sparse_encoder
from lsrbench.model.rescale import head_norms

TEXTS = ["the spectrum of a hydrogen atom", "measurement of the magnetic field of a long solenoid"]


def _dense(model, texts, kind="document"):
    encode = model.encode_document if kind == "document" else model.encode_query
    return encode(texts, convert_to_tensor=True).to_dense()


def test_mlm_checkpoint_becomes_splade_at_k1_with_the_recipe_lengths():
    path = str(shared_or_skip("models", "splade-tiny-msmarco"))
    assert not is_sparse_encoder(path)
    model, fmt = released_sparse_encoder(path, 16, 48)
    assert fmt == "mlm" and model.max_seq_length == 48
    reference = build_sparse_encoder(path, 48, query_length=16, document_length=48, device="cpu")
    assert torch.equal(_dense(model, TEXTS), _dense(reference, TEXTS))
    assert torch.equal(_dense(model, TEXTS, "query"), _dense(reference, TEXTS, "query"))


def test_sparse_encoder_folder_is_used_as_it_is(tmp_path):
    path = str(shared_or_skip("models", "splade-tiny-msmarco"))
    original = build_sparse_encoder(path, 40, query_length=12, document_length=40, device="cpu")
    original.save(str(tmp_path / "released"))
    folder = str(tmp_path / "released")
    assert is_sparse_encoder(folder)
    model, fmt = released_sparse_encoder(folder, 16, 48)  # its own lengths win over the recipe's
    assert fmt == "sparse_encoder" and model.max_seq_length == 40
    assert torch.equal(_dense(model, TEXTS), _dense(original, TEXTS))
    # the norm stage reads the head of its transformer module: the checkpoint's own head
    assert transformer_folder(folder) == folder
    norms = head_norms(load_mlm(transformer_folder(folder), "test", "model"))
    assert norms["frobenius_norm"] == head_norms(load_mlm(path, "test", "model"))["frobenius_norm"]
