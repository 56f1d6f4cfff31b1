"""benchmark/plan_vs_measured.py on a hand-made finished run (Snakemake 9 metadata records and job
logs in the formats of a real tiny-default run): which jobs it measures, their wall time (the job's
incomplete-marker time to its last output), the start-up split from the log, and the comparison
with a plan, against hand-computed numbers. No timing."""

from __future__ import annotations

import json
import sys
from base64 import urlsafe_b64encode
from datetime import datetime, timezone

import pytest

from helpers.paths import REPO

sys.path.insert(0, str(REPO / "benchmark"))
import plan_vs_measured as pvm  # noqa: E402

T0 = datetime(2026, 12, 1, 20, 49, 49, tzinfo=timezone.utc).timestamp()
TRAIN = "results/runs/splade-tiny/k4/9388e5431411"
INDEX = f"{TRAIN}/vaswani/610fd7a4bc9a"
EVALUATE = f"{INDEX}/ed8212051754"


def _stamp(seconds: float) -> str:
    return datetime.fromtimestamp(T0 + seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _record(workdir, output: str, rule: str, log: str, start: float, end: float, split: bool = False) -> None:
    """A metadata record as Snakemake 9 writes it (file name: urlsafe base64 of the output path;
    ``split``: in @-prefixed parts, as it does past NAME_MAX)."""
    name = urlsafe_b64encode(output.encode()).decode()
    path = workdir / ".snakemake" / "metadata" / (f"{name[:12]}/@{name[12:]}" if split else name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"rule": rule, "input": [], "log": [log], "starttime": T0 + start,
                                "endtime": T0 + end, "incomplete": False, "record_format_version": 6}))


def _output(workdir, path: str) -> None:
    (workdir / path).parent.mkdir(parents=True, exist_ok=True)
    (workdir / path).write_text("x")


def _log(workdir, path: str, lines: list[tuple[float, str]]) -> None:
    (workdir / path).parent.mkdir(parents=True, exist_ok=True)
    (workdir / path).write_text("".join(f"{_stamp(t)} INFO {text}\n" for t, text in lines))


@pytest.fixture
def finished_run(tmp_path):
    """Two train jobs, an index, an index_queries and an evaluate job, a bm25 job (not a planned
    stage) and a record of an output that is gone (an older run's)."""
    for out in ("model/config.json", "params.json", "train_log.jsonl"):
        _output(tmp_path, f"{TRAIN}/{out}")
    # a train job's records: one start (its marker), each output's own end; the last is the job's end
    _record(tmp_path, f"{TRAIN}/model", "train", f"{TRAIN}/train.log", 0.5, 70.0)
    _record(tmp_path, f"{TRAIN}/train_log.jsonl", "train", f"{TRAIN}/train.log", 0.5, 71.25, split=True)
    _record(tmp_path, f"{TRAIN}/params.json", "train", f"{TRAIN}/train.log", 0.5, 72.5)
    _log(tmp_path, f"{TRAIN}/train.log", [(0, "lsrbench.job: train: started (1 threads)"),
                                          (11, "lsrbench.model.train: training 50 steps of 16 triplets (k=4, shared head)"),
                                          (72, "lsrbench.job: train: done in 1m12s; read ...")])
    other = "results/runs/splade-tiny/k1/5d3b08c055fb"
    _output(tmp_path, f"{other}/params.json")
    _record(tmp_path, f"{other}/params.json", "train", f"{other}/train.log", 100.0, 190.0)
    _log(tmp_path, f"{other}/train.log", [(100, "lsrbench.job: train: started (1 threads)"),
                                          (109, "lsrbench.model.train: training 50 steps of 16 triplets (k=1, shared head)")])
    for out in ("docs.npz", "queries.npz"):
        _output(tmp_path, f"{INDEX}/{out}")
        _record(tmp_path, f"{INDEX}/{out}", "index", f"{INDEX}/index.log", 200.0, 260.0)
    _log(tmp_path, f"{INDEX}/index.log", [(200, "lsrbench.job: index: started (1 threads)"),
                                          (210, "sentence_transformers.base.model: Loading SparseEncoder model"),
                                          (212, "lsrbench.index.indexing: encoding 4168 documents on cpu (fp32, fast path)")])
    queries = f"{TRAIN}/other-dataset/aaaaaaaaaaaa/queries.npz"
    _output(tmp_path, queries)
    _record(tmp_path, queries, "index_queries", f"{TRAIN}/other-dataset/aaaaaaaaaaaa/index.log", 300.0, 320.0)
    _output(tmp_path, f"{EVALUATE}/metrics.tsv")
    _record(tmp_path, f"{EVALUATE}/metrics.tsv", "evaluate", f"{EVALUATE}/evaluate.log", 400.0, 406.0)
    _log(tmp_path, f"{EVALUATE}/evaluate.log", [
        (400, "lsrbench.job: evaluate: started (1 threads)"),
        (405, "lsrbench.stages.evaluate: evaluate splade-tiny k=4 on vaswani: 93 queries x 4168 documents, search 3.6 s; "
              "nDCG@10 0.009178, RR@10 0.02945")])
    _output(tmp_path, "results/bm25/vaswani/c8e0fba8a029/metrics.tsv")
    _record(tmp_path, "results/bm25/vaswani/c8e0fba8a029/metrics.tsv", "bm25", "results/bm25/b.log", 0.0, 5.0)
    _record(tmp_path, "results/runs/splade-tiny/k16/gone/params.json", "train", "results/runs/gone.log", 0.0, 500.0)
    return tmp_path


