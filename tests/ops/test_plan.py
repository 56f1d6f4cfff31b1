"""``lsrbench plan`` on the tiny default, as a user runs it: job counts from Snakemake's dry run,
dataset sizes, and the compute extrapolated from a calibration on this CPU (exact algebra on the
numbers it prints to JSON); a backbone that is not on disk is said not calibrated."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from helpers.cli import lsrbench
from helpers.paths import REPO, shared_or_skip
from lsrbench.config.grid import runs
from lsrbench.ops.calibrate import calibration_texts
from lsrbench.ops.plan import estimate_jobs


def _plan(tmp_path, *args, config=REPO / "config/config.yaml"):
    out = tmp_path / "plan.json"
    # in this process (helpers.cli); its dry run is Snakemake's own process, as for a user
    proc = lsrbench("plan", "--configfile", config, "--results", tmp_path / "results", "--json", out, *args, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout, json.loads(out.read_text())


def test_job_counts_and_dataset_sizes_without_calibration(tmp_path):
    mirror = shared_or_skip()
    stdout, plan = _plan(tmp_path, "--mirror", str(mirror), "--no-calibration")
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    grid = runs(config)  # 2 backbones: 3 + 2 runs (splade-tiny's untie run included)
    assert len(grid) == 5
    jobs = plan["jobs"]
    assert jobs["train"] == jobs["index"] == jobs["evaluate"] == len(grid)
    assert jobs["norm"] == 2 and jobs["dataset"] == jobs["bm25"] == jobs["triplets"] == jobs["mlm_refit"] == 1
    assert jobs["total"] == sum(n for rule, n in jobs.items() if rule != "total")
    # Vaswani in the mirror: 11,429 documents, 93 queries (../shared/README.md); pooled at depth 20
    # and not yet built, the evaluated subset is estimated as 93 x 20 documents
    assert plan["datasets"]["vaswani"] == {"documents": 11429, "queries": 93, "evaluated_documents": 93 * 20,
                                           "source": str(mirror / "data" / "vaswani")}
    b = plan["backbones"]["splade-tiny"]
    assert (b["train_jobs"], b["index_jobs"], b["evaluate_jobs"]) == (3, 3, 3)
    assert b["documents"] == 3 * 93 * 20 and b["queries"] == 3 * 93
    assert b["train_hours"] is None and b["calibration"] is None
    for header in ("## Jobs per rule", "## Datasets", "## Compute", "## Assumptions"):
        assert header in stdout, stdout
    assert re.search(r"^\| train +\| +5 \|$", stdout, re.M) and re.search(r"^\| vaswani +\| +11429 \|", stdout, re.M)


def test_published_sizes_of_the_paper_grid(tmp_path):
    stdout, plan = _plan(tmp_path, "--no-calibration", config=REPO / "config/paper.yaml")
    jobs = plan["jobs"]
    # seven backbones and the scale control at five k, the untie ablation (RoBERTa, ALBERT at k=16), BERT
    # untied at k=1 and the vocabulary contrast at k=1
    trainings = 8 * 5 + 2 + 1 + 1
    assert jobs["train"] == trainings and jobs["evaluate"] == trainings * 28
    # MS MARCO's passages are encoded once per run (DL19 only gets its queries encoded)
    assert jobs["index"] == trainings * 27 and jobs["index_queries"] == trainings
    sizes = plan["datasets"]
    assert sizes["msmarco-dev"]["documents"] == 8_841_823 and sizes["trec-dl-2019"]["queries"] == 43
    assert sizes["NanoTouche2020"] == {"documents": 5745, "queries": 49, "evaluated_documents": 5745, "source": "published"}
    per_backbone = {"roberta": 6, "albert": 6, "bert": 6, "bert-cased-at-bert-scale": 1}
    assert all(b["calibration"] is None and b["train_jobs"] == per_backbone.get(name, 5)
               and b["evaluate_jobs"] == per_backbone.get(name, 5) * 28 for name, b in plan["backbones"].items())
    assert re.search(r"^\| total \(calibrated rows\) +\| +\| 44 ", stdout, re.M), stdout
    # docs/cluster.md quotes these counts: they must be plan's
    (line,) = [line for line in (REPO / "docs/cluster.md").read_text(encoding="utf-8").splitlines()
               if "For the paper config:" in line]
    quoted = {rule: int(n.replace(",", "")) for n, rule in re.findall(r"([\d,]+) (train|index_queries|index|evaluate)\b", line)}
    assert quoted == {rule: jobs[rule] for rule in ("train", "index", "index_queries", "evaluate")}, line
    assert f"{jobs['total']:,} jobs in all" in line, line
    # the bill: every backbone sized from its published config, none on disk; the scale control is BERT's
    # checkpoint, so a run of it costs what a run of BERT costs (BERT has one more: untied at k=1)
    bill = plan["bill"]
    assert set(bill) == set(plan["backbones"]) and all(b["gpu_hours"] for b in bill.values())
    assert all(b["shape"].startswith("published config of ") for b in bill.values())
    for stage in ("train", "index"):
        assert bill["bert-at-modernbert-scale"]["gpu_hours"][stage]["bound"] == pytest.approx(
            bill["bert"]["gpu_hours"][stage]["bound"] * 5 / 6, rel=1e-12)
    assert bill["bert-at-modernbert-scale"]["disk"]["index"] == pytest.approx(bill["bert"]["disk"]["index"] * 5 / 6, rel=1e-9)
    total = plan["bill_totals"]["gpu_hours"]["train"]["bound"]
    assert total == pytest.approx(sum(b["gpu_hours"]["train"]["bound"] for b in bill.values()), rel=1e-12)
    assert "## The bill: GPU-hours and disk per backbone (H100)" in stdout and "### Assumptions and uncertainty" in stdout
    # its first line is the total, as the README quotes it
    total = stdout.splitlines()[0]
    assert total.startswith("total: ") and " GPU-hours (H100), " in total and " days on 8 GPUs " in total
    assert f"```text\n{total}\n```" in (REPO / "README.md").read_text(encoding="utf-8"), total
    # the checkout's CPU smoke record (the default --records): every family in it shows the batches it
    # trained at, and the assumptions say why not the paper's and how they are scaled to it
    record = json.loads((REPO / "benchmark/results/real_size_smoke.json").read_text())
    models = {name: str(b["model"]) for name, b in yaml.safe_load((REPO / "config/paper.yaml").read_text())["backbones"].items()}
    shown = {name for name, b in bill.items() if b["smoke"]}
    assert shown == {name for name, model in models.items() if model in record["families"]} and shown
    assert all(bill[name]["smoke"]["trained_at"] == record["batches"] for name in shown)
    batches = ", ".join(map(str, record["batches"]))
    assert stdout.count(f"(extrapolated from batches {batches})") == len(shown)
    assert f"It trained at batches {batches}, not the paper's 32: " in stdout and "Uncertainty: 8x beyond" in stdout


def test_records_and_gpu_options_choose_what_the_bill_reads(tmp_path):
    """--records DIR: the smoke record there (its note on the batches it ran), none of the checkout's;
    --gpu H200: that datasheet's peak (the hours of the bound scale by H100's peak / H200's)."""
    mirror = shared_or_skip()
    records = tmp_path / "records"
    records.mkdir()
    note = {"batch": 32, "trained_at": [4, 8], "why": "too big here", "how": "a line", "uncertainty": "4x beyond"}
    (records / "real_size_smoke.json").write_text(json.dumps({"paper_batch": note, "families": {}}))
    _, h100 = _plan(tmp_path / "a", "--mirror", str(mirror), "--no-calibration", "--records", str(records))
    stdout, h200 = _plan(tmp_path / "b", "--mirror", str(mirror), "--no-calibration", "--records", str(records),
                         "--gpu", "H200")
    assert h200["records"] == {"smoke": str(records / "real_size_smoke.json"), "gpu": None, "peers": None,
                               "peers_small": None}
    assert "It trained at batches 4, 8, not the paper's 32: too big here. Scaled: a line. Uncertainty: 4x beyond." in stdout
    assert "## The bill: GPU-hours and disk per backbone (H200)" in stdout
    from lsrbench.index.roofline import DATASHEET_BF16_TFLOPS

    ratio = DATASHEET_BF16_TFLOPS["H100"][0] / DATASHEET_BF16_TFLOPS["H200"][0]
    sized = {name: bill for name, bill in h200["bill"].items() if bill["gpu_hours"]}
    assert "splade-tiny" in sized  # its folder's config.json
    for name, bill in sized.items():
        assert bill["rate"]["peak"].startswith("datasheet: NVIDIA H200")
        assert bill["gpu_hours"]["train"]["bound"] == pytest.approx(h100["bill"][name]["gpu_hours"]["train"]["bound"] * ratio)
        assert bill["evaluate_cpu_hours"] is None  # no search record in DIR


