"""A head scaled at load to another backbone's measured head statistic (lsrbench.model.head_match):
the ratio, its application (the head alone in untie mode, the tied matrix in shared mode), what
training reads back from the norm record, and the config checks: each refusal one InputError line
naming the file and the field. The same through ``snakemake``: tests/dag/test_head_match_dag.py."""

import copy
import json
import math

import pytest
import torch

transformers = pytest.importorskip("transformers")
from transformers import BertConfig, BertForMaskedLM  # noqa: E402

from helpers.paths import tiny_default  # noqa: E402
from lsrbench.config.schema import with_defaults  # noqa: E402
from lsrbench.validation.config import check_config  # noqa: E402
from lsrbench.errors import InputError  # noqa: E402
from lsrbench.model.head_match import apply_head_scale, loaded_head_scale, matched_scale  # noqa: E402
from lsrbench.model.rescale import head_is_tied, head_norms  # noqa: E402

transformers.logging.set_verbosity_error()
SPEC = {"match": "big", "statistic": "mean_row_norm", "mode": "untie"}


def tiny_bert(vocab: int = 100, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return BertForMaskedLM(BertConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                      intermediate_size=64, max_position_embeddings=32)).eval()


def backbone_entry(**settings) -> dict:
    """A backbone entry as a checked config holds it (the schema's defaults filled)."""
    return with_defaults("backbones", {"b": {"model": "m", **settings}})["b"]


def norms_file(tmp_path, name: str, record: dict) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(record))
    return str(path)


@pytest.mark.parametrize("mode", ["untie", "shared"])
def test_the_matched_head_has_the_target_statistic(tmp_path, mode):
    """ratio = target / own; after it the head's mean row norm is the target's (float rounding), and
    in untie mode the input embeddings are the loaded ones, in shared mode scaled with the head."""
    model = tiny_bert()
    embeddings = model.get_input_embeddings().weight.detach().clone()
    own = head_norms(model)
    target = norms_file(tmp_path, "big", {"mean_row_norm": 7.25, "frobenius_norm": 1.0})
    record = matched_scale(own, target, {**SPEC, "mode": mode})
    assert record["ratio"] == 7.25 / own["mean_row_norm"] and record["own"] == own["mean_row_norm"]
    apply_head_scale(model, record["ratio"], mode)
    assert head_norms(model)["mean_row_norm"] == pytest.approx(7.25, rel=1e-6)
    after = model.get_input_embeddings().weight.detach()
    if mode == "untie":
        assert not head_is_tied(model) and torch.equal(after, embeddings)
    else:
        assert head_is_tied(model) and torch.allclose(after, embeddings * record["ratio"], rtol=1e-6)
    # the vocabulary does not enter a per-term statistic: a head of 3x the rows at the same row scale
    wide = tiny_bert(vocab=300)
    assert head_norms(wide)["mean_row_norm"] == pytest.approx(own["mean_row_norm"], rel=0.1)
    assert head_norms(wide)["frobenius_norm"] / own["frobenius_norm"] == pytest.approx(math.sqrt(3), rel=0.1)


def test_training_reads_the_recorded_ratio_and_checks_the_matched_file(tmp_path):
    record = {"match": "big", "statistic": "mean_row_norm", "mode": "untie", "target": 7.25, "own": 1.5,
              "ratio": 7.25 / 1.5}
    mine = norms_file(tmp_path, "mine", {"mean_row_norm": 7.25, "head_scale": record["ratio"], "head_scale_match": record})
    big = norms_file(tmp_path, "big", {"mean_row_norm": 7.25})
    entry = backbone_entry(head_scale=SPEC)
    assert loaded_head_scale(entry, mine, big) == (7.25 / 1.5, "untie")
    assert loaded_head_scale(backbone_entry(head_scale=10), None) == (10.0, "shared")
    assert loaded_head_scale(backbone_entry(), None) == (1.0, "shared")
    moved = norms_file(tmp_path, "moved", {"mean_row_norm": 9.0})
    with pytest.raises(InputError) as err:
        loaded_head_scale(entry, mine, moved)
    assert "\n" not in str(err.value) and "moved.json" in str(err.value) and "re-run its norm job" in str(err.value)
    bare = norms_file(tmp_path, "bare", {"mean_row_norm": 7.25})
    with pytest.raises(InputError, match="head_scale_match"):
        loaded_head_scale(entry, bare)


def _with_control(match: str, **spec) -> dict:
    config = tiny_default()
    base = next(iter(config["backbones"]))
    config["backbones"]["control"] = {**copy.deepcopy(config["backbones"][base]), "label": "the control",
                                      "head_scale": {"match": match, "statistic": "mean_row_norm", **spec}}
    return config


