"""The checks made before the first job (lsrbench.validation.config), on config dicts: each refusal
is one InputError naming the file and the field; the shipped configs pass. The same checks through
``snakemake`` on a finished run: tests/dag/test_bad_inputs_dag.py."""

import copy
import math

import pytest
import yaml

from helpers.paths import REPO
from lsrbench.errors import InputError
from lsrbench.config.strict_yaml import load_yaml
from lsrbench.validation.config import check_config, check_values, produced_measures

FILE = "my.yaml"


@pytest.fixture(scope="module")
def tiny() -> dict:
    config = load_yaml(REPO / "config" / "config.yaml")
    config["datasets_file"] = str(REPO / "config" / "datasets.yaml")
    return config


def refused(config: dict) -> str:
    with pytest.raises(InputError) as err:
        check_config(config, FILE, files=False)
    assert "\n" not in str(err.value)
    return str(err.value)


def edited(config: dict, edit) -> dict:
    config = copy.deepcopy(config)
    edit(config)
    return config


@pytest.mark.parametrize("name", ["config.yaml", "paper.yaml"])
def test_the_shipped_configs_pass(name):
    config = load_yaml(REPO / "config" / name)
    config["datasets_file"] = str(REPO / "config" / "datasets.yaml")
    if config["report"].get("reference"):
        config["report"]["reference"] = str(REPO / config["report"]["reference"])
    assert check_config(config, name, files=False)["_datasets"]


def test_non_finite_numbers_and_non_string_keys_anywhere():
    with pytest.raises(InputError) as err:
        check_values({"a": [{"b": 1.0}, {"c": [0.5, math.nan]}]}, FILE)
    assert str(err.value) == f"{FILE}: a[1].c[1]: must be a finite number, got nan"
    with pytest.raises(InputError) as err:
        check_values({"a": {3: "x"}}, FILE)
    assert str(err.value) == f"{FILE}: a: key 3 is not a string (quote it)"


@pytest.mark.parametrize("edit, says", [
    (lambda c: c["recipe"].update(learning_rate=math.inf), "recipe.learning_rate: must be a finite number, got inf"),
    (lambda c: c["claims"].update(alpha=math.nan), "claims.alpha: must be a finite number, got nan"),
    (lambda c: c["backbones"]["splade-tiny-x10"].update(head_scale=1e39), "backbones.splade-tiny-x10.head_scale: 1e+39 is outside float32"),
    (lambda c: c.update(k_grid=[1, 1e300]), "k_grid[1]: 301 characters"),  # even where no backbone sweeps it
    (lambda c: c["backbones"]["splade-tiny-x10"].update(k=[1, 1e300]), "backbones.splade-tiny-x10.k[1]: 301 characters"),
    (lambda c: c["backbones"]["splade-tiny"].update(modes={"shared": [1, 4.0, 4]}), "has non-unique elements"),
    (lambda c: c["recipe"].update(seed=2**32), "recipe.seed: 4294967296 is greater than the maximum of 4294967295"),
    (lambda c: c["claims"].update(seed=-1), "claims.seed: -1 is less than the minimum of 0"),
    (lambda c: c["evaluation"].update(top_k=2**31), "evaluation.top_k: 2147483648 is greater than the maximum"),
    (lambda c: c.update(datasets_file=""), "datasets_file: '' is empty: give the dataset registry"),
    (lambda c: c.update(mirror=""), "mirror: '' is empty: give a folder laid out like ../shared"),  # not the cwd
    (lambda c: c.update(mirror="  "), "mirror: '  ' is empty: give a folder laid out like ../shared"),
    (lambda c: c.update(mirror=5), "mirror: 5 is not of type 'string', 'null'"),  # the schema's line is the pattern's only
    (lambda c: c.update(cache_dir=""), "cache_dir: '' is empty: give the folder downloads are cached in"),
    (lambda c: c.update(cache_dir=" "), "cache_dir: ' ' is empty"),
])
def test_numbers(tiny, edit, says):
    assert says in refused(edited(tiny, edit))