@pytest.mark.slow
def test_calibrated_compute_is_the_extrapolation_of_the_measured_times(tmp_path):
    mirror = shared_or_skip()
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config["datasets_file"] = str(REPO / "config/datasets.yaml")
    config["backbones"]["absent"] = {"model": "some-org/absent-mlm", "k": [1]}  # a hub id, not on disk
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    stdout, plan = _plan(tmp_path, "--mirror", str(mirror), "--train-steps", "2", "--passages", "24",
                         "--train-batch", "2", config=path)
    recipe = config["recipe"]
    tiny, twin = plan["backbones"]["splade-tiny"], plan["backbones"]["splade-tiny-x10"]
    cal = tiny["calibration"]
    assert cal == twin["calibration"]  # one checkpoint, calibrated once
    assert cal["train_batch"] == 2 and cal["device"].startswith("cpu")
    assert cal["train_step_seconds"] > 0 and cal["document_seconds"] > 0 and cal["query_seconds"] > 0
    # posting time of 24 passages can round to 0.0 s on a quiet machine: a number, never negative
    assert cal["posting_seconds"] >= 0 and "24 passages of vaswani" in cal["texts"]
    assert cal["threads"] == 1 and cal["device"] == "cpu (1 threads)"  # as a local job runs
    assert 0 < cal["evaluate_startup_seconds"] < cal["train_startup_seconds"] == cal["index_startup_seconds"]
    assert cal["encode_call_seconds"] >= 0 and cal["result_seconds"] > 0
    # at least 4 steps timed after the warm-up (--train-steps 2 asks fewer): their mean, their spread, the CPU got
    samples = cal["train_step_samples"]
    assert len(samples) == 4 and cal["train_step_seconds"] == pytest.approx(sum(samples) / 4, rel=1e-12)
    assert cal["train_step_spread"] == pytest.approx((max(samples) - min(samples)) / sorted(samples)[2], rel=1e-12)
    assert cal["cores_got"] > 0 and isinstance(cal["noisy"], list)
    for b in (tiny, twin):
        n = b["train_jobs"]
        assert b["train_hours"] == pytest.approx(n * (recipe["steps"] * cal["train_step_seconds"] * recipe["batch_size"]
                                                      / 2 + cal["train_startup_seconds"]) / 3600, rel=1e-12)
        # each index job: its start-up, one encode call for the documents and one for the queries
        assert b["index_hours"] == pytest.approx((b["documents"] * cal["document_seconds"]
                                                  + b["queries"] * cal["query_seconds"]
                                                  + b["index_jobs"] * (2 * cal["encode_call_seconds"]
                                                                       + cal["index_startup_seconds"])) / 3600, rel=1e-12)
        depth = config["evaluation"]["pool_depth"]  # the evaluated subset: 93 queries x the pool depth
        assert b["postings"] == pytest.approx(b["evaluate_jobs"] * 93 * depth * 93 * plan["assume_flops"], rel=1e-12)
        assert b["result_lines"] == b["evaluate_jobs"] * 93 * min(1000, 93 * depth)
        assert b["evaluate_hours"] == pytest.approx((b["postings"] * cal["posting_seconds"]
                                                     + b["result_lines"] * cal["result_seconds"]
                                                     + b["evaluate_jobs"] * cal["evaluate_startup_seconds"]) / 3600,
                                                    rel=1e-12)
    absent = plan["backbones"]["absent"]
    assert absent["train_jobs"] == 1 and absent["train_hours"] is None
    assert "not on disk" in absent["calibration"]["error"]
    assert plan["totals"]["train"] == pytest.approx(tiny["train_hours"] + twin["train_hours"], rel=1e-12)
    line = next(line for line in stdout.splitlines() if line.startswith("| absent"))
    assert "not on disk (hub id some-org/absent-mlm" in line and "| -  " in line


