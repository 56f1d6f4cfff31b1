"""``k: auto``: the ratio of head norms, and norm files it cannot divide by as one-line errors."""

import json

import pytest

from lsrbench.errors import InputError
from lsrbench.model.auto_k import HEAD_STATISTICS, NORM_STATISTICS, REPORTED_HEAD_STATISTICS, auto_k_from_files, auto_k_ratio


def _norms(tmp_path, name: str, value) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"frobenius_norm": value, "mean_row_norm": 2.0}))
    return str(path)


def test_auto_k_is_the_ratio_of_head_norms(tmp_path):
    assert auto_k_from_files(_norms(tmp_path, "big", 30.0), _norms(tmp_path, "ref", 3.0),
                             {"statistic": "frobenius_norm"}) == 10.0
    assert auto_k_ratio({"mean_row_norm": 1.0}, {"mean_row_norm": 4.0}, "mean_row_norm") == 0.25


@pytest.mark.parametrize("value", [0.0, -1.0, None, "12"])
def test_a_reference_norm_it_cannot_divide_by_names_the_file_and_statistic(tmp_path, value):
    ref = _norms(tmp_path, "ref", value)
    with pytest.raises(InputError) as err:
        auto_k_from_files(_norms(tmp_path, "big", 30.0), ref, {"statistic": "frobenius_norm"})
    assert str(err.value).startswith(f"{ref}: frobenius_norm: {value!r}: k auto divides head norms")


def test_an_unreadable_norm_file_is_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff{")
    with pytest.raises(InputError) as err:
        auto_k_from_files(str(bad), _norms(tmp_path, "ref", 1.0), {"statistic": "frobenius_norm"})
    assert str(err.value).startswith(f"{bad}: not a head-norm record") and "\n" not in str(err.value)


def test_the_ratio_itself_refuses_a_zero_divisor():
    with pytest.raises(ValueError):
        auto_k_ratio({"frobenius_norm": 1.0}, {"frobenius_norm": 0.0}, "frobenius_norm")


def _probe(tmp_path, name: str, max_logit) -> str:
    """A probe file: the probe's results of one backbone (k = 4 first, then the k = 1 row)."""
    path = tmp_path / f"{name}.probe.json"
    rows = [{"backbone": name, "k": "4", "k_value": 4.0, "mode": "shared", "max_logit": 1.0},
            {"backbone": name, "k": "1", "k_value": 1.0, "mode": "untie", "max_logit": 99.0},
            {"backbone": name, "k": "1", "k_value": 1.0, "mode": "shared", "max_logit": max_logit}]
    path.write_text(json.dumps(rows))
    return str(path)


def test_a_logit_scale_statistic_is_read_from_the_probes_at_k1(tmp_path):
    """Issue 18 item 7: k auto by the initial logit scale (the probe at k = 1, shared mode), norms.json untouched."""
    k = auto_k_from_files(_norms(tmp_path, "big", 30.0), _norms(tmp_path, "ref", 3.0), {"statistic": "max_logit"},
                          _probe(tmp_path, "big", 80.0), _probe(tmp_path, "ref", 8.0))
    assert k == 10.0
    with pytest.raises(InputError, match="max_logit: a logit-scale statistic comes from the probe"):
        auto_k_from_files(_norms(tmp_path, "big", 30.0), _norms(tmp_path, "ref", 3.0), {"statistic": "max_logit"})
    with pytest.raises(InputError, match=r"probe\.json: max_logit: None: k auto divides"):
        auto_k_from_files(_norms(tmp_path, "big", 30.0), _norms(tmp_path, "ref", 3.0), {"statistic": "max_logit"},
                          _probe(tmp_path, "big", None), _probe(tmp_path, "ref", 8.0))


def test_head_statistics_join_norms_and_the_probe_at_k1():
    from lsrbench.model.auto_k import HEAD_STATISTICS, head_statistics, probe_at_k1

    probes = [{"backbone": "b", "k_value": 4.0, "mode": "shared", "max_logit": 1.0, "mean_activation": 0.1},
              {"backbone": "b", "k_value": 1.0, "mode": "shared", "max_logit": 7.0, "mean_activation": 0.5}]
    stats = head_statistics({"frobenius_norm": 3.0, "mean_row_norm": 1.0, "max_row_norm": 2.0}, probe_at_k1(probes, "b"))
    assert {s: stats[s] for s in HEAD_STATISTICS} == {"frobenius_norm": 3.0, "mean_row_norm": 1.0, "max_row_norm": 2.0,
                                                       "max_logit": 7.0, "mean_activation": 0.5}
    assert probe_at_k1(probes, "other") is None and head_statistics({"frobenius_norm": 3.0}) == {"frobenius_norm": 3.0}


def test_the_norms_are_what_the_norm_stage_writes_and_the_reports_show_head_statistics():
    """One definition of the head's norms: the keys head_norms writes (norms.json), among the head
    statistics, as are those the reports show (norms.png, norms.md)."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    from lsrbench.model.rescale import head_norms

    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                       intermediate_size=16, max_position_embeddings=16))
    norms = head_norms(model)
    rows = model.get_output_embeddings().weight.detach().double().norm(dim=1)
    assert tuple(norms)[:3] == NORM_STATISTICS
    assert [norms[s] for s in NORM_STATISTICS] == pytest.approx([float(rows.square().sum().sqrt()), float(rows.mean()),
                                                                 float(rows.max())])
    assert set(REPORTED_HEAD_STATISTICS) <= set(HEAD_STATISTICS)