@pytest.mark.parametrize("edit, says", [
    (lambda c: c["backbones"].update(BM25={"model": "x"}), "backbones.BM25: 'BM25' names the reference row"),
    (lambda c: c["backbones"]["splade-tiny-x10"].update(label="SPLADE-tiny MLM re-fit (BERT 2L, tied head)", synthetic=False),
     "backbones.splade-tiny-x10.label: 'SPLADE-tiny MLM re-fit (BERT 2L, tied head)' is also how splade-tiny is shown"),
    (lambda c: c["backbones"]["splade-tiny"].update(label="BM25 (Anserini, k1=0.9, b=0.4)"), "is also how BM25 is shown"),
    (lambda c: c["report"]["columns"][1].update(name="k"), "report.columns[1].name: column 'k' is already a column"),
    (lambda c: c["report"]["columns"][1].update(name="a\nb"), "report.columns[1].name: 'a\\nb' cannot be a table cell"),
    (lambda c: c["claims"]["list"].append(dict(c["claims"]["list"][0])), "claims.list[9].id: claim id"),
    # equal as a reader sees them (Markdown collapses whitespace)
    (lambda c: c["backbones"]["splade-tiny-x10"].update(label="SPLADE-tiny MLM re-fit  (BERT 2L, tied head) ", synthetic=False),
     "backbones.splade-tiny-x10.label: 'SPLADE-tiny MLM re-fit  (BERT 2L, tied head) ' is also how splade-tiny is shown "
     "('SPLADE-tiny MLM re-fit (BERT 2L, tied head)', as a reader sees it)"),
    (lambda c: c["backbones"]["splade-tiny"].update(label="BM25 (Anserini, k1=0.9, b=0.4) "), "is also how BM25 is shown"),
    (lambda c: c["report"]["columns"][1].update(name=" k "), "report.columns[1].name: column ' k ' is already a column "
                                                             "of the tables ('k', as a reader sees it)"),
    (lambda c: c["report"]["columns"][1].update(name=c["report"]["columns"][0]["name"] + "\t"), "report.columns[1].name"),
    (lambda c: c["claims"]["list"].append(dict(c["claims"]["list"][0], id=c["claims"]["list"][0]["id"] + " ")),
     "claims.list[9].id: claim id"),
    # one folder on a case-folding filesystem (macOS, Windows)
    (lambda c: c["backbones"].update({"SPLADE-tiny": dict(c["backbones"]["splade-tiny"], label="other")}),
     "backbones.SPLADE-tiny: 'SPLADE-tiny' and 'splade-tiny' name one folder where a filesystem ignores case"),
    (lambda c: c["backbones"].update(bm25={"model": "x"}), "backbones.bm25: 'bm25' and 'BM25' name one folder"),
])
def test_derived_names_are_unique(tiny, edit, says):
    assert says in refused(edited(tiny, edit))


