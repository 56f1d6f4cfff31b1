"""Collapse is a result, not a crash: NaN/inf losses stop training with a recorded status, and
all-zero or too dense vectors are flagged at evaluation, which still writes every output."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.sparse as sp

from helpers.beir import write_beir
from lsrbench.stages.evaluate import evaluate as evaluate_job
from lsrbench.index.sparse import save_sparse
from lsrbench.config.schema import with_defaults

RECIPE = dict(steps=4, batch_size=4, warmup_steps=1, lambda_q=5e-5, lambda_d=3e-5, seed=42,
              query_max_length=16, document_max_length=48)  # + learning_rate, per test


@pytest.fixture(scope="module")
def triplets(vaswani_slice):
    from lsrbench.data.beir import load_beir_folder
    from lsrbench.data.triplets import pseudo_query_triplets

    return pseudo_query_triplets(load_beir_folder(vaswani_slice).corpus, 32, 1)


def _weights_finite(model_dir) -> bool:
    from safetensors.numpy import load_file

    return all(np.isfinite(a).all() for a in load_file(str(model_dir / "model.safetensors")).values())


@pytest.mark.parametrize("lr, model_step", [
    (1e6, 2),   # loss NaN at step 3; the step-2 weights are still finite: they are the model
    (1e38, 0),  # the step-2 update already overflowed the weights: back to the initial model
])
def test_absurd_learning_rate_finishes_as_collapsed(tmp_path, tiny_roberta, triplets, lr, model_step):
    from lsrbench.model.train import train_splade

    summary = train_splade(str(tiny_roberta), triplets, with_defaults("recipe", {**RECIPE, "learning_rate": lr}), tmp_path / "model",
                           tmp_path / "log.jsonl", checkpoint_dir=tmp_path / "ckpt", checkpoint_steps=1)
    status = summary["status"]
    assert status["status"] == "collapsed: non-finite training loss" and "nan" in status["reason"]
    log = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [1, 2] and status["step"] == 3
    assert status["last_finite_step"] == 2 and status["last_finite_loss"] == log[-1]["loss"]
    assert math.isfinite(status["last_finite_loss"])
    assert status["model_step"] == model_step and status["model_finite"] is True
    assert _weights_finite(tmp_path / "model")


def _eval_fixture(tmp_path, docs: np.ndarray, queries: np.ndarray, train_status: dict):
    data = write_beir(tmp_path / "data", {f"d{i}": f"doc {i}" for i in range(len(docs))},
                      {f"q{i}": f"query {i}" for i in range(len(queries))},
                      [(f"q{i}", f"d{i}", 1) for i in range(len(queries))])
    save_sparse(tmp_path / "docs.npz", sp.csr_matrix(docs), [f"d{i}" for i in range(len(docs))])
    save_sparse(tmp_path / "queries.npz", sp.csr_matrix(queries), [f"q{i}" for i in range(len(queries))])
    (tmp_path / "train_status.json").write_text(json.dumps(train_status))
    out = {n: str(tmp_path / "out" / n) for n in ("run.trec", "metrics.tsv", "perquery.tsv", "status.json", "provenance.json")}
    kwargs = dict(run="b", k="4", dataset="toy", skip_identical_ids=False, data_dir=str(data),
                  docs_npz=str(tmp_path / "docs.npz"), queries_npz=str(tmp_path / "queries.npz"), top_k=10,
                  measures=["nDCG@10"], run_trec=out["run.trec"], metrics_tsv=out["metrics.tsv"],
                  perquery_tsv=out["perquery.tsv"], status_json=out["status.json"], provenance_json=out["provenance.json"],
                  config_hash="x", train_status=str(tmp_path / "train_status.json"), collapse_max_active_share=0.5)
    return kwargs, out


def _metric_rows(path):
    lines = open(path).read().splitlines()
    assert lines[0] == "backbone\tk\tdataset\tmeasure\tvalue"
    return {line.split("\t")[3]: float(line.split("\t")[4]) for line in lines[1:]}


def test_healthy_run_has_collapsed_zero(tmp_path):
    eye = np.eye(4, 10, dtype=np.float32)
    kwargs, out = _eval_fixture(tmp_path, eye, eye[:2], {"status": "ok"})
    evaluate_job(**kwargs)
    rows = _metric_rows(out["metrics.tsv"])
    assert rows["collapsed"] == 0.0 and rows["nDCG@10"] == 1.0
    status = json.load(open(out["status.json"]))
    assert status["status"] == "ok" and status["collapsed"] is False and status["doc_active_share"] == 0.1


@pytest.mark.parametrize("docs, queries, train, reason", [
    (np.zeros((4, 10)), np.eye(2, 10), {"status": "ok"}, "all-zero document vectors"),
    (np.eye(4, 10), np.zeros((2, 10)), {"status": "ok"}, "all-zero query vectors"),
    (np.ones((4, 10)), np.eye(2, 10), {"status": "ok"}, "documents activate 100.0% of the vocabulary"),
    (np.eye(4, 10), np.eye(2, 10),
     {"status": "collapsed: non-finite training loss", "reason": "non-finite training loss (base_loss=nan)",
      "step": 7, "last_finite_loss": 1.5}, "non-finite training loss (base_loss=nan)"),
])
def test_collapsed_run_is_evaluated_and_flagged(tmp_path, docs, queries, train, reason):
    kwargs, out = _eval_fixture(tmp_path, docs.astype(np.float32), queries.astype(np.float32), train)
    evaluate_job(**kwargs)  # no exception: a collapse is a result
    rows = _metric_rows(out["metrics.tsv"])
    assert rows["collapsed"] == 1.0 and all(math.isfinite(v) for v in rows.values())
    assert set(rows) == {"nDCG@10", "FLOPs", "query_active_dims", "doc_active_dims", "collapsed"}
    status = json.load(open(out["status.json"]))
    assert status["collapsed"] is True and status["status"].startswith("collapsed: ")
    assert any(r.startswith(reason) for r in status["reasons"]), status
    if "step" in train:
        assert status["step"] == 7 and status["last_finite_loss"] == 1.5
    for name, path in out.items():  # every output written (a run of all-zero vectors retrieves nothing)
        assert open(path).read() or name == "run.trec"


def test_index_zeroes_non_finite_weights_of_a_collapsed_model():
    m = sp.csr_matrix(np.array([[np.nan, 1.0, 0.0], [np.inf, 0.0, 2.0]], dtype=np.float32))
    from lsrbench.index.indexing import zero_non_finite

    out = zero_non_finite(m, "docs.npz")
    assert out.toarray().tolist() == [[0.0, 1.0, 0.0], [0.0, 0.0, 2.0]] and out.nnz == 2
