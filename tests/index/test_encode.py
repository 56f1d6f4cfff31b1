"""The fast encoder (captured decoder input, chunked vocabulary, max before log1p(relu)) returns what
sentence-transformers' ``SparseEncoder.encode_document`` / ``encode_query`` return.

Random tiny ``*ForMaskedLM`` models of five families (their MLM head transforms differ: BERT
``cls.predictions.transform``, DistilBERT ``vocab_transform``/``vocab_layer_norm``, ALBERT
``predictions.dense`` with a factorised embedding, RoBERTa ``lm_head.dense/layer_norm``,
ModernBERT ``head``), built with the project's own ``build_sparse_encoder`` with different query
and document lengths, on texts of very different lengths (padding), equal character lengths
(ties in the length sort) and duplicates; then the real SPLADE-tiny checkpoint when ``../shared``
is present. Equality means the same non-zero set and weights within 1e-4 (on CPU they are in
fact equal to float32 rounding, relative 1e-6, which is also checked: bit-identical on most CPUs,
but MKL may choose another kernel for the gathered padding layout's matrix shape, seen on AMD EPYC).
"""

from __future__ import annotations


import numpy as np
import pytest

from helpers.families import FAMILIES, QUERY_LENGTH, DOCUMENT_LENGTH, model as _model, texts as _texts, tokenizer as _tokenizer
from helpers.paths import SHARED

def _assert_same(got, want_sparse, exact=True):
    want = want_sparse.coalesce()
    dense_want = want.to_dense().numpy()
    assert got.shape == dense_want.shape
    got_dense = got.toarray()
    np.testing.assert_array_equal(got_dense != 0, dense_want != 0)  # same non-zero set
    np.testing.assert_allclose(got_dense, dense_want, rtol=0, atol=1e-4)
    if exact:  # float32 rounding only: MKL may pick another kernel for the gathered padding layout
        np.testing.assert_allclose(got_dense, dense_want, rtol=1e-6, atol=0)
    assert got.has_canonical_format and got.nnz == int((want.values() != 0).sum())




@pytest.fixture(scope="module", params=FAMILIES)
def family_encoder(request, tmp_path_factory):
    from lsrbench.model.encoder import build_sparse_encoder

    folder = tmp_path_factory.mktemp(f"tiny_{request.param}")
    tok = _tokenizer(folder, request.param)
    _model(request.param, tok, seed=FAMILIES.index(request.param)).save_pretrained(folder)
    model = build_sparse_encoder(str(folder), 64, query_length=QUERY_LENGTH, document_length=DOCUMENT_LENGTH, device="cpu")
    return request.param, model


@pytest.mark.parametrize("batch_size,segmented", [(4, False), (16, True)])
def test_fast_encoder_equals_sentence_transformers(family_encoder, batch_size, segmented, monkeypatch):
    """Both pooling layouts: padded with duplicated real tokens (default) and real tokens only, segment by segment."""
    from lsrbench.index.encode import encode_texts, fast_path_available
    from lsrbench.index.fast_splade import FastSplade as _FastSplade

    monkeypatch.setattr(_FastSplade, "segmented", segmented)
    family, model = family_encoder
    assert fast_path_available(model), family
    texts = _texts()
    for kind, encode in (("document", model.encode_document), ("query", model.encode_query)):
        got = encode_texts(model, texts, kind, batch_size)
        want = encode(texts, batch_size=batch_size, convert_to_sparse_tensor=True)
        _assert_same(got, want)
    # The lengths were really honoured: a long text's query vector differs from its document vector.
    q = encode_texts(model, [texts[-1]], "query", 2)
    d = encode_texts(model, [texts[-1]], "document", 2)
    assert (q != d).nnz > 0


