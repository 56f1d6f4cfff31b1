"""The scale control through ``snakemake`` on a micro DAG: one tiny backbone (the session's random
RoBERTa) with its head scaled at load to another's measured mean row norm (the shared SPLADE-tiny,
a BERT with another vocabulary). Asked for only the control's evaluation, Snakemake runs the
matched backbone's norm job too (the declared edge), and the trained run's head scale is the
ratio of the two heads' statistics as measured independently here."""

from __future__ import annotations

import json

import pytest
import torch
import yaml

from helpers.paths import shared_or_skip
from helpers.snakemake import eval_dir, job_counts, layout, micro_config, norms_json, run_snakemake, train_dir

pytestmark = pytest.mark.slow


def _row_norms(folder) -> torch.Tensor:
    from transformers import AutoModelForMaskedLM

    model = AutoModelForMaskedLM.from_pretrained(str(folder))
    return model.get_output_embeddings().weight.detach().double().norm(dim=1)


@pytest.fixture(scope="module")
def control_run(tmp_path_factory, vaswani_slice, tiny_roberta) -> dict:
    splade = shared_or_skip("models", "splade-tiny-msmarco")
    tmp = tmp_path_factory.mktemp("head_match")
    path = micro_config(tmp, vaswani_slice, tiny_roberta)
    config = yaml.safe_load(path.read_text())
    config["k_grid"] = [1]
    config["backbones"] = {
        "splade-tiny": {"model": str(splade), "label": "SPLADE-tiny"},
        "control": {"model": str(tiny_roberta), "label": "random RoBERTa at SPLADE-tiny's scale", "synthetic": True,
                    "head_scale": {"match": "splade-tiny", "statistic": "mean_row_norm"}},
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    work = tmp / "work"
    work.mkdir()
    target = eval_dir(work, path, "control", "1", "slice") / "metrics.tsv"
    dry = run_snakemake("-n", "--cores", "1", "-d", str(work), "--configfile", str(path), "--",
                        str(target.relative_to(work)))
    probe = layout(path).get("probe", backbone="control").path("probe.json")
    run_snakemake("--cores", "2", "-d", str(work), "--configfile", str(path), "--", str(target.relative_to(work)), probe)
    return {"work": work, "config": path, "dry": job_counts(dry.stdout), "splade": splade, "roberta": tiny_roberta,
            "probe": work / probe}


def test_the_control_needs_the_matched_backbones_norm_job(control_run):
    """Only the control's evaluation asked for: two norm jobs (its own and the matched one's), one training."""
    assert control_run["dry"]["norm"] == 2 and control_run["dry"]["train"] == 1
    assert norms_json(control_run["work"], control_run["config"], "splade-tiny").is_file()


def test_the_trained_runs_head_scale_is_the_measured_ratio(control_run):
    work, config = control_run["work"], control_run["config"]
    target = float(_row_norms(control_run["splade"]).mean())
    own = float(_row_norms(control_run["roberta"]).mean())
    ratio = target / own
    record = json.loads(norms_json(work, config, "control").read_text())
    match = record["head_scale_match"]
    assert match["statistic"] == "mean_row_norm" and match["mode"] == "untie" and match["match"] == "splade-tiny"
    # the norm stage reduces float32 rows (lsrbench.model.rescale.head_norms), here in float64
    assert match["target"] == pytest.approx(target, rel=1e-6) and match["own"] == pytest.approx(own, rel=1e-6)
    assert record["head_scale"] == match["ratio"] == match["target"] / match["own"]
    assert ratio == pytest.approx(match["ratio"], rel=1e-6)
    assert record["mean_row_norm"] == pytest.approx(target, rel=1e-6)  # the head as the control trains from it
    assert not record["tied"]  # the head alone was scaled
    provenance = json.loads((train_dir(work, config, "control", "1") / "train_provenance.json").read_text())
    assert provenance["head_scale"] == match["ratio"] and provenance["head_scale_mode"] == "untie"
    assert str(norms_json(work, config, "splade-tiny").relative_to(work)) in json.dumps(provenance)
    # the step-0 probe loads the control as training does
    assert {p["head_scale"] for p in json.loads(control_run["probe"].read_text())} == {match["ratio"]}


def test_a_changed_matched_statistic_measures_the_ratio_again(control_run, tmp_path):
    """The matched backbone's norms.json edited under a finished control: the edit is never read
    (the norm job makes the record again from the checkpoint) and the control measures its ratio
    again from the record as made (the edge is an input: Snakemake re-runs what reads it); the
    train job itself refuses a norm record whose matched statistic moved
    (tests/model/test_head_match.py)."""
    import shutil

    work = tmp_path / "work"
    shutil.copytree(control_run["work"], work, symlinks=True)
    config = control_run["config"]
    matched = norms_json(work, config, "splade-tiny")
    measured = json.loads(matched.read_text())
    record = {**measured, "mean_row_norm": 2 * measured["mean_row_norm"]}
    matched.write_text(json.dumps(record))
    target = eval_dir(work, config, "control", "1", "slice") / "metrics.tsv"
    run_snakemake("--cores", "2", "-d", str(work), "--configfile", str(config), "--", str(target.relative_to(work)))
    assert json.loads(matched.read_text())["mean_row_norm"] == measured["mean_row_norm"]
    again = json.loads(norms_json(work, config, "control").read_text())["head_scale_match"]
    assert again["target"] == measured["mean_row_norm"] and again["ratio"] == measured["mean_row_norm"] / again["own"]
    provenance = json.loads((train_dir(work, config, "control", "1") / "train_provenance.json").read_text())
    assert provenance["head_scale"] == again["ratio"]
