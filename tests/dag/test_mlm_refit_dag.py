"""The MLM re-fit stage through snakemake (issue 30; docs/miniature.md): a backbone and its x4 twin
that name one re-fit run one re-fit job, in a content-addressed folder beside its provenance;
norm and train load its checkpoint (the twin's head exactly x4 of it); a finished run plans
nothing; another re-fit setting is another folder beside the first, and re-trains what loads it
but keeps the data; ``lsrbench verify`` traces every number through it. Fast parts (config,
identities): tests/validation/test_validate.py, test_probe_config.py; the re-fit itself:
tests/model/test_mlm_refit.py."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from helpers.snakemake import job_counts, layout, micro_config, run_snakemake

pytestmark = pytest.mark.slow

REFIT = {"dataset": "slice", "steps": 6, "batch_size": 8, "held_out": 16, "max_length": 32, "learning_rate": 5e-3}


def _config(tmp_path, vaswani_slice, tiny_roberta, **refit):
    path = micro_config(tmp_path, vaswani_slice, tiny_roberta)
    config = yaml.safe_load(path.read_text())
    settings = {**REFIT, **refit}
    config["k_grid"] = [1]  # one training per backbone: the re-fit, not the grid, is what is tested
    config["backbones"] = {
        "rand-roberta": {"model": str(tiny_roberta), "label": "random RoBERTa 1L MLM re-fit", "mlm_refit": settings},
        "rand-roberta-x4": {"model": str(tiny_roberta), "label": "its x4 twin", "mlm_refit": dict(settings),
                            "head_scale": 4, "synthetic": True}}
    config["auto_k"] = {"reference": "rand-roberta"}
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def test_one_refit_job_feeds_both_backbones_and_is_cached(tmp_path, vaswani_slice, tiny_roberta):
    cfg = _config(tmp_path, vaswani_slice, tiny_roberta)
    work = tmp_path / "work"
    work.mkdir()
    proc = run_snakemake("--cores", "2", "-d", str(work), "--configfile", str(cfg))
    out = proc.stdout + proc.stderr
    assert job_counts(out)["mlm_refit"] == 1 and job_counts(out)["norm"] == 2
    lay = layout(cfg)
    (refit,) = lay.of_stage("mlm_refit")
    folder = work / refit.folder
    assert folder == work / "results" / "mlm_refit" / refit.id
    params = json.loads((folder / "params.json").read_text())
    assert params["identity"]["texts"] == lay.get("data", dataset="slice").id
    assert params["identity"]["settings"]["steps"] == 6 and "dataset" not in params["identity"]["settings"]
    summary = json.loads((folder / "refit.json").read_text())
    assert summary["held_out_loss_after"] < summary["held_out_loss_before"]
    assert len((folder / "refit_log.jsonl").read_text().splitlines()) == 6
    assert json.loads((folder / "provenance.json").read_text())["stage"] == "mlm_refit"
    # both backbones load the re-fit: the twin's head is exactly x4 of it (Frobenius norm ratio)
    norms = {b: json.loads((work / lay.get("norms", backbone=b).path("norms.json")).read_text())
             for b in ("rand-roberta", "rand-roberta-x4")}
    assert norms["rand-roberta"]["resolved_path"] == str(refit.path("model"))
    assert norms["rand-roberta-x4"]["frobenius_norm"] == pytest.approx(4 * norms["rand-roberta"]["frobenius_norm"],
                                                                       rel=1e-6)
    provenance = json.loads((work / lay.get("train", run="rand-roberta", k="1").path("train_provenance.json")).read_text())
    assert provenance["resolved_path"] == refit.path("model")
    # a finished run plans nothing; lsrbench verify traces every number through the re-fit
    assert "Nothing to be done" in run_snakemake("-n", "--cores", "1", "-d", str(work), "--configfile", str(cfg)).stdout
    verify = subprocess.run([sys.executable, "-m", "lsrbench.cli", "verify", "--results", str(work / "results")],
                            capture_output=True, text=True)
    assert verify.returncode == 0, verify.stdout[-2000:] + verify.stderr[-2000:]

    # another re-fit setting: a new folder beside the first, every training re-planned, the data kept
    (tmp_path / "other").mkdir()
    other = _config(tmp_path / "other", vaswani_slice, tiny_roberta, steps=8)
    plan = job_counts(run_snakemake("-n", "--cores", "1", "-d", str(work), "--configfile", str(other)).stdout)
    assert plan["mlm_refit"] == 1 and plan["norm"] == 2 and plan["train"] == 2
    assert "dataset" not in plan and "triplets" not in plan
    assert layout(other).of_stage("mlm_refit")[0].id != refit.id
