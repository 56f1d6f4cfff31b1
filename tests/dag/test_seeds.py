"""Training seeds in the DAG (issue 18, item 8: ``recipe.seeds``): each seed its own train folder and
its own index and evaluate folders, keyed ``seed`` in the grid; one seed (``recipe.seed`` as every
existing config writes it, or ``seeds: [s]``) keeps every folder id, every run key and every report
input it had. Fast: the layout and Snakemake's dry run of the micro config. The two-seed micro run
through Snakemake is tests/dag/test_seeds_dag.py."""

from __future__ import annotations

import pytest
import yaml

from helpers.cli import lsrbench
from helpers.paths import REPO
from helpers.snakemake import job_counts, layout, micro_config, run_snakemake, toy_inputs
from lsrbench.config.grid import run_keys, training_seeds
from lsrbench.stages.recipe import LATE_RECIPE_SETTINGS, RUNTIME_RECIPE_KEYS
from lsrbench.report.reports import report_rules as ReportRules

# The train folders of the finished tiny default (config/config.yaml, /work/baseline/results): a
# lsrbench that moves one of them makes every finished grid train again.
# The tiny default before issue 30 (tests/dag/pre_miniature_config.yaml): its train folders.
TINY_DEFAULT_TRAIN = {
    ("splade-tiny", "1"): "5d3b08c055fb", ("splade-tiny", "4"): "9388e5431411", ("splade-tiny", "16"): "b13c26c74d0d",
    ("splade-tiny+untie", "16"): "707c4d991928", ("splade-tiny-x10", "1"): "7dfbfa06a67e",
    ("splade-tiny-x10", "4"): "3be833de9516", ("splade-tiny-x10", "16"): "986a0d564f89",
    ("splade-tiny-x10", "auto"): "8452f03a3f46",
}


# A claim on the micro grid: its per-query files are the claims rule's inputs.
CLAIMS = {"datasets": ["slice"], "list": [{"id": "c1", "text": "the best k beats the absurd one", "type": "compare",
                                           "a": {"backbone": "rand-roberta", "k": "best"},
                                           "b": {"backbone": "rand-roberta", "k": 1e-30}, "expect": "greater"}]}


def _toy_config(tmp_path, data, model) -> dict:
    path = micro_config(tmp_path, data, model)
    config = yaml.safe_load(path.read_text())
    config["claims"] = CLAIMS
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return {"tmp": tmp_path, "config": path}


@pytest.fixture
def toy(tmp_path) -> dict:
    """The micro config over a toy dataset folder and a stand-in model folder (ids only: nothing runs)."""
    return _toy_config(tmp_path, *toy_inputs(tmp_path))


@pytest.fixture
def micro(tmp_path, vaswani_slice, tiny_roberta) -> dict:
    """The micro config on its real slice and model (what check-config and a dry run read)."""
    return _toy_config(tmp_path, vaswani_slice, tiny_roberta)


def _with_recipe(toy: dict, name: str, drop_seed: bool = False, **recipe) -> object:
    config = yaml.safe_load(toy["config"].read_text())
    if drop_seed:
        config["recipe"].pop("seed")
    config["recipe"].update(recipe)
    path = toy["tmp"] / name
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _folders(config_path) -> dict:
    """Every addressed output by stage and key, with its folder."""
    lay = layout(config_path)
    return {(item.stage, tuple(sorted((k, str(v)) for k, v in item.fields.items()))): item.folder
            for item in lay.all()}


def _seed(toy: dict) -> int:
    return yaml.safe_load(toy["config"].read_text())["recipe"]["seed"]


def test_the_tiny_default_keeps_every_train_folder():
    trained = layout(REPO / "tests/dag/pre_miniature_config.yaml").of_stage("train")
    assert {(i.fields["run"], i.fields["k"]): i.id for i in trained} == TINY_DEFAULT_TRAIN


