"""Content-addressed outputs (issue 12): an output's folder is named by the hash of exactly what
decides it, so a config edit never destroys a finished result, and only what changes a result
re-runs a job. Fast: the ids of a config under location and result edits. Slow (through
``snakemake`` on a copy of the finished micro run): an edit runs beside the old outputs, leaving
every finished file byte-identical; reverting it plans no job that computes a result; a failing
job after an edit keeps every earlier file; the mirror spelt three ways or dropped plans nothing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from helpers.snakemake import copy_run, job_counts, layout, micro_config, run_snakemake, toy_inputs
from lsrbench.dag.layout import ID_WILDCARD

# Rules that compute results; the report rules re-make the current config's reports from them.
RESULT_RULES = {"dataset", "pool", "norm", "triplets", "probe", "train", "index", "index_queries", "evaluate",
                "pooled_flops", "bm25"}
REPORTS = {"metrics.csv", "metrics.sources.json", "chance.json", "table1.md", "table1.cells.json", "table_beir.md", "norms.md",
           "norms.png", "tradeoff.png", "tradeoff.pdf", "loss_curves.png", "claims.md", "claims.json",
           # what each figure shows (verify recomputes them): re-made with their figures
           "norms.data.json", "tradeoff.data.json", "loss_curves.data.json"}


@pytest.fixture
def toy(tmp_path) -> dict:
    """A micro config over a toy dataset folder and a stand-in model folder (ids only: nothing runs)."""
    data, model = toy_inputs(tmp_path)
    (tmp_path / "mirror" / "data").mkdir(parents=True)
    return {"tmp": tmp_path, "data": data, "model": model, "config": micro_config(tmp_path, data, model)}


def _edited(toy: dict, edit, name: str = "edited.yaml") -> Path:
    config = yaml.safe_load(toy["config"].read_text())
    edit(config, toy)
    path = toy["tmp"] / name
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _folders(config_path: Path) -> dict[tuple, str]:
    """Each addressed output that costs compute by what it is (kind and readable fields), with its
    folder (the config snapshot, which changes with every report setting too, is tested below)."""
    return {(item.kind, tuple(sorted((k, v) for k, v in item.fields.items()
                                     if k not in ID_WILDCARD.values() and k != "data_id"))): item.folder
            for item in layout(config_path).all() if item.kind != "configs"}


def _snapshot_id(config_path: Path) -> str:
    return layout(config_path).get("configs").id


def _changed(before: dict, after: dict) -> set[str]:
    return {key[0] for key in before.keys() | after.keys() if before.get(key) != after.get(key)}


def _copy_elsewhere(folder: Path, dest: Path) -> Path:
    shutil.copytree(folder, dest)
    return dest


LOCATION_EDITS = {
    "mirror": lambda c, t: c.update(mirror=str(t["tmp"] / "mirror")),
    "mirror with a trailing slash": lambda c, t: c.update(mirror=str(t["tmp"] / "mirror") + "/"),
    "cache folder": lambda c, t: c.update(cache_dir=str(t["tmp"] / "elsewhere")),
    "checkpoint cadence": lambda c, t: c["recipe"].update(checkpoint_steps=7),
    "shard size": lambda c, t: c["evaluation"].update(encode_shard_size=1000),
    "index collapse band": lambda c, t: c["evaluation"].update(index_sample_documents=5, index_max_active_share=0.9,
                                                               index_max_empty_share=0.5),
    "training processes": lambda c, t: c.update(train_processes=3),
    "triplets' mirror folder name": lambda c, t: c["training_data"].update(name="my-triplets"),
    "model folder copied elsewhere": lambda c, t: c["backbones"]["rand-roberta"].update(
        model=str(_copy_elsewhere(t["model"], t["tmp"] / "copy" / "model")) + "/"),
    "datasets file moved, dataset folder copied": lambda c, t: c.update(datasets_file=str(_moved_registry(t))),
    "report caption and label": lambda c, t: (c["report"].update(caption="x"),
                                              c["backbones"]["rand-roberta"].update(label="y")),
}


def _moved_registry(toy: dict) -> Path:
    copy = _copy_elsewhere(toy["data"], toy["tmp"] / "moved" / "slice")
    registry = toy["tmp"] / "moved" / "datasets.yaml"
    registry.write_text(yaml.safe_dump({"slice": {"source": "beir", "path": str(copy)}}))
    return registry


@pytest.mark.parametrize("edit", LOCATION_EDITS.values(), ids=LOCATION_EDITS.keys())
def test_where_things_come_from_and_how_jobs_run_change_no_output_folder(toy, edit):
    assert _folders(_edited(toy, edit)) == _folders(toy["config"])


def test_the_config_snapshot_changes_with_every_setting_of_a_result_or_report_and_no_other(toy):
    """results/configs/<id>/config.yaml, an input of every report: a label re-makes the reports (and
    so does a path written in the config, which it shows as written), a mirror or a key order does
    not."""
    same = _snapshot_id(_edited(toy, lambda c, t: None, "same.yaml"))
    shown = {"report caption and label", "model folder copied elsewhere", "datasets file moved, dataset folder copied"}
    for name, edit in LOCATION_EDITS.items():
        edited = _snapshot_id(_edited(toy, edit, "same.yaml"))
        assert (edited != same) == (name in shown), name
    assert _snapshot_id(_edited(toy, lambda c, t: c["recipe"].update(learning_rate=3e-5), "same.yaml")) != same
    reordered = _edited(toy, lambda c, t: c.update({"recipe": dict(reversed(list(c["recipe"].items())))}), "same.yaml")
    assert _snapshot_id(reordered) == same


def test_the_config_snapshot_is_the_configs_content_not_its_path(toy):
    """A byte-identical copy of the config elsewhere is the same config; the files stay information."""
    copy = toy["tmp"] / "elsewhere" / "copy.yaml"
    copy.parent.mkdir()
    copy.write_bytes(toy["config"].read_bytes())
    first, second = layout(toy["config"]).get("configs"), layout(copy).get("configs")
    assert first.id == second.id and first.identity == second.identity
    assert set(first.identity) == {"config", "backbone_order"}
    edited = _edited(toy, lambda c, t: c["recipe"].update(learning_rate=3e-5), "copy.yaml")
    assert layout(edited).get("configs").id != first.id  # content still decides it


def test_a_relative_spelling_of_the_same_folders_changes_nothing(toy, monkeypatch):
    monkeypatch.chdir(toy["tmp"])
    relative = _edited(toy, lambda c, t: (c.update(mirror="mirror/"), c["backbones"]["rand-roberta"].update(model="./model")))
    assert _folders(relative) == _folders(toy["config"])


def _poke(path: Path) -> None:
    path.write_bytes(path.read_bytes() + b" ")


RESULT_EDITS = {
    "learning rate": (lambda c, t: c["recipe"].update(learning_rate=3e-5), {"train", "index", "evaluate"}),
    "top_k": (lambda c, t: c["evaluation"].update(top_k=200), {"evaluate", "bm25"}),  # within it: R@100 needs 100
    "collapse threshold": (lambda c, t: c["evaluation"].update(collapse_max_active_share=0.5), {"evaluate"}),
    "encode batch size": (lambda c, t: c["evaluation"].update(encode_batch_size=8), {"index", "evaluate"}),
    "pool depth": (lambda c, t: c["evaluation"].update(pool_depth=20), {"pool", "index", "evaluate", "bm25"}),
    "triplet seed": (lambda c, t: c["training_data"].update(seed=2), {"triplets", "probe", "train", "index", "evaluate"}),
    "a new k": (lambda c, t: c.update(k_grid=c["k_grid"] + [2]), {"probe", "train", "index", "evaluate"}),
    "the dataset's bytes": (lambda c, t: _poke(t["data"] / "corpus.jsonl"),
                            {"data", "triplets", "probe", "train", "index", "evaluate", "bm25"}),
    "the model's bytes": (lambda c, t: _poke(t["model"] / "model.safetensors"), {"norms", "probe", "train", "index", "evaluate"}),
}


@pytest.mark.parametrize("edit, kinds", RESULT_EDITS.values(), ids=RESULT_EDITS.keys())
def test_a_result_setting_moves_exactly_the_outputs_it_decides(toy, edit, kinds):
    before = _folders(toy["config"])
    assert _changed(before, _folders(_edited(toy, edit))) == kinds


def test_every_stage_function_binds_to_its_declaration(toy):
    """Each declared stage's job function takes exactly what its declaration gives it (outputs,
    inputs, runtime settings by name; the rest from the identity): checked when the Snakefile is
    parsed, so a misspelt argument fails there, naming the stage, not inside a job."""
    from lsrbench.dag.stage import StageRules, call_settings

    paths = layout(toy["config"])
    StageRules(paths).check()
    evaluate = paths.get("evaluate", run="rand-roberta", k="1", dataset="slice")
    settings = call_settings(paths.stages["evaluate"].job, evaluate)
    assert settings == {"run": "rand-roberta", "k": "1", "dataset": "slice", "top_k": 100,
                        "measures": ["nDCG@10", "RR@10", "R@100"], "skip_identical_ids": False,
                        "collapse_max_active_share": 1.0, "config_hash": evaluate.sha256}
    assert all(settings[k] == evaluate.identity.get(k, settings[k]) for k in settings)

    def evaluate_with_a_new_setting(new_setting, **kwargs):  # a setting no declaration gives
        pass

    with pytest.raises(ValueError, match="stage evaluate: nothing provides new_setting"):
        StageRules(_with_job(toy, "evaluate", evaluate_with_a_new_setting)).check()

    def train_without_its_log(run, k, mode, recipe, config_hash, entry, mirror, cache_dir, config_file, norms_json,
                              triplets_jsonl, model_dir, provenance_json, status_json, checkpoint_dir,
                              checkpoint_steps, processes):
        pass

    with pytest.raises(ValueError, match="stage train: outputs train_log are not arguments of"):
        StageRules(_with_job(toy, "train", train_without_its_log)).check()
    with pytest.raises(ValueError, match="stage bm25: no job function declared"):
        StageRules(_with_job(toy, "bm25", None)).check()


def _with_job(toy, name: str, job):
    """The toy config's layout with stage ``name`` declared with another job function."""
    from dataclasses import replace

    paths = layout(toy["config"])
    paths.stages[name] = replace(paths.stages[name], job=job)
    return paths


