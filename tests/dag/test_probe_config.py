"""The probe in the config and the DAG's declarations (issue 19; issue 18 item 7), fast: ``k: probe``
and the ``probe:`` block accepted, their mistakes refused before any job in one line; the schema's
statistic enums are the package's (HEAD_STATISTICS, the probe's statistics); what the probe stage
of a config measures, reads and is identified by; the tiny default's finished runs keep their ids
(the probe is upstream of nothing that existed). Through snakemake: tests/dag/test_probe_dag.py."""

from __future__ import annotations

import copy

import pytest

from helpers.paths import REPO, tiny_default
from lsrbench.config.grid import grid_lines, probe_settings, probed_ks, runs
from lsrbench.config.schema import load_schema
from lsrbench.dag.fingerprint import FileDigests
from lsrbench.dag.layout import Layout
from lsrbench.report.reports import all_reports, report_outputs
from lsrbench.report.reports import report_rules as ReportRules
from lsrbench.report.reports.inputs import uses_probe
from lsrbench.validation.config import check_config
from lsrbench.errors import InputError
from lsrbench.stages import all_stages
from lsrbench.model.auto_k import HEAD_STATISTICS, NORM_STATISTICS
from lsrbench.model.probe_names import PROBE_STATISTICS

FILE = "my.yaml"


@pytest.fixture(scope="module")
def tiny() -> dict:
    return tiny_default()


def checked(config: dict, edit=None) -> dict:
    config = copy.deepcopy(config)
    if edit:
        edit(config)
    return check_config(config, FILE, files=False, mirror_must_exist=False)


def refused(config: dict, edit) -> str:
    with pytest.raises(InputError) as err:
        checked(config, edit)
    assert "\n" not in str(err.value)
    return str(err.value)


def test_the_schema_enums_are_the_packages_statistics():
    schema = load_schema("config.schema.yaml")
    assert schema["definitions"]["head_statistic"]["enum"] == list(HEAD_STATISTICS)
    assert schema["properties"]["probe"]["properties"]["statistic"]["enum"] == list(PROBE_STATISTICS
                                                                                   + NORM_STATISTICS)
    claim = schema["properties"]["claims"]["properties"]["list"]["items"]["properties"]["statistic"]
    assert claim == {"$ref": "#/definitions/head_statistic"}


def test_k_probe_and_logit_scale_statistics_are_accepted(tiny):
    def edit(c):
        c["backbones"]["splade-tiny-x10"]["k"] = [1, 4, 16, "auto", "probe"]
        c["auto_k"]["statistic"] = "max_logit"
        c["claims"]["list"][4]["statistic"] = "mean_activation"

    config = checked(tiny, edit)
    assert ("splade-tiny-x10", "probe") in runs(config)
    assert "splade-tiny-x10  shared  k = 1, 4, 16, auto, probe" in grid_lines(config)
    # the probe measures k = 1, the swept numbers and auto, never "probe" (read off the others)
    assert probed_ks(config, "splade-tiny-x10") == [["shared", k] for k in ("1", "4", "16", "auto")]
    assert probed_ks(config, "splade-tiny") == [["shared", "1"], ["shared", "16"], ["untie", "1"], ["untie", "16"]]


@pytest.mark.parametrize("edit, says", [
    (lambda c: (c.pop("auto_k"), c["backbones"]["splade-tiny-x10"].update(k=[1, 4, "probe"])),
     "backbones.splade-tiny-x10.k: k: probe needs auto_k.reference"),
    (lambda c: c["backbones"]["splade-tiny-x10"].update(k=["probe"]),
     "backbones.splade-tiny-x10.k: k: probe reads the crossing off the probed k, and shared mode probes k = 1 only"),
    (lambda c: c["backbones"]["splade-tiny-x10"].update(k=["Probe"]), "backbones.splade-tiny-x10.k[0]"),
    (lambda c: c.update(probe={"triplets": 8}), "probe.triplets: 8 triplets cannot fill one batch of recipe.batch_size (16)"),
    (lambda c: c.update(probe={"k_grid": [2, 0]}), "probe.k_grid[1]"),
    (lambda c: c.update(probe={"statistic": "nope"}), "probe.statistic"),
    (lambda c: c["auto_k"].update(statistic="max_weight"), "auto_k.statistic"),
])
def test_probe_mistakes_are_one_line_naming_the_field(tiny, edit, says):
    assert f"{FILE}: {says}" in refused(tiny, edit)