def test_one_seed_keeps_the_recipe_identity_and_the_run_keys(toy):
    """The train identity holds the recipe exactly as before seeds existed (``checkpoint_steps``
    out), and the grid's keys, the report rules' run rows and collect's inputs have no seed."""
    lay = layout(toy["config"])
    recipe = yaml.safe_load(toy["config"].read_text())["recipe"]
    train = lay.of_stage("train")[0]
    # runtime keys out, and the keys added later at their default (LATE_RECIPE_SETTINGS: weight_decay 0)
    assert train.identity["recipe"] == {k: v for k, v in lay.config["recipe"].items()
                                        if k not in RUNTIME_RECIPE_KEYS and k not in LATE_RECIPE_SETTINGS}
    assert train.identity["recipe"]["seed"] == recipe["seed"] and "seeds" not in train.identity["recipe"]
    assert lay.get("configs").identity["config"]["recipe"] == train.identity["recipe"]
    assert run_keys(lay.config) == [{"run": "rand-roberta", "k": "1"}, {"run": "rand-roberta", "k": "1e-30"}]
    rules = ReportRules(lay)
    assert set(rules.input_files("collect")) == {"metric_files", "config_yaml", "_config_params"}
    assert [row[:-1] for row in rules.params("claims")["keyed"]["log_files"]] == [["rand-roberta", "1"],
                                                                                   ["rand-roberta", "1e-30"]]


def test_seeds_of_one_seed_is_the_seed(toy):
    """``seeds: [s]`` is ``seed: s``: the same folders, the same config snapshot (the file name,
    which the snapshot names, kept)."""
    seed = _seed(toy)
    as_seed = _folders(toy["config"])
    _with_recipe(toy, toy["config"].name, drop_seed=True, seeds=[seed])
    assert "seed" not in yaml.safe_load(toy["config"].read_text())["recipe"]
    assert _folders(toy["config"]) == as_seed


def test_a_second_seed_adds_its_own_train_index_and_evaluate_folders_beside_the_first(toy):
    """Seeds [s, t] over a config with seed s: the s folders are the one-seed config's (its
    finished runs are found again), t adds one train, index and evaluate folder per run; data,
    norms, triplets and BM25 are shared."""
    seed = _seed(toy)
    two = _with_recipe(toy, "two.yaml", seeds=[seed, seed + 1])
    lay = layout(two)
    assert training_seeds(lay.config) == [seed, seed + 1]
    by_stage: dict[str, list] = {}
    for item in lay.all():
        by_stage.setdefault(item.stage, []).append(item)
    old = {item.folder for item in layout(toy["config"]).all() if item.stage != "config_snapshot"}
    new = {item.folder for item in lay.all() if item.stage != "config_snapshot"}
    assert old <= new
    for stage in ("train", "index", "evaluate"):
        items = by_stage.get(stage, [])
        assert len(items) == 2 * len(layout(toy["config"]).of_stage(stage)), stage
        assert {item.fields["seed"] for item in items} == {seed, seed + 1}
        assert len({item.folder for item in items}) == len(items), stage
    for stage in ("dataset", "norm", "triplets", "bm25"):
        assert [i.folder for i in by_stage[stage]] == [i.folder for i in layout(toy["config"]).of_stage(stage)], stage
    train = {item.fields["seed"]: item for item in by_stage["train"] if item.fields["k"] == "1"}
    assert train[seed].identity == layout(toy["config"]).get("train", run="rand-roberta", k="1").identity
    assert {**train[seed].identity["recipe"], "seed": seed + 1} == train[seed + 1].identity["recipe"]
    # each seed's evaluation reads its own model's vectors
    evaluated = lay.get("evaluate", run="rand-roberta", k="1", seed=seed + 1, dataset="slice")
    assert evaluated.identity["train"] == train[seed + 1].id


def test_the_report_rules_read_every_seed_by_key(toy):
    seed = _seed(toy)
    lay = layout(_with_recipe(toy, "two.yaml", seeds=[seed, seed + 1]))
    rules = ReportRules(lay)
    keyed = rules.params("claims")["keyed"]
    assert [row[:-1] for row in keyed["log_files"]] == [["rand-roberta", k, s] for k in ("1", "1e-30")
                                                         for s in (seed, seed + 1)]
    assert {tuple(row[:-1]) for row in keyed["perquery_files"]} == {("rand-roberta", k, s, "slice")
                                                                     for k in ("1", "1e-30") for s in (seed, seed + 1)}
    seeded = rules.params("collect")["keyed"]["seeded_files"]
    assert {row[-1] for row in seeded} <= set(rules.input_files("collect")["metric_files"])
    assert {row[2] for row in seeded} == {seed, seed + 1}


@pytest.mark.parametrize("edit, says", [
    ({"seeds": []}, "recipe.seeds: [] should be non-empty"),
    ({"seeds": [1, 1]}, "recipe.seeds: [1, 1] has non-unique elements"),
    ({"seeds": [-1]}, "recipe.seeds[0]: -1 is less than the minimum of 0"),
])
def test_bad_seeds_are_one_line_naming_the_field(micro, edit, says):
    path = _with_recipe(micro, "bad.yaml", **edit)
    proc = lsrbench("check-config", "--configfile", path)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == f"lsrbench: error: {path}: {says}"


