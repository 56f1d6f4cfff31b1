"""Data-parallel training (``train_processes`` > 1): the train stage runs itself under torchrun, the
recipe's batch is split across the processes (gloo on CPU here, NCCL on GPUs), and only the main
process writes the run's outputs, which are those of an ordinary run."""

from __future__ import annotations

import json

import pytest

from lsrbench.stages.norm import norm as norm_job
from lsrbench.stages.train import train as train_job
from lsrbench.errors import InputError
from lsrbench.config.schema import with_defaults

RECIPE = with_defaults("recipe", dict(steps=4, batch_size=4, learning_rate=1e-3, warmup_steps=0.1, lambda_q=5e-5,
                                      lambda_d=3e-5, seed=42, query_max_length=16, document_max_length=48,
                                      checkpoint_steps=2))


@pytest.fixture()
def inputs(tmp_path, vaswani_slice, tiny_roberta):
    from lsrbench.data.beir import load_beir_folder
    from lsrbench.data.triplets import pseudo_query_triplets, write_triplets

    triplets = tmp_path / "triplets.jsonl"
    write_triplets(triplets, pseudo_query_triplets(load_beir_folder(vaswani_slice).corpus, 48, 1))
    entry = with_defaults("backbones", {"tiny": {"model": str(tiny_roberta)}})["tiny"]
    norms = tmp_path / "norms.json"
    norm_job("tiny", entry, None, str(tmp_path / "cache"), "cfg.yaml", str(norms))
    run = tmp_path / "run"
    return dict(run="tiny", entry=entry, k="1", mode="shared", mirror=None, cache_dir=str(tmp_path / "cache"),
                config_file="cfg.yaml", norms_json=str(norms), triplets_jsonl=str(triplets),
                model_dir=str(run / "model"), train_log=str(run / "train_log.jsonl"),
                provenance_json=str(run / "train_provenance.json"), config_hash="h",
                status_json=str(run / "status.json"), checkpoint_dir=str(run / "checkpoints"))


def test_batch_must_split_evenly(inputs):
    with pytest.raises(InputError) as err:
        train_job(recipe={**RECIPE, "batch_size": 5}, processes=2, **inputs)
    assert str(err.value).startswith("cfg.yaml: recipe.batch_size: 5 is not a multiple of the 2 training processes")


def test_auto_is_one_process_without_gpus():
    from lsrbench.model.ranks import training_processes

    assert training_processes("auto") == 1 and training_processes(None) == 1 and training_processes(3) == 3


@pytest.fixture()
def deterministic_inputs(inputs, tmp_path, vaswani_slice, tiny_roberta):
    """``inputs`` with a dropout-free copy of the model (dropout draws differ per process) and
    triplets whose texts are all distinct (the no-duplicates sampler then cuts one shuffled order
    into batches whatever the batch size, so 1 process x 4 and 2 processes x 2 see the same
    global batches)."""
    import shutil

    from transformers import AutoModelForMaskedLM

    from lsrbench.data.beir import load_beir_folder
    from lsrbench.data.triplets import write_triplets

    model_dir = tmp_path / "no_dropout"
    shutil.copytree(tiny_roberta, model_dir)
    model = AutoModelForMaskedLM.from_pretrained(tiny_roberta, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model.save_pretrained(model_dir)
    texts = list(load_beir_folder(vaswani_slice).corpus.values())
    triplets = [{"query": " ".join(texts[i].split()[:6]) + f" {i}", "positive": texts[i], "negative": texts[i + 60]}
                for i in range(16)]
    path = tmp_path / "distinct.jsonl"
    write_triplets(path, triplets)
    entry = with_defaults("backbones", {"tiny": {"model": str(model_dir)}})["tiny"]
    norms = tmp_path / "norms_nd.json"
    norm_job("tiny", entry, None, str(tmp_path / "cache"), "cfg.yaml", str(norms))
    return {**inputs, "entry": entry, "triplets_jsonl": str(path), "norms_json": str(norms)}


def _run(inputs, tmp_path, name, processes):
    run = tmp_path / name
    paths = dict(model_dir=str(run / "model"), train_log=str(run / "train_log.jsonl"),
                 provenance_json=str(run / "train_provenance.json"), status_json=str(run / "status.json"),
                 checkpoint_dir=str(run / "checkpoints"))
    recipe = {**RECIPE, "lambda_q": 0.05, "lambda_d": 0.03}  # strong regularisers: a per-process FLOPS term shows
    assert train_job(recipe=recipe, processes=processes, **{**inputs, **paths})["status"] == "ok"
    return paths


def test_one_and_two_processes_train_the_same_model(deterministic_inputs, tmp_path, monkeypatch):
    """The FLOPS regularisers are computed on the global batch: 1 process with batch 4 and 2 gloo
    processes with 2 each give the same per-step loss parts and the same final weights (to float
    summation order; per-process FLOPS terms would be larger and differ)."""
    from safetensors.torch import load_file

    from lsrbench.model.train_log import read_train_log

    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    one = _run(deterministic_inputs, tmp_path, "one", 1)
    two = _run(deterministic_inputs, tmp_path, "two", 2)
    _assert_a_finished_two_process_run(two)
    rows1, rows2 = read_train_log(one["train_log"]), read_train_log(two["train_log"])
    assert [r["step"] for r in rows1] == [r["step"] for r in rows2] == [1, 2, 3, 4]
    for r1, r2 in zip(rows1, rows2):
        for key in ("loss", "ranking_loss", "query_regularizer_loss", "document_regularizer_loss",
                    "query_active_dims", "document_active_dims", "grad_norm"):
            assert r2[key] == pytest.approx(r1[key], rel=1e-4, abs=1e-7), (r1["step"], key)
    assert rows1[-1]["document_regularizer_loss"] > 0
    w1 = load_file(f"{one['model_dir']}/model.safetensors")
    w2 = load_file(f"{two['model_dir']}/model.safetensors")
    assert w1.keys() == w2.keys()
    for name in w1:
        assert (w1[name] - w2[name]).abs().max().item() < 1e-5, name


def _assert_a_finished_two_process_run(paths: dict) -> None:
    """Two processes train one run: the main process writes the outputs of an ordinary run (its
    provenance says 2 processes and 4 steps, a log row per step, a model that loads and encodes)
    and discards the checkpoints once they are written."""
    import os

    from sentence_transformers import SparseEncoder

    from lsrbench.model.train_log import read_train_log

    prov = json.loads(open(paths["provenance_json"]).read())
    assert prov["summary"]["processes"] == 2 and prov["summary"]["steps"] == 4
    rows = read_train_log(paths["train_log"])
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    assert all(r["loss"] > 0 for r in rows)
    assert json.loads(open(paths["status_json"]).read())["status"] == "ok"
    model = SparseEncoder(paths["model_dir"], device="cpu")
    vec = model.encode_document(["sparse retrieval of documents"], convert_to_tensor=True).to_dense()
    assert vec.shape[1] == model[0].auto_model.config.vocab_size and float(vec.sum()) > 0
    assert not os.path.exists(paths["checkpoint_dir"])  # discarded once the outputs are written