@pytest.mark.parametrize("edit, says", [
    (lambda c: c["evaluation"].update(measures=["nDCG@10", "Recall@1000x"]), "evaluation.measures[1]: unknown or unsupported measure"),
    (lambda c: c["report"]["columns"][0].update(measure="P@10"), "report.columns[0].measure: measure 'P@10' is not computed on vaswani"),
    (lambda c: c["report"]["columns"][1].update(measure="MRR@10"), "metrics.csv spells it 'RR@10'"),
    (lambda c: c["report"].update(beir_measure="AP"), "report.beir_measure: measure 'AP' is not computed on vaswani"),
    (lambda c: c["claims"]["list"][0]["a"].update(backbone="splade-small"), "claims.list[0].a.backbone: run 'splade-small' is not in"),
    (lambda c: c["claims"]["list"][0]["a"].update(k=2), "claims.list[0].a.k: k 2 is not swept for splade-tiny-x10 (k: 1, 16)"),
    (lambda c: c["claims"]["list"][7].update(b_k=8), "claims.list[7].b_k: k 8 is not swept for splade-tiny-x10"),
    (lambda c: c["claims"]["list"][1].update(backbones=["splade-tiny+untie", "nope"]), "claims.list[1].backbones[1]: run 'nope'"),
    (lambda c: c["claims"]["list"][0].update(measure="R@10"), "claims.list[0].measure: measure 'R@10' is not computed"),
    (lambda c: c["claims"]["list"][0].update(colour=1), "claims.list[0]: unknown key"),
    (lambda c: c["claims"]["list"][2].pop("expect"), "claims.list[2]: 'expect' is a required property"),
    (lambda c: (c["auto_k"].update(reference="bert"), c["backbones"]["splade-tiny-x10"].update(k=[1, "auto"])),
     "auto_k.reference: backbone 'bert' is not defined"),
    (lambda c: (c.pop("auto_k"), c["backbones"]["splade-tiny-x10"].update(k=[1, "auto"])),
     "backbones.splade-tiny-x10.k: k: auto needs auto_k.reference"),
    # the MLM re-fit (docs/miniature.md): its texts' dataset, its numbers, a released checkpoint
    (lambda c: c["backbones"]["splade-tiny"]["mlm_refit"].update(dataset="nope"),
     "backbones.splade-tiny.mlm_refit.dataset: dataset 'nope' is not defined in"),
    (lambda c: c["backbones"]["splade-tiny"]["mlm_refit"].update(steps=0), "backbones.splade-tiny.mlm_refit.steps: 0"),
    (lambda c: c["backbones"]["splade-tiny"]["mlm_refit"].update(mlm_probability=1.5),
     "backbones.splade-tiny.mlm_refit.mlm_probability: 1.5"),
    (lambda c: c["backbones"]["splade-tiny"]["mlm_refit"].pop("dataset"),
     "backbones.splade-tiny.mlm_refit: 'dataset' is a required property"),
    (lambda c: c["backbones"].update(released={"model": "naver/splade-v3", "evaluate_only": True,
                                               "mlm_refit": {"dataset": "vaswani"}}),
     "backbones.released.mlm_refit: an evaluate_only backbone is evaluated as released: it is not re-fit"),
    (lambda c: c["backbones"].update(released={"model": "naver/splade-v3", "evaluate_only": True, "head_scale": 4}),
     "backbones.released.head_scale: an evaluate_only backbone is evaluated as released: head_scale must be 1"),
    # contradicting settings: a cutoff deeper than the ranking the runs keep (R@100 of a top-5 run is R@5)
    (lambda c: c["evaluation"].update(top_k=5, measures=["nDCG@5", "R@100"]),
     "evaluation.measures[1]: R@100 reads 100 documents per query, but evaluation.top_k keeps 5"),
    (lambda c: c["evaluation"].update(top_k=999), "evaluation.measures[2]: R@1000 reads 1000 documents per query"),
    (lambda c: c["evaluation"].update(top_k=9, measures=["P(rel=2)@10"]), "evaluation.measures[0]: P(rel=2)@10 reads 10"),
    (lambda c: c["report"].update(flops_datasets=["msmarco-dev"]),
     "report.flops_datasets[0]: dataset 'msmarco-dev' is not evaluated"),
    (lambda c: c["claims"].update(datasets=["msmarco-dev"]), "claims.datasets[0]: dataset 'msmarco-dev' is not evaluated"),
])
def test_references_to_what_the_config_produces(tiny, edit, says):
    assert says in refused(edited(tiny, edit))


def test_only_a_released_backbone_is_held_to_its_head_as_released(tiny):
    """The schema's evaluate_only rule (head_scale 1, no re-fit) binds only evaluate_only: true."""
    trained = {"model": "naver/splade-v3", "evaluate_only": False, "head_scale": 4, "mlm_refit": {"dataset": "vaswani"}}
    config = edited(tiny, lambda c: c["backbones"].update(released=trained))
    checked = check_config(config, FILE, files=False)
    assert checked["backbones"]["released"]["head_scale"] == 4


def test_a_dataset_measure_is_named_in_the_datasets_file(tiny, tmp_path):
    datasets = yaml.safe_load((REPO / "config" / "datasets.yaml").read_text())
    datasets["vaswani"]["measures"] = ["nDCG@10", "nDCG@x"]
    path = tmp_path / "datasets.yaml"
    path.write_text(yaml.safe_dump(datasets))
    assert refused(edited(tiny, lambda c: c.update(datasets_file=str(path)))).startswith(
        f"{path}: vaswani.measures[1]: unknown or unsupported measure 'nDCG@x'")
    datasets["vaswani"]["measures"] = ["nDCG@10", "RR@10"]  # R@1000 (a report column) no longer computed
    path.write_text(yaml.safe_dump(datasets))
    assert "report.columns[2].measure: measure 'R@1000' is not computed on vaswani" in refused(
        edited(tiny, lambda c: c.update(datasets_file=str(path))))


def test_two_datasets_of_one_folder_on_a_case_folding_filesystem(tiny, tmp_path):
    datasets = yaml.safe_load((REPO / "config" / "datasets.yaml").read_text())
    datasets["Vaswani"] = datasets["vaswani"]
    path = tmp_path / "datasets.yaml"
    path.write_text(yaml.safe_dump(datasets))
    config = edited(tiny, lambda c: (c.update(datasets_file=str(path)), c["evaluation"].update(datasets=["vaswani", "Vaswani"])))
    assert refused(config).startswith(f"{FILE}: evaluation.datasets[1]: 'Vaswani' and 'vaswani' name one folder")


