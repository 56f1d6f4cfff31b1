"""``recipe.weight_decay`` (issue 18 item 9: naver/splade's SPLADE++ recipe decays weights by 0.01,
config/paper-splade-pp.yaml): the trainer's AdamW decay. Added after grids had been trained, so a
train identity holds it only when it is not the schema's default 0: every finished run keeps its
folder (tests/dag/test_layout.py pins the tiny default's ids)."""

from __future__ import annotations

import pytest

from lsrbench.config.schema import with_defaults
from lsrbench.dag.stage import without_late_defaults
from lsrbench.stages.recipe import LATE_RECIPE_SETTINGS, late_recipe_settings, results_recipe
from lsrbench.model.train import train_splade

RECIPE = dict(steps=3, batch_size=4, learning_rate=5e-3, lambda_q=5e-5, lambda_d=3e-5, seed=42,
              query_max_length=16, document_max_length=48)
TRIPLETS = [{"query": f"query {i}", "positive": f"document {i} about waves", "negative": f"other {i} on filters"}
            for i in range(16)]


def test_weight_decay_is_in_an_identity_only_when_set():
    recipe = with_defaults("recipe", RECIPE)
    assert recipe["weight_decay"] == 0 and "weight_decay" in LATE_RECIPE_SETTINGS

    def identity(recipe: dict) -> dict:
        return without_late_defaults({"recipe": results_recipe({"recipe": recipe})}, late_recipe_settings("recipe"))["recipe"]

    assert "weight_decay" not in identity(recipe)  # the identity of every run made before
    assert identity({**recipe, "weight_decay": 0.01}) == {**identity(recipe), "weight_decay": 0.01}


@pytest.fixture(scope="module")
def trained(tiny_roberta, tmp_path_factory):
    """The same training with the recipe as an identity holds it (no weight_decay), with 0 written
    out, and with decay."""
    out = {}
    plain = {k: v for k, v in with_defaults("recipe", RECIPE).items() if k != "weight_decay"}
    for name, recipe in (("identity", plain), ("zero", {**plain, "weight_decay": 0}),
                         ("decay", {**plain, "weight_decay": 0.5})):
        folder = tmp_path_factory.mktemp(name)
        train_splade(str(tiny_roberta), TRIPLETS, recipe, folder / "model", folder / "train_log.jsonl")
        out[name] = (folder / "model" / "model.safetensors").read_bytes()
    return out


def test_weight_decay_reaches_the_optimizer(trained):
    assert trained["identity"] == trained["zero"]  # absent = the schema's 0, byte for byte
    assert trained["decay"] != trained["zero"]  # and a decay changes the trained weights
