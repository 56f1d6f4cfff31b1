"""The Snakemake DAG: job lists from dry runs, config isolation, a micro end-to-end run."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from helpers.paths import REPO
from helpers.snakemake import (COLLAPSE_K, copy_run, eval_dir, index_dir, job_counts, jobs_of, norms_json,
                               run_snakemake as snakemake, train_dir)
from lsrbench.config.grid import runs


def test_default_dry_run_lists_every_backbone_and_k(tmp_path):
    proc = snakemake("-n", "--cores", "1", "-d", str(tmp_path), "--configfile", str(REPO / "config/config.yaml"),
                     "--config", f"datasets_file={REPO / 'config/datasets.yaml'}", "mirror=")
    out = proc.stdout + proc.stderr
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    expected = set(runs(config))
    # the miniature's runs (docs/miniature.md): the re-fit and its x10 twin, each at k in {1, 16},
    # plus the re-fit at its largest k in untie mode; one re-fit job for both
    assert expected == {(b, k) for b in ("splade-tiny", "splade-tiny-x10") for k in ("1", "16")} | {
        ("splade-tiny+untie", "16")}
    assert {(j["run"], j["k"]) for j in jobs_of(out, "train")} == expected
    counts = job_counts(out)
    n_ds = len(config["evaluation"]["datasets"])
    assert counts["train"] == len(expected)
    assert counts["index"] == counts["evaluate"] == len(expected) * n_ds
    assert counts["norm"] == len(config["backbones"])
    assert counts["mlm_refit"] == 1


def test_train_and_index_jobs_take_one_thread_each_locally(tmp_path):
    """Two one-thread jobs side by side beat one all-cores job on 2 cores (params.job_threads);
    --set-threads still gives a rule more."""
    from lsrbench.dag.stage import job_threads

    def threads(*extra: str) -> dict[str, set[str]]:
        out = snakemake("-n", "--cores", "2", "-d", str(tmp_path), "--configfile", str(REPO / "config/config.yaml"),
                        *extra, "--config", f"datasets_file={REPO / 'config/datasets.yaml'}", "mirror=").stdout
        found: dict[str, set[str]] = {}
        for block in re.split(r"\n(?=(?:local)?rule )", out):
            name = re.match(r"(?:local)?rule (\w+):", block)
            if name and name.group(1) in ("train", "index", "index_queries"):
                found.setdefault(name.group(1), set()).update(re.findall(r"^\s+threads: (\d+)$", block, re.M))
        return found

    # a dry run prints a job's threads only above 1 (all-cores jobs printed "threads: 2" here)
    assert threads() == {"train": set(), "index": set()}
    assert threads("--set-threads", "train=2") == {"train": {"2"}, "index": set()}
    assert (job_threads(False, 16), job_threads(True, 16), job_threads(True, None)) == (1, 16, 1)


def test_ready_jobs_go_in_the_order_of_their_stages_reports_last(tmp_path):
    """Snakemake's priority per stage (each stage's ``priority``, lsrbench.stages): data 4, train 3, index 2,
    evaluate and BM25 1, reports and the config snapshot 0. On 2 cores the last training's index no
    longer runs alone at the end (benchmark/README.md), and a failing job leaves the reports as they were."""
    from lsrbench.stages import stage

    out = snakemake("-n", "--cores", "2", "-d", str(tmp_path), "--configfile", str(REPO / "config/config.yaml"),
                    "--config", f"datasets_file={REPO / 'config/datasets.yaml'}", "mirror=").stdout
    found: dict[str, set[str]] = {}
    for block in re.split(r"\n(?=(?:local)?rule )", out):
        name = re.match(r"(?:local)?rule (\w+):", block)
        if name:
            found.setdefault(name.group(1), set()).update(re.findall(r"^\s+priority: (\d+)$", block, re.M) or {"0"})
    rules = ("dataset", "pool", "triplets", "mlm_refit", "norm", "train", "index", "evaluate", "bm25")
    assert {rule: found.pop(rule) for rule in rules} == {
        "dataset": {"4"}, "pool": {"4"}, "triplets": {"4"}, "mlm_refit": {"4"}, "norm": {"4"}, "train": {"3"},
        "index": {"2"}, "evaluate": {"1"}, "bm25": {"1"}}
    assert stage("train").priority > stage("index").priority > stage("evaluate").priority > 0
    assert {"table1", "claims", "config_snapshot"} <= set(found) and all(p == {"0"} for p in found.values()), found


def _copy_config(tmp_path: Path, edit) -> Path:
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config["datasets_file"] = str(REPO / "config/datasets.yaml")
    edit(config)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def test_added_backbone_entry_shows_up_without_code_changes(tmp_path):
    def add(config):
        config["backbones"]["my-new-backbone"] = {"model": "some-org/some-mlm", "k": [1, 2, 8]}

    path = _copy_config(tmp_path, add)
    out = snakemake("-n", "--cores", "1", "-d", str(tmp_path), "--configfile", str(path)).stdout
    mine = sorted(j["k"] for j in jobs_of(out, "train") if j["run"] == "my-new-backbone")
    assert mine == ["1", "2", "8"]
    assert job_counts(out)["train"] == len(runs(yaml.safe_load((REPO / "config/config.yaml").read_text()))) + 3


def test_configfile_replaces_default_backbones(tmp_path):
    """A --configfile is not deep-merged into config/config.yaml: no backbone leaks in."""
    def only_one(config):
        config["backbones"] = {"solo": {"model": "some-org/solo", "k": [2]}}
        config.pop("claims")  # they name the default's runs, which this config no longer has (refused)

    path = _copy_config(tmp_path, only_one)
    out = snakemake("-n", "--cores", "1", "-d", str(tmp_path), "--configfile", str(path)).stdout
    assert [(j["run"], j["k"]) for j in jobs_of(out, "train")] == [("solo", "2")]


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda c: c["backbones"]["splade-tiny"].update(colour="red"), "backbones.splade-tiny"),
        (lambda c: c["backbones"]["splade-tiny"].update(k=[1, 0]), "backbones.splade-tiny.k[1]"),
        (lambda c: c["backbones"]["splade-tiny"].update(k=["four"]), "backbones.splade-tiny.k[0]"),
        (lambda c: c["evaluation"].update(datasets=["nope"]), "evaluation.datasets[0]"),
        (lambda c: c["recipe"].update(steps=-1), "recipe.steps"),
    ],
)
def test_bad_config_is_one_clear_line(tmp_path, edit, field):
    path = _copy_config(tmp_path, edit)
    proc = snakemake("-n", "--cores", "1", "-d", str(tmp_path), "--configfile", str(path), check=False)
    assert proc.returncode != 0
    errors = [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("lsrbench: error:")]
    assert len(errors) == 1, proc.stdout + proc.stderr
    assert str(path) in errors[0] and f" {field}: " in errors[0]
    assert "Traceback" not in proc.stderr


def test_duplicate_backbone_name_is_refused(tmp_path):
    text = (REPO / "config/config.yaml").read_text()
    text = text.replace("  splade-tiny-x10:", "  splade-tiny:", 1)
    path = tmp_path / "dup.yaml"
    path.write_text(text.replace("datasets_file: config/datasets.yaml", f"datasets_file: {REPO / 'config/datasets.yaml'}"))
    proc = snakemake("-n", "--cores", "1", "-d", str(tmp_path), "--configfile", str(path), check=False)
    assert proc.returncode != 0
    assert re.search(r"lsrbench: error: .*dup\.yaml: line \d+: YAML error: duplicate key 'splade-tiny'", proc.stderr)


@pytest.mark.slow
def test_micro_end_to_end_with_random_roberta(micro_run, tmp_path):
    """The whole DAG on a random RoBERTa (non-BERT family) and a slice of Vaswani: the session's
    finished micro run (k = 1, and k = 1e-30, the forced collapse, which is a result too:
    tests/dag/test_reliability_dag.py), then, in a copy of it, a report-only regeneration."""
    config = yaml.safe_load(micro_run["config"].read_text())
    cfg_path, work = micro_run["config"], copy_run(micro_run, tmp_path / "work")
    ks = {"1", COLLAPSE_K}

    res = work / "results"
    metrics = pd.read_csv(res / "metrics.csv", dtype={"k": str})
    assert list(metrics.columns) == ["backbone", "k", "dataset", "measure", "value"]
    bm25 = metrics[metrics["backbone"] == "BM25"]
    assert set(bm25["measure"]) == {"nDCG@10", "RR@10", "R@100"} and set(bm25["k"]) == {"-"}
    assert bm25["value"].between(0, 1).all()
    metrics = metrics[metrics["backbone"] != "BM25"]
    assert set(metrics["k"]) == ks
    assert set(metrics["measure"]) == {"nDCG@10", "RR@10", "R@100", "FLOPs", "query_active_dims", "doc_active_dims",
                                       "collapsed"}
    assert (metrics.loc[(metrics["measure"] == "collapsed") & (metrics["k"] == "1"), "value"] == 0.0).all()
    assert len(metrics) == 2 * 7 and metrics["value"].map(math.isfinite).all()
    assert ((metrics["value"] >= 0) & ((metrics["measure"].isin(["FLOPs", "query_active_dims", "doc_active_dims"]))
                                       | (metrics["value"] <= 1))).all()
    table = (res / "table1.md").read_text()
    assert table.count("random RoBERTa 1L") == 2
    assert (res / "tradeoff.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    norms = json.loads(norms_json(work, cfg_path, "rand-roberta").read_text())
    assert norms["architecture"] == "RobertaForMaskedLM" and norms["tied"] is True

    run_dir = train_dir(work, cfg_path, "rand-roberta", "1")
    log = [json.loads(line) for line in (run_dir / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [1, 2, 3]
    assert all(math.isfinite(r["loss"]) and r["document_active_dims"] is not None for r in log)
    from sentence_transformers import SparseEncoder

    from lsrbench.evaluate.trec import read_trec_run
    from lsrbench.index.sparse import load_sparse

    model = SparseEncoder(str(run_dir / "model"))
    assert model.get_embedding_dimension() == norms["vocab_size"]
    docs, doc_ids = load_sparse(index_dir(work, cfg_path, "rand-roberta", "1", "slice") / "docs.npz")
    assert docs.shape == (len(doc_ids), norms["vocab_size"])
    run = read_trec_run(eval_dir(work, cfg_path, "rand-roberta", "1", "slice") / "run.trec")
    assert all(len(hits) <= 100 for hits in run.values())
    prov = json.loads((run_dir / "train_provenance.json").read_text())
    assert prov["seed"] == config["recipe"]["seed"] and prov["packages"]["torch"] and prov["config_hash"]
    assert prov["head_norms"]["frobenius_norm"] == norms["frobenius_norm"]

    for name in ("table_beir.md", "norms.md", "norms.png", "tradeoff.pdf", "loss_curves.png"):
        assert (res / name).stat().st_size > 0
    # Snakemake's HTML report bundles the tables (as HTML pages), figures and per-rule runtimes
    # (tests/report/test_html_report.py opens it in a browser).
    snakemake("--cores", "1", "-d", str(work), "--configfile", str(cfg_path), "--report", "report.html")
    html = (work / "report.html").read_text(errors="replace")
    assert "results/html/table1.html" in html and "tradeoff.png" in html

    # Regenerating the reports from the cache re-runs only report rules.
    (res / "table1.md").unlink()
    (res / "tradeoff.png").unlink()
    dry = snakemake("-n", "--cores", "1", "-d", str(work), "--configfile", str(cfg_path)).stdout
    assert set(job_counts(dry)) == {"table1", "html_table1", "tradeoff", "all", "total"}
    # ... and in seconds: no model is loaded by a report rule.
    import time
    start = time.time()
    snakemake("--cores", "1", "-d", str(work), "--configfile", str(cfg_path))
    assert (res / "table1.md").exists() and time.time() - start < 60
    # Changing only a report option re-runs only report rules; changing the recipe re-runs training
    # (the edited config is a file of its own: the finished run's is shared by other tests).
    cfg_path = tmp_path / "edited.yaml"
    config["report"]["caption"] = "another caption"
    cfg_path.write_text(yaml.safe_dump(config, sort_keys=False))
    dry = snakemake("-n", "--cores", "1", "-d", str(work), "--configfile", str(cfg_path)).stdout
    assert set(job_counts(dry)) <= {"config_snapshot", "table1", "table_beir", "tradeoff", "collect", "chance", "norms_report",
                                    "loss_curves", "claims", "html_table1", "html_table_beir", "html_norms",
                                    "html_claims", "all", "total"}
    config["recipe"]["learning_rate"] = 3e-5
    cfg_path.write_text(yaml.safe_dump(config, sort_keys=False))
    dry = snakemake("-n", "--cores", "1", "-d", str(work), "--configfile", str(cfg_path)).stdout
    assert job_counts(dry)["train"] == 2


def test_missing_dataset_folder_and_model_folder_fail_before_any_job(tmp_path):
    datasets = tmp_path / "datasets.yaml"
    datasets.write_text(yaml.safe_dump({"gone": {"source": "beir", "path": str(tmp_path / "no-such-folder")}}))

    def use_gone(config):
        config.pop("claims", None)
        config["datasets_file"] = str(datasets)
        config["evaluation"]["datasets"] = ["gone"]
        config["training_data"]["dataset"] = "gone"
        for entry in config["backbones"].values():
            entry["mlm_refit"]["dataset"] = "gone"
        config["report"]["columns"] = [{"name": "x", "datasets": ["gone"], "measure": "nDCG@10"}]
        config["report"]["flops_datasets"] = ["gone"]

    path = _copy_config(tmp_path, use_gone)
    config = yaml.safe_load(path.read_text())
    config["datasets_file"] = str(datasets)
    path.write_text(yaml.safe_dump(config))
    proc = snakemake("-n", "--cores", "1", "-d", str(tmp_path), "--configfile", str(path), check=False)
    assert proc.returncode != 0
    assert f"lsrbench: error: {datasets}: gone.path: dataset folder" in proc.stderr

    def missing_model(config):
        config["backbones"]["splade-tiny"]["model"] = str(tmp_path / "no-model")

    path = _copy_config(tmp_path, missing_model)
    proc = snakemake("-n", "--cores", "1", "-d", str(tmp_path), "--configfile", str(path), check=False)
    assert proc.returncode != 0
    assert f"lsrbench: error: {path}: backbones.splade-tiny.model: model folder" in proc.stderr
