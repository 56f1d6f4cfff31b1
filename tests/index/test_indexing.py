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


def test_evaluation_lengths_replace_the_training_lengths(tmp_path):
    """A model trained (saved) with query length 8 and evaluated with 512: the index stage's query
    vectors equal an untruncated ``encode_query`` of the checkpoint (512 = its position limit),
    not the 8-token ones the saved model would give."""
    from sentence_transformers import SparseEncoder

    from lsrbench.data.beir import load_beir_folder
    from lsrbench.index.indexing import index_dataset
    from lsrbench.index.sparse import load_sparse
    from lsrbench.model.encoder import build_sparse_encoder

    path = SHARED / "models" / "splade-tiny-msmarco"
    if not path.is_dir():
        pytest.skip("../shared not present")
    trained = tmp_path / "model"
    build_sparse_encoder(str(path), 8, query_length=8, document_length=8, device="cpu").save(str(trained))
    full = load_beir_folder(SHARED / "data" / "vaswani")
    # long queries: documents used as queries (most are far longer than 8 tokens)
    ids = list(full.corpus)[:12]
    from dataclasses import replace

    ds = replace(full, corpus={i: full.corpus[i] for i in ids[:6]}, queries={f"q{i}": full.corpus[i] for i in ids})
    out = index_dataset(str(trained), ds, 4, str(tmp_path / "q.npz"), str(tmp_path / "d.npz"),
                        query_max_length=512, document_max_length=512)
    assert out["lengths"] == {"query_length": 512, "document_length": 512}
    got, got_ids = load_sparse(str(tmp_path / "q.npz"))
    assert got_ids == list(ds.queries)
    untruncated = build_sparse_encoder(str(path), 512, device="cpu")
    want = untruncated.encode_query(list(ds.queries.values()), convert_to_tensor=True).to_dense().numpy()
    np.testing.assert_allclose(got.toarray(), want, rtol=0, atol=1e-4)
    assert (got.toarray() != 0).sum() == (want != 0).sum()
    short = SparseEncoder(str(trained), device="cpu").encode_query(list(ds.queries.values()), convert_to_tensor=True)
    assert np.abs(short.to_dense().numpy() - want).max() > 0.1  # the training length really truncated them
    docs, _ = load_sparse(str(tmp_path / "d.npz"))
    want_docs = untruncated.encode_document([ds.corpus[i] for i in ds.corpus], convert_to_tensor=True).to_dense().numpy()
    np.testing.assert_allclose(docs.toarray(), want_docs, rtol=0, atol=1e-4)


def test_evaluation_lengths_are_capped_at_the_position_table(tiny_roberta):
    from lsrbench.model.encoder import build_sparse_encoder, position_limit, set_encode_lengths

    model = build_sparse_encoder(str(tiny_roberta), 16, query_length=16, document_length=16, device="cpu")
    assert position_limit(model[0]) == 160 - 2  # RoBERTa positions start after padding_idx (1)
    assert set_encode_lengths(model, 512, 100) == {"query_length": 158, "document_length": 100}
    long = " ".join(["sparse retrieval"] * 200)
    vec = model.encode_query([long], convert_to_tensor=True)  # would fail past the position table
    assert vec.shape[0] == 1


@pytest.mark.parametrize("keep", [0, 5, 100, None])  # bytes kept: no header, part of it, header only, half
def test_a_truncated_trained_model_fails_the_index_job_in_one_line(tiny_roberta, vaswani_slice, tmp_path, keep):
    """A finished run's ``model/model.safetensors`` cut short (issue 22 item 7): the index job's
    load is one InputError naming the file and the way out, not safetensors' ``SafetensorError``."""
    from lsrbench.data.beir import load_beir_folder
    from lsrbench.errors import InputError
    from lsrbench.index.indexing import index_dataset
    from lsrbench.model.encoder import build_sparse_encoder

    trained = tmp_path / "run" / "model"
    build_sparse_encoder(str(tiny_roberta), 16, device="cpu").save(str(trained))
    weights = trained / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[:len(data) // 2 if keep is None else keep])
    ds = load_beir_folder(vaswani_slice)
    with pytest.raises(InputError) as raised:
        index_dataset(str(trained), ds, 4, str(tmp_path / "q.npz"), str(tmp_path / "d.npz"))
    assert raised.value.file == str(weights)
    assert raised.value.message.startswith("cannot load the trained model: ")
    assert "truncated" in raised.value.message and f"delete {tmp_path / 'run'} to train it again" in raised.value.message
    assert not (tmp_path / "q.npz").exists() and not (tmp_path / "d.npz").exists()


def test_the_safetensors_header_check_agrees_with_safetensors(tiny_roberta, tmp_path):
    """:func:`safetensors_problem` (no torch, a few kB read) finds a file whole exactly when
    safetensors itself loads it, over cuts at every region of the file."""
    from safetensors import SafetensorError, safe_open

    from lsrbench.model.weights_header import safetensors_problem

    data = (tiny_roberta / "model.safetensors").read_bytes()
    header_end = 8 + int.from_bytes(data[:8], "little")
    for cut in (0, 4, 8, 50, header_end - 1, header_end, header_end + 1, len(data) - 1, len(data)):
        path = tmp_path / f"cut{cut}.safetensors"
        path.write_bytes(data[:cut])
        try:
            with safe_open(str(path), framework="np") as fh:
                for name in fh.keys():
                    fh.get_tensor(name)
            loads = True
        except (SafetensorError, OSError, ValueError):
            loads = False
        assert (safetensors_problem(path) is None) == loads, cut
    (tmp_path / "bad.safetensors").write_bytes((5).to_bytes(8, "little") + b"[1,2]")
    assert "not a safetensors header" in safetensors_problem(tmp_path / "bad.safetensors")