def test_a_recipe_without_a_seed_is_refused(micro):
    path = _with_recipe(micro, "none.yaml", drop_seed=True)
    proc = lsrbench("check-config", "--configfile", path)
    assert proc.returncode != 0 and proc.stderr.strip() == f"lsrbench: error: {path}: recipe: 'seed' is a required property"


def test_a_layer_adds_seeds_over_a_base_that_sets_seed(micro):
    """``seeds`` replaces ``seed`` where both are set: a file on ``base:`` the paper config adds
    seeds without touching the base's ``seed`` (a layer cannot delete a key)."""
    seed = _seed(micro)
    layer = micro["tmp"] / "layer.yaml"
    layer.write_text(yaml.safe_dump({"base": str(micro["config"]), "recipe": {"seeds": [seed + 5, seed + 6]}}))
    proc = lsrbench("check-config", "--configfile", layer)
    assert proc.returncode == 0, proc.stderr
    assert f"2 runs x 2 training seeds ({seed + 5}, {seed + 6})" in proc.stdout


def test_the_dry_run_trains_each_seed_once(micro):
    seed = _seed(micro)
    three = _with_recipe(micro, "three.yaml", seeds=[seed, seed + 1, seed + 2])
    counts = job_counts(run_snakemake("-n", "--cores", "1", "-d", str(micro["tmp"] / "work"), "--configfile",
                                      str(three)).stdout)
    assert counts["train"] == counts["index"] == counts["evaluate"] == 6
    assert counts["norm"] == counts["triplets"] == counts["bm25"] == 1


def test_a_released_checkpoint_is_one_model_whatever_the_seeds(micro):
    """``evaluate_only`` beside a trained run, two seeds: the trained run trains, indexes and
    evaluates once per seed, the released checkpoint once, keyed seed ``-`` (NO_SEED) in the
    report rules' rows."""
    from helpers.paths import shared_or_skip
    from lsrbench.names import NO_SEED

    config = yaml.safe_load(micro["config"].read_text())
    seed = config["recipe"]["seed"]
    config["k_grid"] = [1]
    config.pop("claims")  # its k=1e-30 is not swept here
    config["backbones"]["released"] = {"model": str(shared_or_skip("models", "splade-tiny-msmarco")),
                                       "evaluate_only": True, "label": "SPLADE-tiny (released)"}
    config["recipe"]["seeds"] = [seed, seed + 1]
    path = micro["tmp"] / "released.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    assert run_keys(layout(path).config) == [{"run": "rand-roberta", "k": "1", "seed": seed},
                                             {"run": "rand-roberta", "k": "1", "seed": seed + 1},
                                             {"run": "released", "k": "1", "seed": NO_SEED}]
    logs = ReportRules(layout(path)).params("claims")["keyed"]["log_files"]
    assert [row[:-1] for row in logs] == [["rand-roberta", "1", seed], ["rand-roberta", "1", seed + 1],
                                          ["released", "1", NO_SEED]]
    counts = job_counts(run_snakemake("-n", "--cores", "1", "-d", str(micro["tmp"] / "work"), "--configfile",
                                      str(path)).stdout)
    assert counts["train"] == 2 and counts["released"] == 1
    assert counts["index"] == counts["evaluate"] == 3


def test_mteb_check_names_a_run_by_its_seed(toy):
    """``lsrbench mteb-check <run>/k<k>/seed<s>``: that seed's own train folder (here unfinished:
    the one line names it); without the seed, with several seeds, the line says how to name one."""
    seed = _seed(toy)
    two = _with_recipe(toy, "two.yaml", seeds=[seed, seed + 1])
    results = toy["tmp"] / "results"

    def check(run: str):
        return lsrbench("mteb-check", run, "slice", "--configfile", two, "--results", results)

    second = layout(two).get("train", run="rand-roberta", k="1", seed=seed + 1).folder.replace("results", str(results), 1)
    proc = check(f"rand-roberta/k1/seed{seed + 1}")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith(f"lsrbench: error: {second}: not a finished run (no model/ folder)")
    proc = check("rand-roberta/k1")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith(f"lsrbench: error: {two}: backbones: 'rand-roberta/k1' is not a run of this "
                                          "config (give <run>/k<k>/seed<s>")
