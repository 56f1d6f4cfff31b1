"""The roofline's FLOP counts are the textbook ones: a BERT forward counted on the meta device equals
the matmul algebra exactly, ALBERT's decoder is its factorised 128-wide one, a training step is
three forwards of everything but the (fused) decoder, and the hours follow from a peak."""

import pytest

from lsrbench.data.sizes import PUBLISHED_MEAN_WORDS, PUBLISHED_SIZES
from lsrbench.index import roofline


def _bert_forward(tokens, layers=12, hidden=768, inter=3072, vocab=30522):
    t, h = tokens, hidden
    per_layer = 3 * 2 * t * h * h + 2 * 2 * t * t * h + 2 * t * h * h + 2 * 2 * t * h * inter  # QKV, scores+context, out, FFN
    return layers * per_layer + 2 * t * h * h + 2 * t * h * vocab  # + head transform + decoder


@pytest.mark.parametrize("tokens", [32, 256])
def test_bert_forward_equals_the_algebra(tokens):
    got = roofline.forward_flops("bert", tokens)
    assert got == {"total": _bert_forward(tokens), "decoder": 2 * tokens * 768 * 30522}


def test_albert_decoder_is_factorised_and_train_step_composes():
    assert roofline.forward_flops("albert", 64)["decoder"] == 2 * 64 * 128 * 30000
    f32, f256 = roofline.forward_flops("bert", 32), roofline.forward_flops("bert", 256)

    def step(fused):
        dec = 1 if fused else 3
        return (4 * (3 * (f32["total"] - f32["decoder"]) + dec * f32["decoder"])
                + 8 * (3 * (f256["total"] - f256["decoder"]) + dec * f256["decoder"]))

    assert roofline.train_step_flops("bert", 4, 32, 256) == step(True)
    assert roofline.train_step_flops("bert", 4, 32, 256, fused=False) == step(False)


def test_lengths_hours_and_the_published_tables():
    assert roofline.document_tokens(55.98, 256) == 75 and roofline.document_tokens(292.37, 256) == 256
    assert roofline.stage_hours(989.4e12 * 3600, 989.4) == pytest.approx(1.0)
    assert roofline.stage_hours(989.4e12 * 3600, 989.4, share_of_peak=0.5) == pytest.approx(2.0)
    # every dataset of the paper grid has a published size and mean lengths
    paper = [d for d in PUBLISHED_SIZES if d != "vaswani"]
    assert set(paper) == set(PUBLISHED_MEAN_WORDS)
    assert set(roofline.BACKBONE_SHAPES) == {"bert", "distilbert", "albert", "gte-mlm", "roberta", "modernbert", "ettin"}
