"""Numbers as the loader reads them (issue 22, family 1), for every field of the config schema,
generated from the schema and not hand-listed: an integral float where an integer is asked for
(``steps: 5.0``) is that integer (the same outputs, the same folder ids), never a traceback and
never ignored; NaN and infinity are refused with one line wherever a number goes."""

from __future__ import annotations

import copy
import math

import pytest
import yaml

from helpers.paths import REPO
from lsrbench.config.layers import locate_config_paths
from lsrbench.config.schema import load_schema
from lsrbench.dag.fingerprint import FileDigests
from lsrbench.dag.layout import Layout
from lsrbench.stages import all_stages
from lsrbench.validation.config import check_config
from lsrbench.errors import InputError

SCHEMA = load_schema("config.schema.yaml")
DEFAULT = yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def _resolve(node: dict) -> dict:
    while "$ref" in node:
        node = SCHEMA["definitions"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _types(node: dict) -> set[str]:
    node = _resolve(node)
    own = node.get("type")
    types = {own} if isinstance(own, str) else set(own or [])
    for alt in node.get("anyOf", []) + node.get("oneOf", []):
        types |= _types(alt)
    return types


def _fields(node: dict, path: tuple = ()) -> list[tuple[tuple, set[str]]]:
    """(path, types) of every scalar field of the schema; ``[]`` steps into a list's items."""
    node = _resolve(node)
    out = []
    for name, sub in node.get("properties", {}).items():
        sub = _resolve(sub)
        if "properties" in sub:
            out += _fields(sub, path + (name,))
        elif sub.get("type") == "array" and isinstance(sub.get("items"), dict) and "properties" in _resolve(sub["items"]):
            out += _fields(sub["items"], path + (name, "[]"))
        elif _types(sub) & {"integer", "number"}:
            out.append((path + (name,), _types(sub)))
    return out


FIELDS = _fields(SCHEMA)
INTEGER_FIELDS = [p for p, t in FIELDS if "integer" in t and "number" not in t]
NUMBER_FIELDS = [p for p, _ in FIELDS]


def _get(config: dict, path: tuple):
    node = config
    for step in path:
        if step == "[]":
            node = node[0]
        elif isinstance(node, dict) and step in node:
            node = node[step]
        else:
            return None
    return node


def _set(config: dict, path: tuple, value) -> bool:
    """Set ``path`` (creating missing mappings on the way); False where the config has no such place
    (a list it does not have)."""
    node = config
    for step in path[:-1]:
        if step == "[]":
            if not isinstance(node, list) or not node:
                return False
            node = node[0]
        else:
            node = node.setdefault(step, {}) if isinstance(node, dict) else None
            if node is None:
                return False
    node[path[-1]] = value
    return True


def _valid_integer(path: tuple) -> int:
    """A valid value of an integer field: the default config's, else the schema's default, else its minimum."""
    value = _get(DEFAULT, path)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    node = SCHEMA
    for step in path:
        node = _resolve(node)
        node = node["items"] if step == "[]" else node.get("properties", {}).get(step, {})
    node = _resolve(node)
    for alt in [node] + [_resolve(a) for a in node.get("anyOf", []) + node.get("oneOf", [])]:
        if isinstance(alt.get("default"), int):
            return alt["default"]
        if "minimum" in alt:
            return max(int(alt["minimum"]), 1)
    return 1


def _ids(config: dict) -> list[str]:
    checked = check_config(locate_config_paths(copy.deepcopy(config), REPO), "c.yaml", files=False,
                           mirror_must_exist=False)
    return sorted(item.folder for item in Layout(checked, digests=FileDigests(None), stages=all_stages()).all())


def test_the_schema_has_integer_fields_everywhere_a_count_goes():
    assert {("recipe", "steps"), ("evaluation", "top_k"), ("evaluation", "pool_depth"), ("training_data", "seed"),
            ("claims", "resamples"), ("claims", "list", "[]", "window")} <= set(INTEGER_FIELDS)


@pytest.mark.parametrize("path", INTEGER_FIELDS, ids=[".".join(p) for p in INTEGER_FIELDS])
def test_an_integral_float_is_the_integer(path):
    # the field's own value first, then counts a batch-sized field accepts (probe.triplets: at least a batch)
    for value in dict.fromkeys([_valid_integer(path), 16, 32, 64]):
        as_int, as_float = copy.deepcopy(DEFAULT), copy.deepcopy(DEFAULT)
        if not (_set(as_int, path, value) and _set(as_float, path, float(value))):
            pytest.skip(f"the default config has no {'.'.join(path)} to set")
        try:
            expected = _ids(as_int)
        except InputError:
            continue
        assert _ids(as_float) == expected
        return
    pytest.fail(f"no value tried is valid for {'.'.join(path)} in the default config")


@pytest.mark.parametrize("path", NUMBER_FIELDS, ids=[".".join(p) for p in NUMBER_FIELDS])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
def test_nan_and_infinity_are_refused_in_one_line(path, bad):
    config = copy.deepcopy(DEFAULT)
    if not _set(config, path, bad):
        pytest.skip(f"the default config has no {'.'.join(path)}")
    with pytest.raises(InputError) as err:
        _ids(config)
    field = ".".join(path).replace(".[]", "[0]")
    assert str(err.value).startswith(f"c.yaml: {field}: must be a finite number, got "), str(err.value)
    assert "\n" not in str(err.value)


def test_a_non_integral_float_for_an_integer_is_refused():
    config = copy.deepcopy(DEFAULT)
    config["recipe"]["batch_size"] = 4.5
    with pytest.raises(InputError, match=r"c.yaml: recipe.batch_size: 4.5 is not of type 'integer'"):
        _ids(config)
