"""The step-0 probe through snakemake, as a user runs it (issue 19): ``lsrbench probe`` runs only the
probe jobs and their report (nothing is trained) and prints the table; ``k: probe`` and ``k: auto``
by a logit-scale statistic train at the k read off the probe files; on a finished grid, turning the
probe on plans only the probe and the reports, whose probe pages then put the trained outcomes
beside the probe. Exactness of the probe itself: tests/model/test_probe.py."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pandas as pd
import pytest
import yaml

from helpers.paths import REPO
from helpers.snakemake import copy_run, job_counts, layout, micro_config, run_snakemake, train_dir

pytestmark = pytest.mark.slow
# Rules that compute a result other than the probe: none of them may run for the probe's sake.
RESULT_RULES = {"dataset", "pool", "triplets", "norm", "train", "released", "index", "index_queries", "evaluate",
                "pooled_flops", "bm25"}


def _twin_config(tmp_path, vaswani_slice, tiny_roberta):
    """The micro config with a x4-head twin of its random RoBERTa, trained at k: probe and at k: auto
    by the max logit (both read off the probes), the probe grid dense enough to bracket them."""
    path = micro_config(tmp_path, vaswani_slice, tiny_roberta)
    config = yaml.safe_load(path.read_text())
    config["backbones"] = {
        "rand-roberta": {"model": str(tiny_roberta), "label": "random RoBERTa 1L", "k": [1, 4]},
        "rand-roberta-x4": {"model": str(tiny_roberta), "label": "random RoBERTa 1L x4 head", "head_scale": 4,
                            "synthetic": True, "k": [1, 16, "probe", "auto"]}}
    config["auto_k"] = {"reference": "rand-roberta", "statistic": "max_logit"}
    config["probe"] = {"k_grid": [2, 4, 8], "triplets": 8}
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def test_lsrbench_probe_trains_nothing_then_k_probe_trains_at_its_recommendation(tmp_path, vaswani_slice,
                                                                                  tiny_roberta):
    cfg = _twin_config(tmp_path, vaswani_slice, tiny_roberta)
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run([sys.executable, "-m", "lsrbench.cli", "probe", "--configfile", str(cfg), "--snakefile",
                           str(REPO / "Snakefile"), "-d", str(work), "--cores", "2"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = work / "results"
    assert not (res / "runs").exists()  # the probe's targets train nothing
    record = json.loads((res / "probe.json").read_text())
    runs = {(r["backbone"], r["k"]): r for r in record["runs"]}
    assert set(runs) == {("rand-roberta", k) for k in ("1", "2", "4", "8")} | \
        {("rand-roberta-x4", k) for k in ("1", "2", "4", "8", "16", "auto")}
    # k auto by the max logit: the twin's at k = 1 over the reference's at k = 1
    ratio = runs[("rand-roberta-x4", "1")]["max_logit"] / runs[("rand-roberta", "1")]["max_logit"]
    assert runs[("rand-roberta-x4", "auto")]["k_value"] == pytest.approx(ratio, rel=1e-12)
    # the twin at k = 4 is the reference at k = 1, so its score scale crosses the reference's there
    recommended = record["recommendations"]["rand-roberta-x4"]["k"]
    assert recommended == pytest.approx(4.0, rel=1e-3)
    assert "random RoBERTa 1L x4 head †" in proc.stdout and "recommended k (probe)" in proc.stdout
    assert "| rand-roberta" not in proc.stdout  # labels, not names
    assert (res / "probe.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "## Claim 3 at step 0" in (res / "probe.md").read_text()

    # targets relative to the working directory, as the rules spell them (an absolute one matches no rule)
    status = [(train_dir(work, cfg, "rand-roberta-x4", k) / "status.json").relative_to(work) for k in ("probe", "auto")]
    dry = run_snakemake("-n", "--cores", "1", "-d", str(work), *map(str, status), "--configfile", str(cfg)).stdout
    assert set(job_counts(dry)) == {"train", "total"}  # the probes are done: only the two trainings
    run_snakemake("--cores", "2", "-d", str(work), *map(str, status), "--configfile", str(cfg))
    trained = {k: json.loads((train_dir(work, cfg, "rand-roberta-x4", k) / "train_provenance.json").read_text())
               for k in ("probe", "auto")}
    assert trained["probe"]["k_value"] == recommended
    assert trained["auto"]["k_value"] == pytest.approx(ratio, rel=1e-12)
    probe_file = layout(cfg).get("probe", backbone="rand-roberta-x4").path("probe.json")
    assert probe_file in trained["probe"]["artifacts"]["inputs"]


def test_a_probe_that_brackets_no_crossing_fails_the_train_job_in_one_line(tmp_path, vaswani_slice, tiny_roberta):
    cfg = _twin_config(tmp_path, vaswani_slice, tiny_roberta)
    config = yaml.safe_load(cfg.read_text())
    config["probe"]["k_grid"] = [1.5]  # the x4 twin's score scale stays above the reference's
    config["backbones"]["rand-roberta-x4"]["k"] = ["probe"]
    cfg.write_text(yaml.safe_dump(config, sort_keys=False))
    work = tmp_path / "work"
    work.mkdir()
    status = (train_dir(work, cfg, "rand-roberta-x4", "probe") / "status.json").relative_to(work)
    proc = run_snakemake("--cores", "1", "-d", str(work), str(status), "--configfile", str(cfg), check=False)
    assert proc.returncode != 0
    errors = [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("lsrbench: error:")]
    assert errors and errors[0].startswith(f"lsrbench: error: {cfg}: backbones.rand-roberta-x4.k: k: probe: "
                                           "score_scale above the reference's at every probed k (1 to 1.5): probe larger k")
    probe = layout(cfg).get("probe", backbone="rand-roberta-x4")
    assert (work / probe.path("probe.json")).is_file()  # the probe is kept: only probe.k_grid needs widening


def test_the_probe_on_a_finished_grid_runs_only_the_probe_and_its_reports(micro_run, tmp_path):
    work = copy_run(micro_run, tmp_path / "work")
    config = yaml.safe_load(micro_run["config"].read_text())
    config["probe"] = {"with_grid": True}
    # the reference the probe's predictions are measured from (no k auto runs: no trained id moves)
    config["auto_k"] = {"reference": "rand-roberta"}
    cfg = tmp_path / "probed.yaml"
    cfg.write_text(yaml.safe_dump(config, sort_keys=False))
    dry = run_snakemake("-n", "--cores", "1", "-d", str(work), "--configfile", str(cfg)).stdout
    counts = job_counts(dry)
    assert counts["probe"] == 1 and not set(counts) & RESULT_RULES  # upstream of nothing that was finished
    assert {"probe_report", "probe_outcomes", "html_probe_outcomes", "norms_report"} <= set(counts)
    run_snakemake("--cores", "2", "-d", str(work), "--configfile", str(cfg))

    res = work / "results"
    metrics = pd.read_csv(res / "metrics.csv", dtype={"k": str})
    ndcg = metrics[(metrics["measure"] == "nDCG@10") & (metrics["backbone"] == "rand-roberta")].set_index("k")["value"]
    outcomes = json.loads((res / "probe_outcomes.json").read_text())["outcomes"]
    rows = {r["k"]: r for r in outcomes["runs"]}
    assert outcomes["measure"] == "Slice nDCG@10" and rows["1"]["outcome"] == pytest.approx(ndcg["1"], abs=1e-12)
    # the forced collapse: its head x1e30 overflows at step 0 too, so the probe predicts nothing for it
    assert rows["1e-30"]["prediction"] is None and rows["1e-30"]["outcome"] == pytest.approx(ndcg["1e-30"], abs=1e-12)
    text = (res / "probe_outcomes.md").read_text()
    assert "## The probe against training" in text and "Spearman's rho: not measured (1 runs" in text
    assert "## The probe against training" not in (res / "probe.md").read_text()
    # norms.md now has the probe's logit scale at k = 1 beside the head norms
    probe = json.loads((work / layout(cfg).get("probe", backbone="rand-roberta").path("probe.json")).read_text())
    max_logit = next(r["max_logit"] for r in probe if r["k"] == "1")
    assert math.isfinite(max_logit) and f" {max_logit:.3f} |" in (res / "norms.md").read_text()  # the norms table: 3 decimals
    from lsrbench.report.verify.manifests import verify

    assert verify(res)[0] == []  # the probe's provenance manifest checks out with the rest
    run_snakemake("--cores", "1", "-d", str(work), "--configfile", str(cfg), "--report", "report.html")
    html = (work / "report.html").read_text(errors="replace")
    assert "results/html/probe_outcomes.html" in html and "probe.png" in html
