"""Two training seeds through ``snakemake`` (issue 18, item 8), on a copy of the finished micro run:
``recipe.seeds: [its seed, another]`` trains only the new seed (the first seed's runs are the
finished ones, byte for byte), metrics.csv gets a seed column traced by ``lsrbench verify``,
Table 1 shows the mean over the seeds ± their sample standard deviation, the claims compare
per-query scores averaged over the seeds and say how many seeds select the best k; going back to
one seed recomputes nothing."""

from __future__ import annotations

import hashlib
import statistics
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from helpers.snakemake import COLLAPSE_K, copy_run, eval_dir, job_counts, run_snakemake, train_dir

pytestmark = pytest.mark.slow
RUN = "rand-roberta"
CLAIMS = {"datasets": ["slice"], "list": [{"id": "c1", "text": "the best k beats the absurd one", "type": "compare",
                                           "a": {"backbone": RUN, "k": "best"},
                                           "b": {"backbone": RUN, "k": float(COLLAPSE_K)}, "expect": "greater"}]}
RESULT_RULES = {"dataset", "pool", "norm", "triplets", "train", "released", "index", "index_queries", "evaluate",
                "pooled_flops", "bm25"}


def _digests(results: Path) -> dict[str, str]:
    """Every finished run file (what cost compute), by path: its SHA-256."""
    return {str(p.relative_to(results)): hashlib.sha256(p.read_bytes()).hexdigest()
            for kind in ("runs", "norms", "data", "triplets", "bm25") for p in sorted((results / kind).rglob("*"))
            if p.is_file()}