def test_a_denser_probe_grid_makes_k_probe_possible(tiny):
    def edit(c):
        c["backbones"]["splade-tiny-x10"]["k"] = [1, "probe"]
        c["probe"] = {"k_grid": [2, 8, 32]}

    config = checked(tiny, edit)
    assert probed_ks(config, "splade-tiny-x10") == [["shared", k] for k in ("1", "2", "8", "32")]
    assert probe_settings(config) == {"triplets": 32, "gradients": True, "k_grid": [2, 8, 32],
                                      "statistic": "score_scale", "with_grid": True}


def _layout(config: dict) -> Layout:
    return Layout(config, "results", FileDigests(None), stages=all_stages(), config_file=FILE)


def test_the_probe_stage_identity_and_inputs(tiny):
    def edit(c):
        c["backbones"]["splade-tiny-x10"]["k"] = [1, "auto", "probe"]
        c["probe"] = {"k_grid": [4], "triplets": 16, "gradients": False}

    layout = _layout(checked(tiny, edit))
    probe = layout.get("probe", backbone="splade-tiny-x10")
    assert probe.folder == f"results/probe/splade-tiny-x10/{probe.id}"
    assert probe.identity["ks"] == [["shared", "1"], ["shared", "4"], ["shared", "auto"]]
    assert (probe.identity["n_triplets"], probe.identity["gradients"]) == (16, False)
    # the recipe keys a step-0 measure can depend on, nothing else (steps, learning rate: no)
    assert set(probe.identity["recipe"]) == {"seed", "batch_size", "query_max_length", "document_max_length",
                                             "lambda_q", "lambda_d", "fused_pooling"}
    assert probe.identity["triplets"] == layout.get("triplets").id
    # k auto by the Frobenius norm: the reference's norms, as training reads them
    assert probe.identity["reference_norms"] == layout.get("norms", backbone="splade-tiny").id
    trained = layout.get("train", run="splade-tiny-x10", k="probe")
    assert trained.identity["probe"] == probe.id
    assert trained.identity["reference_probe"] == layout.get("probe", backbone="splade-tiny").id
    assert trained.identity["k_from_probe"] == {"reference": "splade-tiny", "statistic": "score_scale"}
    inputs = layout.stages["train"].inputs(layout, trained)
    assert inputs["probe_json"] == probe.path("probe.json")
    # a learning rate re-trains but keeps the probe; a probe setting re-probes and keeps the numeric runs
    lr = _layout(checked(tiny, lambda c: (edit(c), c["recipe"].update(learning_rate=1e-4))))
    assert lr.get("probe", backbone="splade-tiny-x10").id == probe.id
    grid = _layout(checked(tiny, lambda c: (edit(c), c["probe"].update(k_grid=[4, 8]))))
    assert grid.get("probe", backbone="splade-tiny-x10").id != probe.id
    assert grid.get("train", run="splade-tiny-x10", k="1").id == layout.get("train", run="splade-tiny-x10", k="1").id
    assert grid.get("train", run="splade-tiny-x10", k="probe").id != trained.id


def test_k_auto_by_a_logit_scale_statistic_waits_for_the_reference_probe(tiny):
    layout = _layout(checked(tiny, lambda c: (c["auto_k"].update(statistic="max_logit"),
                                              c["backbones"]["splade-tiny-x10"].update(k=[1, "auto"]))))
    twin, reference = layout.get("probe", backbone="splade-tiny-x10"), layout.get("probe", backbone="splade-tiny")
    assert twin.identity["reference_probe"] == reference.id and "probe" not in twin.identity
    assert layout.stages["probe"].inputs(layout, twin)["reference_probe_json"] == reference.path("probe.json")
    auto = layout.get("train", run="splade-tiny-x10", k="auto")
    assert (auto.identity["probe"], auto.identity["reference_probe"]) == (twin.id, reference.id)


def test_released_checkpoints_are_probed_as_released(tiny):
    def edit(c):
        c["backbones"]["released"] = {"model": "naver/splade-v3", "evaluate_only": True}
        c["probe"] = {"k_grid": [2, 4]}

    layout = _layout(checked(tiny, edit))
    probe = layout.get("probe", backbone="released")
    assert probe.identity["released"] is True and probe.identity["ks"] == [["shared", "1"]]
    runtime = layout.stages["probe"].runtime(layout, probe)
    assert runtime["entry"]["model"] == "naver/splade-v3" and runtime["entry"]["evaluate_only"] is True
    assert "evaluate_only" not in layout.stages["probe"].runtime(layout, layout.get("probe", backbone="splade-tiny"))["entry"]