def test_max_active_dims_is_honoured(family_encoder):
    from lsrbench.index.encode import encode_texts

    _, model = family_encoder
    texts = _texts()[:20]
    old = model.max_active_dims
    model.max_active_dims = 7
    try:
        got = encode_texts(model, texts, "document", 8)
        want = model.encode_document(texts, batch_size=8, convert_to_sparse_tensor=True)
    finally:
        model.max_active_dims = old
    assert np.diff(got.indptr).max() <= 7
    _assert_same(got, want)


def test_unrecognised_models_take_the_plain_path(family_encoder):
    """Sum pooling is not max pooling; logits changed after the decoder break the capture's premise."""
    from sentence_transformers import SparseEncoder
    from sentence_transformers.sparse_encoder.modules import SpladePooling

    from lsrbench.index.encode import encode_texts, fast_path_available

    family, model = family_encoder
    texts = _texts()[:16]
    summed = SparseEncoder(modules=[model[0], SpladePooling("sum")], device="cpu")
    assert not fast_path_available(summed)
    _assert_same(encode_texts(summed, texts, "document", 8), summed.encode_document(texts, batch_size=8))

    auto_model = model[0].auto_model
    forward = auto_model.forward

    def doubled(*args, **kwargs):  # sentence-transformers calls ``auto_model.forward`` itself
        out = forward(*args, **kwargs)
        out["logits"] = out["logits"] * 2 - 0.1
        return out

    auto_model.forward = doubled
    try:
        assert not fast_path_available(model)
        _assert_same(encode_texts(model, texts, "query", 8), model.encode_query(texts, batch_size=8))
    finally:
        del auto_model.forward
    assert fast_path_available(model)


def test_empty_input(family_encoder):
    from lsrbench.index.encode import encode_texts

    _, model = family_encoder
    out = encode_texts(model, [], "document")
    assert out.shape == (0, model[0].auto_model.config.vocab_size)


MODEL = SHARED / "models" / "splade-tiny-msmarco"
VASWANI = SHARED / "data" / "vaswani"


def test_real_checkpoint_on_vaswani():
    if not (MODEL / "config.json").is_file() or not (VASWANI / "corpus.jsonl").is_file():
        pytest.skip(f"{MODEL} or {VASWANI} not present")
    import json

    from lsrbench.index.encode import encode_texts, fast_path_available
    from lsrbench.model.encoder import build_sparse_encoder

    model = build_sparse_encoder(str(MODEL), 128, query_length=32, document_length=128, device="cpu")
    assert fast_path_available(model)
    with open(VASWANI / "corpus.jsonl") as fh:
        docs = [json.loads(line)["text"] for _, line in zip(range(100), fh)]
    with open(VASWANI / "queries.jsonl") as fh:
        queries = [json.loads(line)["text"] for line in fh][:40]
    docs.append(" ".join(docs[:20]))  # truncated at 128 tokens
    _assert_same(encode_texts(model, docs, "document", 16), model.encode_document(docs, batch_size=16))
    _assert_same(encode_texts(model, queries, "query", 32), model.encode_query(queries, batch_size=32))


def test_gpu_host_savings_keep_the_bytes(family_encoder, monkeypatch):
    """The two host-side savings of a GPU encode (the next batch tokenised in a thread while this one
    runs; a batch's non-zeros found on the device so only they are copied) give byte-identical
    CSR arrays: forced on here (on a CPU they are off by default), compared with them off."""
    from lsrbench.index.encode import encode_texts
    from lsrbench.index.fast_splade import FastSplade

    _, model = family_encoder
    texts = _texts()
    for kind in ("document", "query"):
        monkeypatch.setattr(FastSplade, "prefetch", False)
        monkeypatch.setattr(FastSplade, "nonzero_on_device", False)
        plain = encode_texts(model, texts, kind, 3)
        monkeypatch.setattr(FastSplade, "prefetch", True)
        monkeypatch.setattr(FastSplade, "nonzero_on_device", True)
        saved = encode_texts(model, texts, kind, 3)
        for name in ("indptr", "indices", "data"):
            a, b = getattr(plain, name), getattr(saved, name)
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), (kind, name)
