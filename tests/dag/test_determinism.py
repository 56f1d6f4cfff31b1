"""Determinism: the same config and seed, run again from scratch in another working directory,
give a byte-identical results/metrics.csv on CPU (and identical weights, vectors and run files)."""

from __future__ import annotations

import pytest

from helpers.snakemake import run_snakemake

pytestmark = pytest.mark.slow


def test_same_config_and_seed_give_identical_results(micro_run, tmp_path):
    work = tmp_path / "again"
    work.mkdir()
    # up to metrics.csv: the figures and tables are not what is compared
    run_snakemake("results/metrics.csv", "--cores", "2", "-d", str(work), "--configfile", str(micro_run["config"]))
    first, second = micro_run["results"], work / "results"
    assert (second / "metrics.csv").read_bytes() == (first / "metrics.csv").read_bytes()
    compared = 0
    # the same config and data: the same content-addressed folders
    for name in ("model/model.safetensors", "train_log.jsonl", "docs.npz", "queries.npz", "run.trec", "perquery.tsv"):
        for a in sorted((first / "runs").rglob(name)):
            b = second / a.relative_to(first)
            assert b.read_bytes() == a.read_bytes(), a.relative_to(first)
            compared += 1
    assert compared >= 2 * 6