# What config/config.yaml (and so a finished tiny default) had before the probe stage and before
# the MLM re-fit stage (tests/dag/pre_miniature_config.yaml): adding either must find every finished
# output again (docs/results-layout.md), so these ids are pinned; and the tiny default of issue 30
# (docs/miniature.md), whose re-fit is one folder both backbones load.
TINY_DEFAULT_IDS = {
    ("norms", "splade-tiny"): "fea6c83f6f12", ("norms", "splade-tiny-x10"): "f296a21788ee",
    ("triplets", ""): "d04b76a07533",
    ("train", "splade-tiny/1"): "5d3b08c055fb", ("train", "splade-tiny/4"): "9388e5431411",
    ("train", "splade-tiny/16"): "b13c26c74d0d", ("train", "splade-tiny+untie/16"): "707c4d991928",
    ("train", "splade-tiny-x10/1"): "7dfbfa06a67e", ("train", "splade-tiny-x10/4"): "3be833de9516",
    ("train", "splade-tiny-x10/16"): "986a0d564f89", ("train", "splade-tiny-x10/auto"): "8452f03a3f46",
}
MINIATURE_IDS = {
    ("mlm_refit", ""): "ff558e55ac06",
    ("norms", "splade-tiny"): "e158cd15f642", ("norms", "splade-tiny-x10"): "9f21b0e8add3",
    ("triplets", ""): "af1859f8d036",
    ("train", "splade-tiny/1"): "e0b7814a8f5f", ("train", "splade-tiny/16"): "50ad547d2f72",
    ("train", "splade-tiny+untie/16"): "3828cf4afc6c", ("train", "splade-tiny-x10/1"): "861bbaa39faa",
    ("train", "splade-tiny-x10/16"): "18a417ef6d00",
}


def _ids(config: dict) -> dict:
    layout = _layout(checked(config))
    found = {("norms", b): layout.get("norms", backbone=b).id for b in ("splade-tiny", "splade-tiny-x10")}
    found[("triplets", "")] = layout.get("triplets").id
    found |= {("mlm_refit", ""): item.id for item in layout.of_stage("mlm_refit")}
    return found | {("train", f"{r}/{k}"): layout.get("train", run=r, k=k).id for r, k in runs(layout.config)}


def test_the_tiny_default_finds_its_finished_runs_again(tiny):
    from lsrbench.config.strict_yaml import load_yaml

    before = load_yaml(REPO / "tests" / "dag" / "pre_miniature_config.yaml")
    before["datasets_file"] = str(REPO / "config" / "datasets.yaml")
    assert _ids(before) == TINY_DEFAULT_IDS
    assert _ids(tiny) == MINIATURE_IDS


def test_which_reports_read_the_probe(tiny):
    config = checked(tiny)
    assert not uses_probe(config)  # the tiny default: the probe is its own target
    assert not any("probe" in path for path in report_outputs(config))
    assert "probe_files" not in ReportRules(_layout(config)).params("norms_report")["keyed"]
    on = checked(tiny, lambda c: c.update(probe={"with_grid": True}))
    assert uses_probe(on) and {"results/probe.md", "results/probe_outcomes.md", "results/html/probe_outcomes.html"} \
        <= set(report_outputs(on))
    rules = ReportRules(_layout(on))
    for report in ("norms_report", "claims", "probe_report", "probe_outcomes"):
        assert [row[0] for row in rules.params(report)["keyed"]["probe_files"]] == ["splade-tiny", "splade-tiny-x10"]
    assert "probe_files" not in rules.params("table1")["keyed"]  # Table 1 shows no probe statistic
    assert "metrics_csv" not in rules.input_files("probe_report")  # before training: the probe files only
    assert set(all_reports()) >= {"probe_report", "probe_outcomes"}
    # k auto by a logit-scale statistic: the probe runs with the grid, Table 1 reads its auto k from it
    logit = checked(tiny, lambda c: c["auto_k"].update(statistic="max_logit"))
    assert uses_probe(logit) and "probe_files" in ReportRules(_layout(logit)).params("table1")["keyed"]


def test_a_released_only_grid_runs_no_probe_with_it_even_with_grid_on(tiny):
    """Released checkpoints alone need no training data (tests/dag/test_released.py): the probe,
    which reads training triplets, stays ``lsrbench probe``'s target there."""
    def edit(c):
        c.pop("auto_k")
        c.pop("claims")
        c["backbones"] = {"released": {"model": "naver/splade-v3", "evaluate_only": True}}
        c["probe"] = {"with_grid": True}

    config = checked(tiny, edit)
    assert not uses_probe(config) and not any("probe" in path for path in report_outputs(config))
    trained = checked(tiny, lambda c: (edit(c), c["backbones"].update(mine={"model": "bert-base-uncased"})))
    assert uses_probe(trained) and "results/probe_outcomes.md" in report_outputs(trained)