def test_a_target_of_another_configs_id_is_not_an_output_of_this_one(toy):
    paths = layout(toy["config"])
    train = paths.get("train", run="rand-roberta", k="1")
    assert paths.find("train", train.fields) is train
    with pytest.raises(ValueError, match="not an output of the current config"):
        paths.find("train", {**train.fields, "train_id": "0" * 12})
    with pytest.raises(ValueError):
        paths.find("train", {**train.fields, "k": "1e-30"})  # another run's id under this one's name


def test_the_mirror_must_exist(toy, capsys):
    from lsrbench.cli import main

    config = _edited(toy, lambda c, t: c.update(mirror=str(t["tmp"] / "no-such-mirror")))
    assert main(["check-config", "--configfile", str(config)]) == 2
    assert capsys.readouterr().err == (f"lsrbench: error: {config}: mirror: mirror folder '{toy['tmp'] / 'no-such-mirror'}' "
                                       "does not exist (a folder laid out like ../shared: data/<dataset>/, models/<name>/)\n")
    proc = run_snakemake("-n", "--cores", "1", "-d", str(toy["tmp"] / "work"), "--configfile", str(toy["config"]),
                         "--config", f"mirror={toy['tmp'] / 'gone'}", check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert f"lsrbench: error: command line (--config): mirror: mirror folder '{toy['tmp'] / 'gone'}' does not exist" \
        in proc.stderr


# -- through snakemake, on a copy of the finished micro run --------------------------------------

def _snapshot(results: Path) -> dict[str, bytes]:
    """Every finished file below the results folder except the current config's reports (their
    HTML pages, results/html/, and their manifests, results/manifests/, too)."""
    return {str(p.relative_to(results)): p.read_bytes() for p in results.rglob("*")
            if p.is_file() and not (p.parent == results and p.name in REPORTS) and ".cache" not in p.parts
            and p.parent not in (results / "html", results / "manifests")}


def _planned(work: Path, config: Path, *config_args: str) -> dict[str, int]:
    extra = ["--config", *config_args] if config_args else []
    out = run_snakemake("-n", "--cores", "1", "-d", str(work), "--configfile", str(config), *extra).stdout
    return {k: v for k, v in job_counts(out).items() if k not in ("all", "total")}


def _edit_file(micro_run: dict, tmp: Path, edit) -> Path:
    config = yaml.safe_load(micro_run["config"].read_text())
    edit(config)
    path = tmp / "edited.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.mark.slow
def test_an_edit_runs_beside_the_old_outputs_and_reverting_it_recomputes_nothing(micro_run, tmp_path):
    work = copy_run(micro_run, tmp_path / "work")
    results = work / "results"
    finished, reports = _snapshot(results), {name: (results / name).read_bytes() for name in ("metrics.csv", "table1.md")}
    edited = _edit_file(micro_run, tmp_path, lambda c: c["recipe"].update(learning_rate=3e-5))
    assert {k: v for k, v in _planned(work, edited).items() if k in RESULT_RULES} == {"train": 2, "index": 2, "evaluate": 2}
    run_snakemake("--cores", "2", "-d", str(work), "--configfile", str(edited))
    after = _snapshot(results)
    assert {name: after[name] for name in finished} == finished  # every finished file, byte for byte
    new_runs = {str(Path(layout(edited).get("train", run="rand-roberta", k=k).folder).relative_to("results"))
                for k in ("1", "1e-30")}
    assert {name.split("/model/")[0] for name in set(after) - set(finished) if "/model/" in name} == new_runs
    assert all(f in (results / "metrics.sources.json").read_text() for f in new_runs)  # the reports show the edit

    planned = _planned(work, micro_run["config"])  # the edit reverted
    assert planned and set(planned).isdisjoint(RESULT_RULES), planned
    run_snakemake("--cores", "2", "-d", str(work), "--configfile", str(micro_run["config"]))
    assert {name: (results / name).read_bytes() for name in reports} == reports
    assert _planned(work, micro_run["config"]) == {}
    assert set(_planned(work, edited)).isdisjoint(RESULT_RULES)  # the edit again: its reports only


@pytest.mark.slow
def test_a_job_failing_after_an_edit_keeps_every_earlier_output(micro_run, tmp_path):
    """The issue's case: the backbone's model folder, edited to an empty folder (which exists, so the
    config passes), fails its norm job with one line; with --keep-going, as both profiles run."""
    work = copy_run(micro_run, tmp_path / "work")
    results = work / "results"
    empty = tmp_path / "empty-model"
    empty.mkdir()
    before = {**_snapshot(results), **{n: (results / n).read_bytes() for n in REPORTS if (results / n).is_file()}}
    edited = _edit_file(micro_run, tmp_path, lambda c: c["backbones"]["rand-roberta"].update(model=str(empty)))
    proc = run_snakemake("--cores", "2", "--keep-going", "-d", str(work), "--configfile", str(edited), check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert [line for line in proc.stderr.splitlines() if line.startswith("lsrbench: error: ")], proc.stderr[-2000:]
    after = {**_snapshot(results), **{n: (results / n).read_bytes() for n in REPORTS if (results / n).is_file()}}
    assert {name: after.get(name) for name in before} == before
    assert _planned(work, micro_run["config"]) == {}


def _mirror_with_the_slice(tmp: Path, micro_run: dict) -> Path:
    """A mirror folder holding the micro run's dataset, the same bytes as its own folder."""
    slice_dir = Path(yaml.safe_load(Path(yaml.safe_load(micro_run["config"].read_text())["datasets_file"])
                                    .read_text())["slice"]["path"])
    mirror = tmp / "mirror"
    shutil.copytree(slice_dir, mirror / "data" / "slice")
    return mirror


@pytest.mark.slow
def test_the_mirror_spelt_three_ways_or_dropped_plans_nothing(micro_run, tmp_path):
    work = copy_run(micro_run, tmp_path / "work")
    mirror = _mirror_with_the_slice(tmp_path, micro_run)
    (tmp_path / "link").symlink_to(mirror)
    for spelling in (str(mirror), str(mirror) + "/", os.path.relpath(mirror, work), str(tmp_path / "link")):
        assert _planned(work, micro_run["config"], f"mirror={spelling}") == {}, spelling
    assert _planned(work, micro_run["config"], "mirror=") == {}
    # other bytes under the dataset's name in the mirror are other data: that re-runs what reads it
    _poke(mirror / "data" / "slice" / "queries.jsonl")
    planned = _planned(work, micro_run["config"], f"mirror={mirror}")
    assert {"dataset", "triplets", "train", "index", "evaluate", "bm25"} <= set(planned), planned
    assert "norm" not in planned


def test_a_pool_folder_is_named_by_its_depth_every_other_by_its_identitys_hash():
    from lsrbench.dag.folders import folder_id
    from lsrbench.hashing import stable_hash

    assert folder_id("pool", {"pool_depth": 20, "dataset": "vaswani"}) == "pool20"
    identity = {"stage": "train", "k": 4}
    assert folder_id("train", identity) == stable_hash(identity)[:12] != folder_id("train", {**identity, "k": 1})
