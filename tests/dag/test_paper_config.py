"""config/paper.yaml: the paper's grid as a dry run, with the SLURM profile's resources (no network)."""

from __future__ import annotations

import re

import pytest
import yaml

from helpers.paths import REPO
from helpers.snakemake import job_counts, run_snakemake as snakemake

# The SLURM profile needs the SLURM executor plugin, which only `pip install -e ".[slurm]"` brings
# (it is kept out of the default and test installs: it costs ~9 s per snakemake start where a SLURM
# client cannot reach its controller). CI runs this with the SLURM tests, after installing it.
pytest.importorskip("snakemake_executor_plugin_slurm")
pytestmark = pytest.mark.slurm


def _jobs(output: str) -> list[dict]:
    jobs = []
    for block in re.split(r"\n(?=\[\w{3} \w{3} )", output):
        rule = re.search(r"^\s*(?:local)?rule (\w+):", block, re.M)
        if not rule:
            continue
        wc = re.search(r"wildcards: (.*)", block)
        res = re.search(r"resources: (.*)", block)
        jobs.append({
            "rule": rule.group(1),
            "wildcards": dict(kv.split("=", 1) for kv in wc.group(1).split(", ")) if wc else {},
            "resources": dict(kv.split("=", 1) for kv in res.group(1).split(", ")) if res else {},
        })
    return jobs


def test_paper_dry_run_on_slurm_profile(tmp_path):
    config = yaml.safe_load((REPO / "config/paper.yaml").read_text())
    # from another working directory: the config's relative datasets_file and report.reference
    # are found beside the workflow
    proc = snakemake("-n", "--profile", str(REPO / "profiles/slurm"), "--configfile", str(REPO / "config/paper.yaml"),
                     "-d", str(tmp_path))
    out = proc.stdout + proc.stderr
    counts = job_counts(out)
    # the paper's seven backbones, the scale control (BERT with its head at ModernBERT's scale) and
    # the vocabulary contrast (BERT cased at BERT's scale, k = 1 only)
    assert len(config["backbones"]) == 9 and config["k_grid"] == [1, 2, 4, 8, 16]
    n_datasets = len(config["evaluation"]["datasets"])
    assert n_datasets == 2 + 13 + 13
    # the grid, RoBERTa and ALBERT at k=16 in untie mode (the ablation), BERT untied at k=1 and the
    # vocabulary contrast at k=1 (the unconfounded control)
    runs = 8 * 5 + 2 + 1 + 1
    assert counts["train"] == runs
    # MS MARCO Dev and TREC DL 2019 share the 8.8M passages: encoded once per run, DL19 only its queries
    assert counts["evaluate"] == runs * n_datasets
    assert counts["index"] == runs * (n_datasets - 1) and counts["index_queries"] == runs
    dl19 = [b for b in re.split(r"\n(?=\[\w{3} \w{3} )|\n\s*\n", out)
            if re.search(r"^\s*rule evaluate:", b, re.M) and "dataset=trec-dl-2019" in b]
    assert len(dl19) == runs
    assert all(re.search(r"input: .*results/runs/[^/]+/k[^/]+/[0-9a-f]{12}/msmarco-dev/[0-9a-f]{12}/docs\.npz", b)
               for b in dl19)
    assert not re.search(r"trec-dl-2019/[0-9a-f]{12}/docs\.npz", out)
    # the paper's reference values are an input of table1: editing them re-runs it
    table1 = [b for b in re.split(r"\n(?=\[\w{3} \w{3} )|\n\s*\n", out) if re.search(r"^\s*rule table1:", b, re.M)]
    assert len(table1) == 1 and str(REPO / "config/paper_reference.yaml") in table1[0]
    assert counts["norm"] == 9 and counts["bm25"] == n_datasets
    assert counts["pooled_flops"] == runs  # NanoBEIR FLOPs pooled per run (SparseNanoBEIREvaluator)
    jobs = _jobs(out)
    train = [j for j in jobs if j["rule"] == "train"]
    assert {(j["wildcards"]["run"], j["wildcards"]["k"]) for j in train} == {
        (b, str(k)) for b in config["backbones"] if b != "bert-cased-at-bert-scale" for k in config["k_grid"]} | {
        ("roberta+untie", "16"), ("albert+untie", "16"), ("bert+untie", "1"), ("bert-cased-at-bert-scale", "1")}
    for job in jobs:
        res = job["resources"]
        if job["rule"] in ("train", "index"):
            assert res["gpu"] == "1" and res["cpus_per_gpu"] == "8" and "gpu-partition" in res["slurm_partition"]
            assert int(res["mem_mb"]) >= 32000 and int(res["runtime"]) >= 600
        elif job["rule"] in ("evaluate", "bm25", "collect", "table1", "claims"):
            assert res.get("gpu", "0") == "0" and "cpu-partition" in res["slurm_partition"]
        if job["rule"] == "claims":  # batched randomization tests: < 2 GB measured (test_stats.py)
            assert int(res["mem_mb"]) >= 2000
    # the datasets' own measures: DL19's recall counts relevance >= 2 as the track defines it
    datasets = yaml.safe_load((REPO / "config/datasets.yaml").read_text())
    assert "R(rel=2)@1000" in datasets["trec-dl-2019"]["measures"]


def test_identical_ids_follow_the_papers_toolchain():
    """BEIR-13: a document whose id is the query id is dropped on every dataset (BEIR's
    EvaluateRetrieval.evaluate, ignore_identical_ids=True by default, and naver/splade's
    beir_eval.py); NanoBEIR: never (sentence-transformers' evaluators keep them); MS MARCO and
    Vaswani: never (query and passage ids are separate namespaces that overlap)."""
    config = yaml.safe_load((REPO / "config/paper.yaml").read_text())
    datasets = yaml.safe_load((REPO / "config/datasets.yaml").read_text())
    beir13 = config["claims"]["datasets"]
    assert len(beir13) == 13
    assert all(datasets[d].get("skip_identical_ids") is True for d in beir13)
    others = [d for d in config["evaluation"]["datasets"] if d not in beir13] + ["vaswani"]
    assert not any(datasets[d].get("skip_identical_ids", False) for d in others)


def test_paper_claims_select_on_ms_marco_and_read_the_reference():
    config = yaml.safe_load((REPO / "config/paper.yaml").read_text())
    claims = config["claims"]
    assert claims["select_on"]["datasets"] == ["msmarco-dev"] and claims["margin"] > 0
    reference = yaml.safe_load((REPO / "config/paper_reference.yaml").read_text())
    checked = {b for c in claims["list"] if c["type"] == "best_k_matches_paper" for b in c["backbones"]}
    assert checked == set(reference["optimal_k"]) and reference["optimal_k"]["roberta"] == 2
    assert config["evaluation"]["query_max_length"] == 256 == config["evaluation"]["document_max_length"]