@pytest.mark.parametrize("match, spec, says", [
    ("nope", {}, "backbones.control.head_scale.match: 'nope' is not a backbone of this config"),
    ("control", {}, "backbones.control.head_scale.match: 'control' is this backbone"),
])
def test_a_match_that_names_no_other_backbone_is_one_line(match, spec, says):
    with pytest.raises(InputError) as err:
        check_config(_with_control(match, **spec), "my.yaml", files=False)
    assert str(err.value).startswith("my.yaml: ") and says in str(err.value) and "\n" not in str(err.value)


def test_a_chain_of_matches_and_the_frobenius_norm_are_refused():
    config = _with_control(next(iter(tiny_default()["backbones"])))
    config["backbones"]["second"] = {**copy.deepcopy(config["backbones"]["control"]), "label": "a second control",
                                     "head_scale": {"match": "control", "statistic": "mean_row_norm"}}
    with pytest.raises(InputError, match="backbones.second.head_scale.match: 'control' has a matched head_scale"):
        check_config(config, "my.yaml", files=False)
    frobenius = _with_control(next(iter(tiny_default()["backbones"])))
    frobenius["backbones"]["control"]["head_scale"]["statistic"] = "frobenius_norm"
    with pytest.raises(InputError, match="backbones.control.head_scale"):
        check_config(frobenius, "my.yaml", files=False)


def _layout(config: dict):
    from lsrbench.dag.layout import Layout
    from lsrbench.stages import all_stages

    return Layout(check_config(config, "my.yaml", files=False), "results", stages=all_stages(), config_file="my.yaml")


def _ids(layout) -> dict:
    return {(stage.name, json.dumps(key, sort_keys=True)): layout.get(stage.kind, **key).id
            for stage in layout.stages.values() for key in stage.grid(layout.config)}


def test_the_control_reads_the_matched_norms_and_leaves_every_other_id_as_it_was():
    """The matched backbone's norms.json is an input of the control's norm and train jobs, its id in
    theirs; the ids of every backbone without a matched scale do not change when a control is added."""
    from lsrbench.stages import stage

    plain = tiny_default()
    base = next(iter(plain["backbones"]))
    with_control = _with_control(base)
    before, after = _ids(_layout(plain)), _ids(_layout(with_control))
    assert {key: after[key] for key in before if key[0] != "config_snapshot"} == {
        key: value for key, value in before.items() if key[0] != "config_snapshot"}
    layout = _layout(with_control)
    matched, norm = layout.get("norms", backbone=base), layout.get("norms", backbone="control")
    assert norm.identity["head_scale_match"] == matched.id
    assert stage("norm").inputs(layout, norm)["match_norms_json"] == matched.path("norms.json")
    train = layout.get("train", run="control", k="1")
    assert stage("train").inputs(layout, train)["match_norms_json"] == matched.path("norms.json")
    assert train.identity["head_scale_match"] == matched.id
    # another checkpoint for the matched backbone: another norm folder for the control
    other = copy.deepcopy(with_control)
    other["backbones"][base]["revision"] = "0" * 40
    assert _layout(other).get("norms", backbone="control").id != norm.id


def test_a_matched_control_is_no_twin_of_its_checkpoint_in_the_reports():
    """The claims see the control as another checkpoint than the backbone it is loaded from (its
    factor is measured, not a config number: no k of it is known to give back the original), and
    Table 1's twin note leaves it out."""
    import pandas as pd

    from lsrbench.report.claims.evidence import Evidence, checkpoint_key, effective_k
    from lsrbench.report.tables.table1 import twin_notes

    backbones = with_defaults("backbones", {"bert": {"model": "bert-base-uncased"},
                                            "control": {"model": "bert-base-uncased", "head_scale": SPEC, "synthetic": True},
                                            "x10": {"model": "bert-base-uncased", "head_scale": 10, "synthetic": True}})
    assert checkpoint_key(backbones, "control") != checkpoint_key(backbones, "bert") == checkpoint_key(backbones, "x10")
    ev = Evidence(metrics=pd.DataFrame(), backbones=backbones)
    assert effective_k(ev, "control", "1") == (checkpoint_key(backbones, "control"), "shared", 1.0)
    assert effective_k(ev, "x10", "10") == effective_k(ev, "bert", "1")
    notes = twin_notes(backbones, {"control": {"1"}, "x10": {"10"}}, {})
    assert len(notes) == 1 and "x10" in notes[0]
