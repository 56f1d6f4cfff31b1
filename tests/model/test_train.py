"""Training never does less than asked (issue 12): the trainer's no-duplicates batch sampler takes
0 steps, silently, from triplets that cannot fill a batch without repeating a text. Such triplets
are refused before training, and a trainer that still takes fewer steps than ``recipe.steps`` is
an error naming the config field, never an ``ok`` run. Both through the real trainer."""

from __future__ import annotations

import json

import pytest

from lsrbench.errors import InputError
from lsrbench.model.train import check_batches_possible, train_splade
from lsrbench.config.schema import with_defaults

RECIPE = dict(steps=2, batch_size=4, learning_rate=2e-5, lambda_q=5e-5, lambda_d=3e-5, seed=42,
              query_max_length=16, document_max_length=48)


def _triplet(query: str, positive: str, negative: str) -> dict:
    return {"query": query, "positive": positive, "negative": negative}


def test_fewer_distinct_triplets_than_the_batch_are_refused_before_training(tmp_path, tiny_roberta):
    three = [_triplet(f"query {i}", f"document {i}", f"other {i}") for i in range(3)]
    with pytest.raises(InputError) as err:
        train_splade(str(tiny_roberta), three, with_defaults("recipe", RECIPE), tmp_path / "model",
                     tmp_path / "log.jsonl", config_file="my.yaml")
    assert str(err.value).startswith("my.yaml: recipe.batch_size: 4 triplets per batch")
    assert "only 3 distinct query texts" in str(err.value)
    assert not (tmp_path / "model").exists() and not (tmp_path / "log.jsonl").exists()


def test_a_shared_negative_cannot_fill_a_batch():
    """Four distinct triplets, one negative: no two may share a batch."""
    shared = [_triplet(f"query {i}", f"document {i}", "the same negative") for i in range(4)]
    with pytest.raises(InputError, match="only 1 distinct negative texts"):
        check_batches_possible(shared, 4, "c.yaml")
    check_batches_possible(shared, 1, "c.yaml")  # one per batch is fine


def test_a_trainer_that_takes_fewer_steps_is_an_error_not_ok(tmp_path, tiny_roberta):
    """Two distinct queries, positives and negatives (the up-front count passes), but each row
    repeats a text of the other: the real trainer's sampler fills no batch of 2 and takes 0 of the
    planned steps, which must not be recorded as a trained model."""
    rows = [_triplet("alpha beta", "gamma delta", "epsilon"), _triplet("gamma delta", "alpha beta", "zeta")]
    check_batches_possible(rows, 2)
    recipe = with_defaults("recipe", {**RECIPE, "steps": 1, "batch_size": 2})
    with pytest.raises(InputError) as err:
        train_splade(str(tiny_roberta), rows, recipe, tmp_path / "model", tmp_path / "log.jsonl", config_file="c.yaml")
    assert str(err.value).startswith("c.yaml: recipe.batch_size: training took 0 of its 1 steps (recipe.steps)")
    assert not (tmp_path / "model").exists() and not (tmp_path / "log.jsonl").exists()


def test_enough_distinct_triplets_train_every_planned_step(tmp_path, tiny_roberta):
    rows = [_triplet(f"query {i}", f"document {i}", f"other {i}") for i in range(8)]
    summary = train_splade(str(tiny_roberta), rows, with_defaults("recipe", RECIPE), tmp_path / "model",
                           tmp_path / "log.jsonl")
    assert summary["status"]["status"] == "ok" and summary["steps"] == 2
    assert [json.loads(line)["step"] for line in (tmp_path / "log.jsonl").read_text().splitlines()] == [1, 2]