def _dry_run(work: Path, config: Path) -> dict[str, int]:
    proc = run_snakemake("-n", "--cores", "1", "-d", str(work), "--configfile", str(config), check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {k: v for k, v in job_counts(proc.stdout).items() if k not in ("all", "total")}


def _verify(results: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lsrbench.cli", "verify", "--results", str(results)], capture_output=True, text=True)


@pytest.fixture(scope="module")
def two_seeds(micro_run, tmp_path_factory) -> dict:
    """The finished micro run, then the same config with a second training seed, run to the end."""
    tmp = tmp_path_factory.mktemp("two_seeds")
    work = copy_run(micro_run, tmp / "work")
    before = _digests(work / "results")
    config = yaml.safe_load(micro_run["config"].read_text())
    seed = config["recipe"]["seed"]
    config["recipe"]["seeds"] = [seed, seed + 1]
    config["claims"] = CLAIMS
    path = tmp / "two_seeds.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    planned = _dry_run(work, path)
    run_snakemake("--cores", "2", "-d", str(work), "--configfile", str(path))
    return {"work": work, "results": work / "results", "config": path, "one_seed": micro_run["config"],
            "seeds": [seed, seed + 1], "before": before, "planned": planned}


def test_only_the_new_seed_is_trained_and_the_first_seed_is_the_finished_run(two_seeds):
    planned = two_seeds["planned"]
    # one new train, index and evaluate per k (two ks); data, norms, triplets and BM25 are shared
    assert {rule: n for rule, n in planned.items() if rule in RESULT_RULES} == {"train": 2, "index": 2, "evaluate": 2}
    after = _digests(two_seeds["results"])
    assert {path: after.get(path) for path in two_seeds["before"]} == two_seeds["before"]
    old, new = two_seeds["seeds"]
    for k in ("1", COLLAPSE_K):
        first = train_dir(two_seeds["work"], two_seeds["config"], RUN, k, seed=old)
        assert first == train_dir(two_seeds["work"], two_seeds["one_seed"], RUN, k)
        second = train_dir(two_seeds["work"], two_seeds["config"], RUN, k, seed=new)
        assert second != first and (second / "model").is_dir() and (second / "status.json").is_file()
    # the seed is in each run's recipe: the second trained with its own seed
    logs = [(train_dir(two_seeds["work"], two_seeds["config"], RUN, "1", seed=s) / "train_log.jsonl").read_text()
            for s in two_seeds["seeds"]]
    assert logs[0] != logs[1]


def _metrics(two_seeds) -> pd.DataFrame:
    return pd.read_csv(two_seeds["results"] / "metrics.csv", dtype=str)


def _value(two_seeds, k: str, seed: int, measure: str = "nDCG@10") -> float:
    tsv = eval_dir(two_seeds["work"], two_seeds["config"], RUN, k, "slice", seed=seed) / "metrics.tsv"
    rows = pd.read_csv(tsv, sep="\t", dtype={"k": str})
    return float(rows.loc[rows["measure"] == measure, "value"].item())


def test_metrics_csv_has_one_row_per_seed_and_verify_traces_them(two_seeds, tmp_path):
    metrics = _metrics(two_seeds)
    assert list(metrics.columns) == ["backbone", "k", "seed", "dataset", "measure", "value"]
    runs = metrics[metrics["backbone"] == RUN]
    assert set(runs["seed"]) == {str(s) for s in two_seeds["seeds"]}
    assert set(metrics.loc[metrics["backbone"] == "BM25", "seed"]) == {"-"}
    for seed in two_seeds["seeds"]:
        row = runs[(runs["k"] == "1") & (runs["seed"] == str(seed)) & (runs["measure"] == "nDCG@10")]
        assert float(row["value"].item()) == pytest.approx(_value(two_seeds, "1", seed), rel=1e-5)
    proc = _verify(two_seeds["results"])
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    # a row of the second seed edited: verify names its line and seed
    results = copy_run({"work": two_seeds["work"]}, tmp_path / "tampered") / "results"
    lines = (results / "metrics.csv").read_text().splitlines()
    new = str(two_seeds["seeds"][1])
    at = next(i for i, line in enumerate(lines) if line.startswith(f"{RUN},1,{new},slice,nDCG@10,"))
    lines[at] = f"{RUN},1,{new},slice,nDCG@10,0.999"
    (results / "metrics.csv").write_text("\n".join(lines) + "\n")
    proc = _verify(results)
    out = proc.stderr
    assert proc.returncode == 1 and "Traceback" not in out
    assert f"metrics.csv: line {at + 1}: nDCG@10 = 0.999 but the run's metrics.tsv has" in out
    assert f"(backbone {RUN}, k 1, seed {new}, dataset slice)" in out


def test_table1_shows_the_mean_over_seeds_and_the_sample_std(two_seeds):
    values = [_value(two_seeds, "1", s) for s in two_seeds["seeds"]]
    expected = f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}"
    text = (two_seeds["results"] / "table1.md").read_text()
    rows = {tuple(c.strip() for c in line.strip("|").split("|"))[:3] for line in text.splitlines() if line.startswith("| ")}
    # the only non-collapsed k: the best (◦: a random model's run is at chance)
    assert {("random RoBERTa 1L", "1", f"**{expected}**"), ("random RoBERTa 1L", "1", f"**{expected}** ◦")} & rows
    assert ("random RoBERTa 1L", COLLAPSE_K, "collapsed (2 of 2 seeds)") in rows
    assert "Seeds: every run was trained once per seed (2 seeds:" in text
    beir = (two_seeds["results"] / "table_beir.md").read_text()
    assert f"| {expected} |" in beir or f"| {expected} ◦ |" in beir


def test_claims_compare_seed_averaged_scores_and_count_the_seeds_that_select_the_best_k(two_seeds):
    md = (two_seeds["results"] / "claims.md").read_text()
    seeds = ", ".join(map(str, two_seeds["seeds"]))
    assert (f"Training variance: every run was trained with 2 seeds ({seeds}), too few to estimate their spread, so "
            "each comparison adds a declared run-level noise per trained model") in md
    assert f"{RUN}: 2 of 2 training seeds select k=1, the best k of their mean" in md
    # the compared score is the macro mean of the per-query scores averaged over the seeds
    perquery = [pd.read_csv(eval_dir(two_seeds["work"], two_seeds["config"], RUN, "1", "slice", seed=s) / "perquery.tsv",
                            sep="\t", dtype={"query_id": str}) for s in two_seeds["seeds"]]
    scores = [p[p["measure"] == "nDCG@10"].set_index("query_id")["value"] for p in perquery]
    mean = float(((scores[0] + scores[1]) / 2).mean())
    # the page gives each claim's test in one line; its details (the compared means) are in claims.json
    assert f"{RUN} k=1 = {mean:.4f} vs" in (two_seeds["results"] / "claims.json").read_text()


def test_back_to_one_seed_recomputes_nothing(two_seeds):
    planned = _dry_run(two_seeds["work"], two_seeds["one_seed"])
    assert not set(planned) & RESULT_RULES, planned
    assert not _dry_run(two_seeds["work"], two_seeds["config"])  # and the two-seed run is finished