def test_a_dataset_measure_deeper_than_top_k_names_both_fields(tiny, tmp_path):
    datasets = yaml.safe_load((REPO / "config" / "datasets.yaml").read_text())
    datasets["vaswani"]["measures"] = ["nDCG@10", "R@100"]
    path = tmp_path / "datasets.yaml"
    path.write_text(yaml.safe_dump(datasets))
    config = edited(tiny, lambda c: (c.update(datasets_file=str(path)), c["evaluation"].update(top_k=50)))
    assert refused(config).startswith(f"{path}: vaswani.measures[1]: R@100 reads 100 documents per query, "
                                      "but evaluation.top_k keeps 50")
    config["evaluation"].update(top_k=100, measures=["nDCG", "AP", "R@1000"])  # unused default: parsed, not computed
    assert produced_measures(config, datasets, FILE)["vaswani"] >= {"nDCG@10", "R@100"}
    datasets["vaswani"]["measures"] = ["nDCG", "AP@100"]  # no cutoff (the whole ranking kept), or one within it
    assert produced_measures(config, datasets, FILE)["vaswani"] >= {"nDCG", "AP@100"}


def test_produced_measures_use_ir_measures_spelling(tiny):
    datasets = yaml.safe_load((REPO / "config" / "datasets.yaml").read_text())
    produced = produced_measures(edited(tiny, lambda c: c["evaluation"].update(measures=["NDCG@10", "MRR@10"])),
                                 datasets, FILE)
    assert produced["vaswani"] == {"nDCG@10", "RR@10", "FLOPs", "query_active_dims", "doc_active_dims", "collapsed"}


@pytest.mark.parametrize("values, says", [
    ({"splade-tiny": {1: {"Vaswani nDCG@10": float("nan")}}}, "values.splade-tiny.1.Vaswani nDCG@10: must be a finite number"),
    ({"splade-tiny": {1: {"Vaswani nDCG@1O": 0.3}}}, "values.splade-tiny.1.Vaswani nDCG@1O: not a column of the table"),
    ({"splade-tiny": [0.3]}, "values.splade-tiny: must map k to {column: value}"),
])
def test_the_paper_reference_file(tiny, tmp_path, values, says):
    path = tmp_path / "reference.yaml"
    path.write_text(yaml.safe_dump({"values": values}))
    assert refused(edited(tiny, lambda c: c["report"].update(reference=str(path)))).startswith(f"{path}: {says}")


def test_a_recorded_folder_is_checked_again_only_when_a_file_or_the_installed_versions_change(
        tmp_path, vaswani_slice, tiny_roberta, monkeypatch):
    """The record of folders that passed (lsrbench.validation.files): a damaged config.json of
    the same size and modification time is not read again (the record says unchanged); a new
    modification time, or another installed transformers, checks the folder again and refuses it."""
    import importlib.metadata
    import os
    import shutil

    from helpers.snakemake import micro_config
    from lsrbench.config.layers import locate_config_paths
    from lsrbench.validation.files import RECORD, RECORD_VARIABLE, record_path

    model = shutil.copytree(tiny_roberta, tmp_path / "model")
    path = micro_config(tmp_path, vaswani_slice, model)
    config, record = locate_config_paths(load_yaml(path), REPO), tmp_path / "record.json"
    check_config(copy.deepcopy(config), str(path), record=record)
    assert len(yaml.safe_load(record.read_text())) == 2  # the slice and the model
    target = model / "config.json"
    stat = target.stat()
    target.write_text("{" + " " * (stat.st_size - 1))  # not JSON, same size
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    check_config(copy.deepcopy(config), str(path), record=record)  # recorded: not read
    with pytest.raises(InputError, match="backbones.rand-roberta.model: cannot load"):
        check_config(copy.deepcopy(config), str(path))  # without the record: read, refused
    real_version = importlib.metadata.version
    with monkeypatch.context() as patch:
        patch.setattr(importlib.metadata, "version", lambda name: "0.0.1" if name == "transformers" else real_version(name))
        with pytest.raises(InputError, match="backbones.rand-roberta.model: cannot load"):
            check_config(copy.deepcopy(config), str(path), record=record)
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    with pytest.raises(InputError, match="backbones.rand-roberta.model: cannot load"):
        check_config(copy.deepcopy(config), str(path), record=record)
    monkeypatch.delenv(RECORD_VARIABLE, raising=False)
    assert record_path() == RECORD == ".snakemake/lsrbench-checked-inputs.json"
    monkeypatch.setenv(RECORD_VARIABLE, str(record))
    assert record_path() == str(record)
