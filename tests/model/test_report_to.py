"""Training curves where users watch them (issue 23.8): ``recipe.report_to: [tensorboard]`` hands the
sentence-transformers trainer its own ``report_to``, with the event files in ``tensorboard/``
beside the run's log. The event file holds every logged loss, and nothing of the run changes: the
per-step log and the saved weights are byte-identical to a run without it. Through snakemake:
tests/pipeline/test_resume_dag.py (the setting re-trains nothing, and a trained run writes its
events in its own folder)."""

from __future__ import annotations

import json

import pytest

from lsrbench.model.train import train_splade
from lsrbench.config.schema import with_defaults

pytest.importorskip("tensorboard")

RECIPE = dict(steps=4, batch_size=4, learning_rate=5e-4, lambda_q=5e-5, lambda_d=3e-5, seed=42,
              query_max_length=16, document_max_length=48)
TRIPLETS = [{"query": f"query {i}", "positive": f"document {i} about waves", "negative": f"other {i} on filters"}
            for i in range(16)]


def read_scalars(folder) -> dict[str, dict[int, float]]:
    """Every scalar of the TensorBoard event files under ``folder``: tag -> step -> value, read with
    TensorBoard's own reader."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    found: dict[str, dict[int, float]] = {}
    for events in sorted(folder.rglob("events.out.tfevents.*")):
        acc = EventAccumulator(str(events))
        acc.Reload()
        for tag in acc.Tags()["scalars"]:
            found.setdefault(tag, {}).update({e.step: e.value for e in acc.Scalars(tag)})
    return found


@pytest.fixture(scope="module")
def two_runs(tiny_roberta, tmp_path_factory):
    """The same training twice: without reporting, and with ``report_to: [tensorboard]``."""
    out = {}
    for name, report_to in (("plain", ()), ("tensorboard", ("tensorboard",))):
        folder = tmp_path_factory.mktemp(name)
        summary = train_splade(str(tiny_roberta), TRIPLETS, with_defaults("recipe", RECIPE), folder / "model",
                               folder / "train_log.jsonl", report_to=report_to)
        out[name] = {"folder": folder, "summary": summary,
                     "rows": [json.loads(line) for line in (folder / "train_log.jsonl").read_text().splitlines()]}
    return out


def test_the_event_file_beside_the_log_holds_every_logged_loss(two_runs):
    run = two_runs["tensorboard"]
    events = list((run["folder"] / "tensorboard").glob("events.out.tfevents.*"))
    assert len(events) == 1, list(run["folder"].rglob("*"))
    scalars = read_scalars(run["folder"] / "tensorboard")
    losses = {row["step"]: row["loss"] for row in run["rows"]}
    assert sorted(scalars["train/loss"]) == sorted(losses) == [1, 2, 3, 4]
    for step, loss in losses.items():  # the trainer's loss: the sum of the log's parts (TensorBoard keeps float32)
        assert scalars["train/loss"][step] == pytest.approx(loss, rel=1e-5)
    assert scalars["train/learning_rate"] == pytest.approx({r["step"]: r["learning_rate"] for r in run["rows"]})
    assert scalars["train/grad_norm"] == pytest.approx({r["step"]: r["grad_norm"] for r in run["rows"]}, rel=1e-5)


def test_reporting_changes_no_number(two_runs):
    plain, reported = two_runs["plain"], two_runs["tensorboard"]
    assert (plain["folder"] / "train_log.jsonl").read_bytes() == (reported["folder"] / "train_log.jsonl").read_bytes()
    weights = [(run["folder"] / "model" / "model.safetensors").read_bytes() for run in (plain, reported)]
    assert weights[0] == weights[1]
    assert not (plain["folder"] / "tensorboard").exists()
    assert plain["summary"]["last_loss"] == reported["summary"]["last_loss"]


def test_report_to_is_no_part_of_the_training_identity():
    """A finished run must not re-train, nor a checkpoint stop resuming, because the setting was
    added: the train folder's id and the checkpoints' key leave it out."""
    from lsrbench.model.resume import training_key
    from lsrbench.stages.recipe import RUNTIME_RECIPE_KEYS, results_recipe

    recipe = with_defaults("recipe", RECIPE)
    assert recipe["report_to"] == []  # the default: off
    assert "report_to" in RUNTIME_RECIPE_KEYS
    config = {"recipe": {**recipe, "report_to": ["tensorboard"]}}
    assert results_recipe(config) == results_recipe({"recipe": recipe}) == {
        k: v for k, v in recipe.items() if k not in ("checkpoint_steps", "report_to")}
    assert training_key("m", TRIPLETS, config["recipe"], 1, "shared", 1.0, None) == \
        training_key("m", TRIPLETS, recipe, 1, "shared", 1.0, None)
