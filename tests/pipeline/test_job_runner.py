"""What a job's log file (beside its outputs) says, as a user following a grid with ``tail -f`` reads
it: UTC time stamps, train and index progress lines with their fields, and one summary line per
job; read from the finished micro run (conftest.py's ``micro_run``)."""

from __future__ import annotations

import json
import re

import pytest

from helpers.snakemake import COLLAPSE_K, index_dir, layout, train_dir

pytestmark = pytest.mark.slow

STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
RATE_ETA = r"\| [0-9.]+ {unit}/s \| elapsed \S+ \| ETA \S+"


def test_train_log_has_a_progress_line_per_step_with_loss_rate_and_eta(micro_run):
    run = train_dir(micro_run["work"], micro_run["config"], "rand-roberta", "1")
    text = (run / "train.log").read_text()
    pattern = re.compile(rf"^{STAMP} INFO lsrbench\.model\.train_log: train: (\d+)/3 steps \(\d+%\) loss (\S+) "
                         + RATE_ETA.format(unit="steps") + "$")
    found = [m for m in map(pattern.match, text.splitlines()) if m]
    # 3 steps: every max(1, 3 // 20) = 1 step, so every step has its line
    assert [int(m.group(1)) for m in found] == [1, 2, 3], text
    rows = [json.loads(line) for line in (run / "train_log.jsonl").read_text().splitlines()]
    assert [m.group(2) for m in found] == [f"{row['loss']:.4g}" for row in rows]
    assert re.search(rf"^{STAMP} INFO lsrbench\.job: train: done in \S+; read .*triplets\.jsonl .*; wrote "
                     r"\S+/model/ \(\d+ files, [0-9.]+ [kM]B\)", text, re.M), text


def test_index_log_counts_documents_up_to_the_corpus_size(micro_run):
    from lsrbench.index.sparse import load_sparse

    work, cfg = micro_run["work"], micro_run["config"]
    n_docs = load_sparse(index_dir(work, cfg, "rand-roberta", "1", "slice") / "docs.npz")[0].shape[0]
    done = {}
    for k in ("1", COLLAPSE_K):  # the sharded fast path and the plain path of the collapsed model
        text = (index_dir(work, cfg, "rand-roberta", k, "slice") / "index.log").read_text()
        pattern = re.compile(rf"^{STAMP} INFO lsrbench\.index\.indexing: index slice documents: (\d+)/{n_docs} docs "
                             r"\(\d+%\) " + RATE_ETA.format(unit="docs") + "$")
        done[k] = [int(m.group(1)) for m in map(pattern.match, text.splitlines()) if m]
        assert done[k] and done[k][-1] == n_docs, text
        assert "index slice queries: 20/20 queries (100%)" in text, text
        assert re.search(r"INFO lsrbench\.job: index: done in \S+; read .*; wrote .*docs\.npz \([0-9.]+ [kM]B\)", text)
    # the fast path reports after each batch of 16; a line is due every 5 % of the documents (32) or
    # 60 s: the first batch, then never more than 32 documents apart, the last one always
    counts = done["1"]
    assert counts[0] == 16 and all(0 < b - a <= 32 for a, b in zip(counts, counts[1:])), counts
    assert len(counts) >= n_docs // 32
    # the plain path (the collapsed model) reports per chunk of 4,096 texts: the whole slice at once
    assert done[COLLAPSE_K] == [n_docs]


LOGS = {  # each job's log, beside its outputs (lsrbench.dag.layout)
    "dataset": lambda lay: lay.get("data", dataset="slice").path("dataset.log"),
    "norm": lambda lay: lay.get("norms", backbone="rand-roberta").path("norm.log"),
    "evaluate": lambda lay: lay.get("evaluate", run="rand-roberta", k="1", dataset="slice").path("evaluate.log"),
    "bm25": lambda lay: lay.get("bm25", dataset="slice").path("bm25.log"),
}


@pytest.mark.parametrize("log, says", [
    ("dataset", r"dataset slice: \d+ documents, 20 queries, \d+ judgments"),
    ("norm", r"norm: rand-roberta \(RobertaForMaskedLM from .*\): head \d+ x 32, Frobenius norm"),
    ("evaluate", r"evaluate rand-roberta k=1 on slice: 20 queries x \d+ documents, search"),
    ("bm25", r"bm25 on slice: 20 queries x \d+ documents; nDCG@10 0\.\d+"),
])
def test_every_job_log_says_what_it_did(micro_run, log, says):
    text = (micro_run["work"] / LOGS[log](layout(micro_run["config"]))).read_text()
    assert re.search(says, text), text
    assert re.search(rf"^{STAMP} INFO lsrbench\.job: \w+: done in \S+; read .*; wrote .*\(", text, re.M), text


SPLIT = re.compile(rf"^{STAMP} INFO lsrbench\.job: \w+: time split: ([0-9.]+) s start-up before the job, "
                   r"([0-9.]+) s importing, ([0-9.]+) s the rest$", re.M)


@pytest.mark.parametrize("log", sorted(LOGS))
def test_every_job_log_splits_its_time_into_start_up_imports_and_the_rest(micro_run, log):
    """benchmark/job_split.py reads this line (issue 21.3: the fixed costs against compute)."""
    text = (micro_run["work"] / LOGS[log](layout(micro_run["config"]))).read_text()
    match = SPLIT.search(text)
    assert match, text
    start_up, imports, rest = map(float, match.groups())
    assert 0 < start_up < 120 and 0 <= imports < 600 and 0 <= rest < 3600


@pytest.mark.parametrize("job, provenance", [
    ("evaluate", lambda lay: lay.get("evaluate", run="rand-roberta", k="1", dataset="slice").path("provenance.json")),
    ("bm25", lambda lay: lay.get("bm25", dataset="slice").path("provenance.json")),
])
def test_jobs_that_need_no_model_never_import_torch(micro_run, job, provenance):
    """A job that searches CSR matrices or runs BM25 is not made to import torch (seconds per job)
    for its provenance record, which then says so instead of giving torch's thread count."""
    record = json.loads((micro_run["work"] / provenance(layout(micro_run["config"]))).read_text())
    assert record["device"]["torch"] == "not used" and "torch_threads" not in record["device"], record["device"]
