"""The paper's intervention, ``W_head <- W_head / k``, on tiny random models of every family.

Powers of two make float division exact, so for k in {2, 16} the comparisons are bitwise.
"""

import pytest
import torch

transformers = pytest.importorskip("transformers")
from transformers import AutoConfig, AutoModelForMaskedLM  # noqa: E402

from lsrbench.model.families import FAMILIES as FAMILY_SPECS  # noqa: E402
from lsrbench.model.rescale import head_norms  # noqa: E402
from lsrbench.model.rescale import head_is_tied, mlm_head, rescale_mlm_head  # noqa: E402

transformers.logging.set_verbosity_error()

VOCAB = 100
_COMMON = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
               vocab_size=VOCAB, max_position_embeddings=64)
CONFIGS = {
    "bert": dict(_COMMON),
    "distilbert": dict(dim=32, n_layers=1, n_heads=2, hidden_dim=64, vocab_size=VOCAB, max_position_embeddings=64),
    "albert": dict(_COMMON, embedding_size=16),
    "roberta": dict(_COMMON, pad_token_id=1, bos_token_id=0, eos_token_id=2),
    "modernbert": dict(_COMMON, global_attn_every_n_layers=1, local_attention=16, pad_token_id=0,
                       bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2),
}
FAMILIES = sorted(CONFIGS)
MODES = ["shared", "untie"]
# Fixed input ids well away from pad/special ids (RoBERTa position ids are computed from the pad id).
INPUT_IDS = torch.tensor([[5, 17, 42, 63, 88, 9, 31, 77], [11, 23, 57, 3 + 90, 12, 45, 66, 99]])


def make_model(family: str, bias: str = "zero") -> torch.nn.Module:
    """A tiny random ``*ForMaskedLM`` in eval mode; head bias zeroed, or random non-zero."""
    cfg = AutoConfig.for_model(family, **CONFIGS[family])
    torch.manual_seed(0)
    model = AutoModelForMaskedLM.from_config(cfg).eval()
    head = mlm_head(model)
    assert head_is_tied(model), f"{family}: expected a tied head in the default config"
    assert head.bias is not None
    with torch.no_grad():
        if bias == "zero":
            head.bias.zero_()
        else:
            head.bias.copy_(torch.randn(head.bias.shape, generator=torch.Generator().manual_seed(1)))
    return model


def head_input(model) -> torch.Tensor:
    dim = mlm_head(model).weight.shape[1]
    return torch.randn(3, 5, dim, generator=torch.Generator().manual_seed(2))


@torch.no_grad()
def logits(model) -> torch.Tensor:
    return model(input_ids=INPUT_IDS, attention_mask=torch.ones_like(INPUT_IDS)).logits


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("family", FAMILIES)
def test_head_output_divided_by_k(family, mode):
    for k in (2, 16, 3):
        model = make_model(family)
        h = head_input(model)
        with torch.no_grad():
            before = mlm_head(model)(h)
            bias_before = mlm_head(model).bias.detach().clone()
            rescale_mlm_head(model, k, mode)
            after = mlm_head(model)(h)
        if k in (2, 16):
            assert torch.equal(after, before / k), (family, mode, k)
        else:
            assert rel_err(after, before / k) <= 1e-6, (family, mode, k)
        assert torch.equal(mlm_head(model).bias, bias_before), (family, mode, k)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("family", FAMILIES)
def test_bias_unchanged_nonzero(family, mode):
    model = make_model(family, bias="random")
    bias_before = mlm_head(model).bias.detach().clone()
    assert bias_before.abs().sum() > 0
    rescale_mlm_head(model, 4, mode)
    assert torch.equal(mlm_head(model).bias, bias_before)


@pytest.mark.parametrize("family", FAMILIES)
def test_shared_mode_keeps_tying_and_scales_input_embeddings(family):
    model = make_model(family)
    emb_before = model.get_input_embeddings().weight.detach().clone()
    rescale_mlm_head(model, 2, "shared")
    assert head_is_tied(model)
    assert torch.equal(model.get_input_embeddings().weight, emb_before / 2)
    assert torch.equal(mlm_head(model).weight, emb_before / 2)


@pytest.mark.parametrize("family", FAMILIES)
def test_untie_mode_leaves_input_embeddings_and_scales_logits(family):
    for k in (2, 16):
        model = make_model(family)
        emb_before = model.get_input_embeddings().weight.detach().clone()
        ref = logits(model)
        rescale_mlm_head(model, k, "untie")
        assert not head_is_tied(model)
        assert model.config.tie_word_embeddings is False
        assert torch.equal(model.get_input_embeddings().weight, emb_before)
        assert torch.equal(mlm_head(model).weight, emb_before / k)
        # Input embeddings unchanged => hidden states identical => logits exactly / k (zero bias).
        assert torch.equal(logits(model), ref / k), (family, k)


