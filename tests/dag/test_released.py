"""Released checkpoints (``evaluate_only: true``): the shared SPLADE-tiny, already SPLADE-trained,
as a reviewer's released model beside a trained run: no training, its head norm measured, index ->
evaluate, its rows in metrics.csv, Table 1, the BEIR table and the plots; k fixed at 1."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
import yaml

from helpers.cli import lsrbench
from helpers.paths import shared_or_skip
from helpers.snakemake import copy_run, job_counts, micro_config, norms_json, run_snakemake, train_dir


def _released_config(tmp_path, vaswani_slice, tiny_roberta, *, trained=True) -> tuple:
    released = shared_or_skip("models", "splade-tiny-msmarco")
    path = micro_config(tmp_path, vaswani_slice, tiny_roberta)
    config = yaml.safe_load(path.read_text())
    config["k_grid"] = [1]
    config["backbones"] = {**(config["backbones"] if trained else {}),
                           "released": {"model": str(released), "evaluate_only": True, "label": "SPLADE-tiny (released)"}}
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path, config, released


def _check_config(path) -> subprocess.CompletedProcess:
    return lsrbench("check-config", "--configfile", path)  # in this process (helpers.cli)


@pytest.mark.parametrize("edit, field", [
    ({"k": [1, 4]}, "k"),
    ({"k": ["auto"]}, "k"),
    ({"modes": ["shared", "untie"]}, "modes"),
    ({"modes": {"shared": [2]}}, "modes"),
    ({"head_scale": 10}, "head_scale"),
])
def test_an_evaluate_only_backbone_has_no_k_grid(tmp_path, vaswani_slice, tiny_roberta, edit, field):
    path, config, _ = _released_config(tmp_path, vaswani_slice, tiny_roberta)
    assert _check_config(path).returncode == 0
    config["backbones"]["released"].update(edit)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    proc = _check_config(path)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"lsrbench: error: {path}: backbones.released.{field}: an evaluate_only backbone")


def test_released_only_grid_needs_no_training_data(tmp_path, vaswani_slice, tiny_roberta):
    path, _, _ = _released_config(tmp_path, vaswani_slice, tiny_roberta, trained=False)
    counts = job_counts(run_snakemake("-n", "--cores", "1", "-d", str(tmp_path), "--configfile", str(path)).stdout)
    assert counts["released"] == counts["norm"] == counts["index"] == counts["evaluate"] == 1
    assert "train" not in counts and "triplets" not in counts


@pytest.mark.slow
def test_released_checkpoint_is_evaluated_beside_a_trained_run(tmp_path, vaswani_slice, tiny_roberta, micro_run):
    """The plan from scratch; then the run, in a copy of the session's finished micro run, whose
    trained run (the same backbone, data and recipe at k = 1) it reuses: only the released
    checkpoint's jobs and the reports run."""
    import torch
    from transformers import AutoModelForMaskedLM

    from lsrbench.model.rescale import head_norms

    path, config, released = _released_config(tmp_path, vaswani_slice, tiny_roberta)
    (tmp_path / "empty").mkdir()
    counts = job_counts(run_snakemake("-n", "--cores", "1", "-d", str(tmp_path / "empty"), "--configfile", str(path)).stdout)
    assert counts["train"] == counts["released"] == 1 and counts["index"] == counts["evaluate"] == 2
    work = copy_run(micro_run, tmp_path / "work")
    counts = job_counts(run_snakemake("-n", "--cores", "1", "-d", str(work), "--configfile", str(path)).stdout)
    assert "train" not in counts and counts["released"] == counts["index"] == counts["evaluate"] == 1
    run_snakemake("--cores", "2", "-d", str(work), "--configfile", str(path))
    res = work / "results"

    # the model is the checkpoint as released: every weight identical, no rescale, no training
    out = train_dir(work, path, "released", "1")
    original = AutoModelForMaskedLM.from_pretrained(released).state_dict()
    saved = AutoModelForMaskedLM.from_pretrained(out / "model").state_dict()
    assert original.keys() == saved.keys() and all(torch.equal(original[k], saved[k]) for k in original)
    assert (out / "train_log.jsonl").read_text() == ""
    assert json.loads((out / "status.json").read_text()) == {"backbone": "released", "k": "1", "status": "ok",
                                                              "released": True}
    prov = json.loads((out / "train_provenance.json").read_text())
    assert prov["stage"] == "released" and prov["released"] is True and prov["trained"] is False
    assert prov["released_format"] == "mlm" and prov["resolved_path"] == str(released)
    # its head norm is measured like any backbone's
    norms = json.loads(norms_json(work, path, "released").read_text())
    expected = head_norms(AutoModelForMaskedLM.from_pretrained(released))
    assert norms["frobenius_norm"] == expected["frobenius_norm"] and norms["tied"] is True

    metrics = pd.read_csv(res / "metrics.csv", dtype={"k": str})
    mine = metrics[metrics["backbone"] == "released"]
    assert set(mine["k"]) == {"1"} and set(mine["measure"]) == set(metrics[metrics["backbone"] == "rand-roberta"]["measure"])
    assert mine.set_index("measure")["value"]["collapsed"] == 0.0
    ndcg = mine.set_index("measure")["value"]["nDCG@10"]
    from lsrbench.report.results import RELEASED_NOTE

    table = (res / "table1.md").read_text()
    row = next(line for line in table.splitlines() if line.startswith("| SPLADE-tiny (released) ‡"))
    assert f"{ndcg:.3f}" in row and RELEASED_NOTE in table
    assert "random RoBERTa 1L" in table
    assert "SPLADE-tiny (released) ‡" in (res / "table_beir.md").read_text()
    assert (res / "tradeoff.png").stat().st_size > 0 and (res / "loss_curves.png").stat().st_size > 0
    proc = subprocess.run([sys.executable, "-m", "lsrbench.cli", "verify", "--results", str(res)], capture_output=True, text=True,
                          cwd=work)
    assert proc.returncode == 0, proc.stderr