def test_estimate_per_job_is_start_up_plus_work():
    """The cost model on a hand-made calibration (exact algebra): a job's start-up once, training
    steps at the timed batch scaled to the recipe's, an index job's two encode calls (documents,
    queries), an index_queries job's one, and evaluate's postings and retrieved lines."""
    config = {"recipe": {"steps": 10, "batch_size": 8}, "evaluation": {"top_k": 100, "pool_depth": 50}}
    calibration = {"train_step_seconds": 2.0, "train_batch": 4, "document_seconds": 0.01, "query_seconds": 0.001,
                   "encode_call_seconds": 0.5, "posting_seconds": 1e-6, "result_seconds": 1e-4,
                   "train_startup_seconds": 9.0, "index_startup_seconds": 9.0, "evaluate_startup_seconds": 3.0}
    jobs = [("train", {"run": "a", "k": "1"}), ("train", {"run": "a+untie", "k": "16"}), ("train", {"run": "b", "k": "1"}),
            ("index", {"run": "a", "k": "1", "dataset": "d"}), ("index_queries", {"run": "a", "k": "1", "dataset": "q"}),
            ("evaluate", {"run": "a", "k": "1", "dataset": "d"})]
    datasets = {"d": {"evaluated_documents": 200, "queries": 20}, "q": {"evaluated_documents": 50, "queries": 5}}
    b = estimate_jobs(config, "a", jobs, datasets, calibration, 4.0)
    assert (b["train_jobs"], b["index_jobs"], b["evaluate_jobs"]) == (2, 2, 1)
    assert b["train_hours"] * 3600 == pytest.approx(2 * (10 * 2.0 * 8 / 4 + 9.0))  # 98 s
    assert b["documents"] == 200 and b["queries"] == 25
    assert b["index_hours"] * 3600 == pytest.approx(200 * 0.01 + 25 * 0.001 + 3 * 0.5 + 2 * 9.0)
    assert b["postings"] == 200 * 20 * 4.0 and b["result_lines"] == 100 * 20
    assert b["evaluate_hours"] * 3600 == pytest.approx(16000 * 1e-6 + 2000 * 1e-4 + 3.0)
    older = {k: v for k, v in calibration.items() if "startup" not in k and k not in ("encode_call_seconds", "result_seconds")}
    assert estimate_jobs(config, "a", jobs, datasets, older, 4.0)["train_hours"] * 3600 == pytest.approx(80.0)


def test_calibration_passages_are_spread_over_the_corpus(tmp_path):
    """The timed passages come from the first folder that has a corpus (the pooled subset the index
    jobs encode, before the full collection), at an even stride over its lines, not its first lines."""
    pooled, full = tmp_path / "pool", tmp_path / "full"
    for folder, docs in ((pooled, 10), (full, 4)):
        folder.mkdir()
        (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": str(i), "title": "", "text": f"doc {i}"}) + "\n"
                                                     for i in range(docs)))
        (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": str(i), "text": f"query {i}"}) + "\n"
                                                      for i in range(7)))
    config = {"training_data": {"dataset": "d"}, "evaluation": {"datasets": ["d"]}, "mirror": None}
    docs, queries, texts = calibration_texts(config, 3, lambda name: [tmp_path / "missing", pooled, full])
    assert docs == ["doc 0", "doc 3", "doc 6"] and queries == ["query 0", "query 2", "query 4"]
    assert texts == f"3 passages of d ({pooled})"
