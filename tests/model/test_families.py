"""Each registered backbone family's declarations (lsrbench.model.families) against the real
transformers classes, on the tiny random models of tests/helpers/families.py: where the head is,
what it is tied to, whether its bias is shared through tying, what the fused pooling captures,
its position limit; and the generic answers for a model of no registered family."""

import operator

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from helpers.families import FAMILIES, classes, model as family_model, tokenizer as family_tokenizer  # noqa: E402
from lsrbench.model.families import FAMILIES as SPECS, GENERIC, family_of, is_head_key  # noqa: E402
from lsrbench.model.rescale import head_is_tied, mlm_head, rescale_mlm_head  # noqa: E402


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    out = {}
    for family in FAMILIES:
        tok = family_tokenizer(tmp_path_factory.mktemp(family), family)
        out[family] = (family_model(family, tok, seed=0).eval(), tok)
    return out


def test_every_family_is_registered_under_its_class(models):
    assert list(SPECS) == ["bert", "distilbert", "albert", "roberta", "modernbert", "gte"]
    for name, (m, _) in models.items():
        spec = family_of(m)
        assert spec is SPECS[name] and spec.name == name
        assert (type(m), type(m.config)) == classes(spec)
        for alias in spec.aliases:  # the same architecture under transformers' own class
            assert issubclass(type(m), getattr(transformers, alias))


@pytest.mark.parametrize("family", FAMILIES)
def test_head_path_and_tying_are_what_transformers_finds(models, family):
    m, _ = models[family]
    spec = SPECS[family]
    decoder = operator.attrgetter(spec.decoder_path)(m)
    assert decoder is m.get_output_embeddings() is mlm_head(m)
    assert operator.attrgetter(spec.embeddings_path)(m) is m.get_input_embeddings()
    assert head_is_tied(m) and decoder.weight is m.get_input_embeddings().weight
    # The bias is shared exactly where transformers ties it (its ``_tied_weights_keys``).
    assert spec.bias_shared == (f"{spec.decoder_path}.bias" in type(m)._tied_weights_keys)
    for name, _ in decoder.named_parameters(prefix=spec.decoder_path):
        assert is_head_key(name) and any(part in name for part in spec.head_keys), name


@pytest.mark.parametrize("family", FAMILIES)
def test_the_decoder_input_is_the_head_transform_output(models, family):
    """What the fused pooling and the fast encoder capture: the transform's output, as wide as the
    decoder's rows (ALBERT: embedding_size, not hidden_size)."""
    m, tok = models[family]
    spec = SPECS[family]
    seen = {}
    hooks = [operator.attrgetter(spec.transform_path)(m).register_forward_hook(lambda _, a, out: seen.setdefault("t", out)),
             mlm_head(m).register_forward_pre_hook(lambda _, args: seen.setdefault("d", args[0]))]
    try:
        with torch.no_grad():
            m(**tok(["sparse retrieval", "a query"], padding=True, return_tensors="pt", return_token_type_ids=False))
    finally:
        for h in hooks:
            h.remove()
    assert seen["t"] is seen["d"] or torch.equal(seen["t"], seen["d"])
    assert seen["d"].shape[-1] == mlm_head(m).weight.shape[1]
    if family == "albert":
        assert seen["d"].shape[-1] == m.config.embedding_size != m.config.hidden_size


@pytest.mark.parametrize("family", FAMILIES)
def test_position_limit_is_the_generic_one(models, family):
    """Each family's position offset gives what the generic scan (RoBERTa-style tables) gives."""
    m, _ = models[family]
    spec = SPECS[family]
    want = {"bert": 64, "distilbert": 64, "albert": 64, "roberta": 70 - (m.config.pad_token_id + 1), "modernbert": 64,
            "gte": 64}
    assert spec.position_limit(m) == GENERIC.position_limit(m) == want[family]
    tables = [mod for mod in m.modules() if isinstance(getattr(mod, "position_embeddings", None), torch.nn.Embedding)]
    assert spec.position_table == bool(tables)


@pytest.mark.parametrize("family", FAMILIES)
def test_untie_copies_a_shared_bias(models, family):
    import copy

    m = copy.deepcopy(models[family][0])
    spec = SPECS[family]
    before = mlm_head(m).bias
    rescale_mlm_head(m, 2.0, "untie")
    head = mlm_head(m)
    assert not head_is_tied(m) and not m.config.tie_word_embeddings
    assert (head.bias is not before) == (spec.bias_shared is not False)
    assert torch.equal(head.bias, before)


def test_a_model_of_no_registered_family_gets_the_generic_answers(models):
    m, _ = models["roberta"]
    other = type("OtherForMaskedLM", (type(m),), {})
    clone = other(m.config).eval()
    assert family_of(clone) is GENERIC
    assert GENERIC.bias_shared is None and GENERIC.decoder(clone) is clone.get_output_embeddings()
    assert GENERIC.position_limit(clone) == 70 - (m.config.pad_token_id + 1)
    assert family_of(torch.nn.Linear(2, 2)) is GENERIC and GENERIC.decoder(torch.nn.Linear(2, 2)) is None


def test_head_keys_are_the_union_the_checkpoint_check_used():
    parts = {p for spec in SPECS.values() for p in spec.head_keys}
    assert parts == {"predictions.", "lm_head.", "vocab_projector", "vocab_transform", "head.", "decoder."}
    assert is_head_key("cls.predictions.transform.dense.weight") and not is_head_key("bert.encoder.layer.0.output.dense.bias")