def test_measured_jobs_and_their_start_up(finished_run):
    jobs = [pvm.split_job(j, finished_run) for j in pvm.metadata_jobs(finished_run, "results")]
    assert [(j["rule"], j["stage"]) for j in jobs] == [("train", "train"), ("train", "train"), ("index", "index"),
                                                       ("index_queries", "index"), ("evaluate", "evaluate")]
    first, second, index, index_queries, evaluate = jobs
    assert first["seconds"] == pytest.approx(72.0)  # 0.5 -> 72.5: the last of its three outputs
    assert first["startup_s"] == pytest.approx(10.5) and first["compute_s"] == pytest.approx(61.5)
    assert second["seconds"] == pytest.approx(90.0) and second["startup_s"] == pytest.approx(9.0)
    assert index["seconds"] == pytest.approx(60.0) and index["startup_s"] == pytest.approx(12.0)
    assert index_queries["seconds"] == pytest.approx(20.0) and index_queries["startup_s"] is None  # no log
    assert evaluate["seconds"] == pytest.approx(6.0) and evaluate["search_s"] == pytest.approx(3.6)
    assert evaluate["startup_s"] is None


def test_comparison_with_a_plan(finished_run):
    jobs = [pvm.split_job(j, finished_run) for j in pvm.metadata_jobs(finished_run, "results")]
    calibration = {"train_startup_seconds": 10.0, "index_startup_seconds": 10.0, "evaluate_startup_seconds": 4.0}
    plan = {"backbones": {
        # 2 train jobs of 90 s and 3 index jobs of 30 s, 1 evaluate job of 4 s (hours as plan writes them)
        "splade-tiny": {"train_jobs": 2, "train_hours": 180 / 3600, "index_jobs": 3, "index_hours": 90 / 3600,
                        "evaluate_jobs": 1, "evaluate_hours": 4 / 3600, "calibration": calibration},
        "absent": {"train_jobs": 5, "train_hours": None, "index_jobs": 5, "index_hours": None,
                   "evaluate_jobs": 5, "evaluate_hours": None, "calibration": {"error": "not on disk"}}}}
    comparison = pvm.compare(plan, jobs)
    train, index, evaluate = comparison["train"], comparison["index"], comparison["evaluate"]
    assert train["estimated_s_per_job"] == pytest.approx(90.0) and train["estimated_startup_s"] == 10.0
    assert train["measured_s_per_job"] == pytest.approx({"mean": 81.0, "min": 72.0, "max": 90.0, "n": 2})
    assert train["measured_startup_s"]["mean"] == pytest.approx(9.75)
    assert train["ratio_estimated_to_measured"] == pytest.approx(90 / 81) and train["within_tolerance"] is True
    # index: (60 + 20) / 2 = 40 s measured against 30 s planned: 0.75, just within 25%
    assert index["measured_s_per_job"]["mean"] == pytest.approx(40.0)
    assert index["ratio_estimated_to_measured"] == pytest.approx(0.75) and index["within_tolerance"] is True
    assert evaluate["ratio_estimated_to_measured"] == pytest.approx(4 / 6) and evaluate["within_tolerance"] is False
    assert evaluate["measured_search_s"]["mean"] == pytest.approx(3.6)
    text = pvm.comparison_text(comparison)
    assert "| train | 2 | 90.0 (10.0) | 81.0 (72.0-90.0) | 9.8 | 1.11 | True |" in text, text
    assert "| evaluate | 1 | 4.0 (4.0) | 6.0 (6.0-6.0) | - | 0.67 | False |" in text, text
