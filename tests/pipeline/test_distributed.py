"""Data-parallel training (``train_processes`` > 1): the train stage runs itself under torchrun, the
recipe's batch is split across the processes (gloo on CPU here, NCCL on GPUs), and only the main
process writes the run's outputs, which are those of an ordinary run."""

from __future__ import annotations

import json

import pytest

from lsrbench.pipeline import stages
from lsrbench.errors import InputError
from lsrbench.pipeline.config import with_defaults

RECIPE = with_defaults("recipe", dict(steps=4, batch_size=4, learning_rate=1e-3, warmup_steps=0.1, lambda_q=5e-5,
                                      lambda_d=3e-5, seed=42, query_max_length=16, document_max_length=48,
                                      checkpoint_steps=2))


@pytest.fixture()
def inputs(tmp_path, vaswani_slice, tiny_roberta):
    from lsrbench.data.beir import load_beir_folder
    from lsrbench.data.triplets import pseudo_query_triplets, write_triplets

    triplets = tmp_path / "triplets.jsonl"
    write_triplets(triplets, pseudo_query_triplets(load_beir_folder(vaswani_slice).corpus, 48, 1))
    entry = {"model": str(tiny_roberta)}
    norms = tmp_path / "norms.json"
    stages.norm("tiny", entry, None, str(tmp_path / "cache"), "cfg.yaml", str(norms))
    run = tmp_path / "run"
    return dict(run="tiny", entry=entry, k="1", mirror=None, cache_dir=str(tmp_path / "cache"),
                config_file="cfg.yaml", norms_json=str(norms), triplets_path=str(triplets),
                model_dir=str(run / "model"), log_path=str(run / "train_log.jsonl"),
                prov_path=str(run / "train_provenance.json"), config_hash="h",
                status_path=str(run / "status.json"), checkpoint_dir=str(run / "checkpoints"))


def test_two_processes_train_one_run(inputs, monkeypatch):
    from sentence_transformers import SparseEncoder

    from lsrbench.model.train_log import read_train_log

    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    status = stages.train(recipe=RECIPE, processes=2, **inputs)
    assert status["status"] == "ok"
    prov = json.loads(open(inputs["prov_path"]).read())
    assert prov["summary"]["processes"] == 2 and prov["summary"]["steps"] == 4
    rows = read_train_log(inputs["log_path"])
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    assert all(r["loss"] > 0 for r in rows)
    assert json.loads(open(inputs["status_path"]).read())["status"] == "ok"
    model = SparseEncoder(inputs["model_dir"], device="cpu")
    vec = model.encode_document(["sparse retrieval of documents"], convert_to_tensor=True).to_dense()
    assert vec.shape[1] == model[0].auto_model.config.vocab_size and float(vec.sum()) > 0
    import os

    assert not os.path.exists(inputs["checkpoint_dir"])  # discarded once the outputs are written


def test_batch_must_split_evenly(inputs):
    with pytest.raises(InputError) as err:
        stages.train(recipe={**RECIPE, "batch_size": 5}, processes=2, **inputs)
    assert str(err.value).startswith("cfg.yaml: recipe.batch_size: 5 is not a multiple of the 2 training processes")


def test_auto_is_one_process_without_gpus():
    from lsrbench.model.ranks import training_processes

    assert training_processes("auto") == 1 and training_processes(None) == 1 and training_processes(3) == 3