@pytest.mark.parametrize("family", FAMILIES)
def test_untie_survives_save_and_reload(family, tmp_path):
    # Non-zero bias: guards against the decoder bias coming back freshly initialised once untied.
    model = make_model(family, bias="random")
    rescale_mlm_head(model, 2, "untie")
    # transformers must not re-tie an untied head (tie_weights runs on load and in Trainer).
    model.tie_weights()
    assert not head_is_tied(model)
    # Simulate a training step on the head alone: the reload must keep the trained values, not a
    # stale copy under another name (e.g. BERT's ``cls.predictions.bias``).
    with torch.no_grad():
        mlm_head(model).bias.add_(0.5)
        mlm_head(model).weight.mul_(1.5)
    ref = logits(model)
    bias = mlm_head(model).bias.detach().clone()
    weight = mlm_head(model).weight.detach().clone()
    emb = model.get_input_embeddings().weight.detach().clone()
    model.save_pretrained(tmp_path)
    reloaded = AutoModelForMaskedLM.from_pretrained(tmp_path).eval()
    assert not head_is_tied(reloaded)
    assert reloaded.config.tie_word_embeddings is False
    assert torch.equal(mlm_head(reloaded).bias, bias)
    assert torch.equal(mlm_head(reloaded).weight, weight)
    assert torch.equal(reloaded.get_input_embeddings().weight, emb)
    assert torch.equal(logits(reloaded), ref)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("family", FAMILIES)
def test_head_norms_scale_with_k(family, mode):
    model = make_model(family, bias="random")
    before = head_norms(model)
    weight_shape = mlm_head(model).weight.shape
    assert before["vocab_size"] == VOCAB == weight_shape[0]
    assert before["hidden_size"] == (16 if family == "albert" else 32) == weight_shape[1]
    assert before["tied"] is True
    assert before["has_bias"] is True
    k = 3
    rescale_mlm_head(model, k, mode)
    after = head_norms(model)
    for key in ("frobenius_norm", "mean_row_norm", "max_row_norm"):
        assert after[key] == pytest.approx(before[key] / k, rel=1e-6), key
    assert after["bias_norm"] == before["bias_norm"] > 0
    assert (after["vocab_size"], after["hidden_size"]) == (before["vocab_size"], before["hidden_size"])
    assert after["tied"] is (mode == "shared")


@pytest.mark.parametrize("k", [0, -1, -0.5, float("nan")])
def test_nonpositive_k_rejected(k):
    model = make_model("bert")
    w = mlm_head(model).weight.detach().clone()
    with pytest.raises(ValueError, match="positive"):
        rescale_mlm_head(model, k)
    assert torch.equal(mlm_head(model).weight, w)


def test_unknown_mode_rejected():
    model = make_model("bert")
    w = mlm_head(model).weight.detach().clone()
    with pytest.raises(ValueError, match="mode"):
        rescale_mlm_head(model, 2, "scale-both")
    assert torch.equal(mlm_head(model).weight, w)
    assert head_is_tied(model)


# ------------------------------------------------------------------ what shared mode does besides the head
# Families whose word embeddings are added to a learned position table or token-type embeddings
# before the embedding LayerNorm: shrinking them by k changes the mix the encoder sees. ModernBERT's
# (rotary positions, no token types) go straight into a LayerNorm, invariant to the scale up to its
# eps. GTE (rotary) adds its token-type embedding where the config has token types, as the tiny GTE
# of tests/helpers/families.py does (type_vocab_size 1; gte-base-en-v1.5 has none).
ADDITIVE_EMBEDDINGS = {name for name, spec in FAMILY_SPECS.items() if spec.position_table} | {"gte"}


def family_batch(folder, family: str, seed: int):
    """A tiny random model of ``family`` (tests/helpers/families.py: the real classes, WordPiece
    tokenizer, texts of very different lengths) and its tokenized texts."""
    from helpers.families import model, texts, tokenizer

    tok = tokenizer(folder, family)
    batch = tok(texts(), padding=True, truncation=True, return_tensors="pt",
                return_token_type_ids=family in ("bert", "albert"))
    return model(family, tok, seed=seed), dict(batch)


@pytest.fixture(scope="module")
def decoder_changes(tmp_path_factory):
    from helpers.families import FAMILIES as ALL_FAMILIES
    from lsrbench.model.rescale import decoder_input_change

    changes = {}
    for family in ALL_FAMILIES:
        model, batch = family_batch(tmp_path_factory.mktemp(f"decoder_{family}"), family, seed=0)
        changes[family] = {mode: decoder_input_change(model, batch, 16, mode) for mode in MODES}
        changes[family]["shared k=1"] = decoder_input_change(model, batch, 1, "shared")
    return changes


def test_shared_rescale_moves_the_decoder_input_where_embeddings_are_added(decoder_changes):
    """k = 16 in shared mode, real forward passes: the decoder input moves by tenths (0.58, 0.73,
    0.64, 0.58, 0.63 for BERT, DistilBERT, ALBERT, RoBERTa, GTE with one token type) where word
    embeddings are added to position or token-type embeddings, by thousandths (0.0035) for
    ModernBERT; never in untie mode or at k = 1."""
    for family, change in decoder_changes.items():
        assert change["untie"] == 0.0 and change["shared k=1"] == 0.0, family
        if family in ADDITIVE_EMBEDDINGS:
            assert 0.1 < change["shared"] < 1.0, (family, change)
        else:
            assert 1e-3 < change["shared"] < 1e-2, (family, change)
    additive = [decoder_changes[f]["shared"] for f in ADDITIVE_EMBEDDINGS]
    assert min(additive) > 100 * decoder_changes["modernbert"]["shared"]


def test_decoder_input_change_leaves_the_model(tmp_path):
    from lsrbench.model.rescale import decoder_input_change

    model, batch = family_batch(tmp_path, "roberta", seed=1)
    before = head_norms(model)
    assert decoder_input_change(model, batch, 4) > 0
    assert head_norms(model) == before and head_is_tied(model)
