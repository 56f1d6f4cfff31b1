"""The JSON schemas of ``config/schemas/``: validation with one-line errors, the only source of defaults, and a
config's canonical form (mappings in the schema's order, so key order never makes two configs)."""

from __future__ import annotations

import copy
import functools
from importlib import resources

import jsonschema
import yaml

from lsrbench.errors import InputError

__all__ = ["SCHEMA_DIR", "load_schema", "property_defaults", "validate", "with_defaults", "canonical_order",
           "integral_floats_to_ints"]

# Package data (a non-editable install has it too); the workflow's schemas/ folder links here.
SCHEMA_DIR = resources.files("lsrbench.config") / "schemas"
# A mapping whose key order means something (backbones: the tables' row order) says so in the schema.
KEEP_ORDER = "x-keep-order"


def load_schema(name: str) -> dict:
    """A schema of ``schemas/`` (a copy: callers may not change the one every caller reads)."""
    return copy.deepcopy(_read_schema(name))


@functools.lru_cache(maxsize=None)
def _read_schema(name: str) -> dict:
    return yaml.safe_load((SCHEMA_DIR / name).read_text(encoding="utf-8"))


def property_defaults(schema_name: str, *path: str) -> dict:
    """The defaults a schema gives the properties of the object at ``path`` (``additionalProperties``
    where a path step is ``*``)."""
    node = _read_schema(schema_name)
    for step in path:
        node = node["additionalProperties"] if step == "*" else node["properties"][step]
    return {k: copy.deepcopy(v["default"]) for k, v in node.get("properties", {}).items() if "default" in v}


def _field(error: jsonschema.ValidationError) -> str:
    parts = []
    for p in error.absolute_path:
        parts.append(f"[{p}]" if isinstance(p, int) else ("." if parts else "") + str(p))
    return "".join(parts) or "(top level)"


def _set_defaults(validator_cls):
    validate_props = validator_cls.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for prop, sub in properties.items():
                if isinstance(sub, dict) and "default" in sub and prop not in instance:
                    instance[prop] = copy.deepcopy(sub["default"])
        yield from validate_props(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_cls, {"properties": set_defaults})


_Validator = _set_defaults(jsonschema.Draft7Validator)


def _first_error(errors) -> jsonschema.ValidationError | None:
    errors = sorted(errors, key=lambda e: (len(list(e.absolute_path)), str(e.path)))
    if not errors:
        return None
    err = errors[0]
    while err.context:  # anyOf / oneOf: what is wrong in the alternative that got furthest
        err = max(err.context, key=lambda e: len(e.relative_path))
    return err


def _is_integer_schema(schema: dict, root: dict) -> bool:
    schema = _resolve(schema, root)
    types = schema.get("type")
    types = [types] if isinstance(types, str) else list(types or [])
    if "integer" in types and "number" not in types:
        return True
    return any(_is_integer_schema(alt, root) for alt in schema.get("anyOf", []) + schema.get("oneOf", []))


def integral_floats_to_ints(value, schema: dict, root: dict | None = None):
    """``value`` with every integral float made an integer where the schema asks for one (YAML's ``5.0`` and
    ``5`` must be one value)."""
    root = root if root is not None else schema
    schema = _resolve(schema, root)
    if isinstance(value, float) and value.is_integer() and _is_integer_schema(schema, root):
        return int(value)
    if isinstance(value, list):
        items = schema.get("items", {})
        for alt in schema.get("anyOf", []) + schema.get("oneOf", []):
            items = _resolve(alt, root).get("items", items)
        return [integral_floats_to_ints(v, items, root) for v in value]
    if isinstance(value, dict):
        props, extra = dict(schema.get("properties", {})), schema.get("additionalProperties")
        for alt in schema.get("anyOf", []) + schema.get("oneOf", []) + schema.get("allOf", []):
            props.update(_resolve(alt, root).get("properties", {}))
        extra = extra if isinstance(extra, dict) else {}
        return {k: integral_floats_to_ints(v, props.get(k, extra), root) for k, v in value.items()}
    return value


def validate(data: dict, schema_name: str, file) -> dict:
    """Validate ``data`` against a schema of ``schemas/`` (filling defaults, integral floats of
    integer fields made integers) or raise InputError."""
    normalised = integral_floats_to_ints(data, _read_schema(schema_name))
    data.clear()
    data.update(normalised)
    err = _first_error(_Validator(_read_schema(schema_name)).iter_errors(data))
    if err is not None:
        # a schema's own line for a rule jsonschema words poorly, by keyword ({value!r}: the value refused)
        custom = (err.schema.get("x-message") or {}).get(err.validator) if isinstance(err.schema, dict) else None
        msg = custom.format(value=err.instance) if custom else err.message
        if err.validator == "additionalProperties":
            msg = msg.replace("Additional properties are not allowed", "unknown key")
        raise InputError(file, _field(err), msg)
    return data


def with_defaults(section: str, values: dict) -> dict:
    """One section of the run config with the schema's defaults filled in and checked, for callers without a
    whole config."""
    schema = load_schema("config.schema.yaml")
    sub = {**schema["properties"][section], "definitions": schema.get("definitions", {})}
    values = integral_floats_to_ints(copy.deepcopy(values), sub)
    err = _first_error(_Validator(sub).iter_errors(values))
    if err is not None:
        raise InputError(None, f"{section}.{_field(err)}", err.message)
    return values


def _resolve(schema: dict, root: dict) -> dict:
    while isinstance(schema, dict) and "$ref" in schema:
        schema = root["definitions"][schema["$ref"].rsplit("/", 1)[1]]
    return schema if isinstance(schema, dict) else {}


def canonical_order(value, schema: dict, root: dict | None = None):
    """``value`` with every mapping's keys in its schema's order (undeclared keys after, sorted;
    ``x-keep-order`` kept); lists keep their order."""
    root = root if root is not None else schema
    schema = _resolve(schema, root)
    for alternative in schema.get("anyOf", []) + schema.get("oneOf", []):
        alt = _resolve(alternative, root)
        if isinstance(value, dict) and ("properties" in alt or "additionalProperties" in alt):
            schema = alt
        elif isinstance(value, list) and "items" in alt:
            schema = alt
    if isinstance(value, list):
        return [canonical_order(v, schema.get("items", {}), root) for v in value]
    if not isinstance(value, dict):
        return value
    props = schema.get("properties", {})
    extra = schema.get("additionalProperties")
    extra = extra if isinstance(extra, dict) else {}
    rest = [k for k in value if k not in props]
    if not schema.get(KEEP_ORDER):
        rest = sorted(rest, key=str)
    keys = [k for k in props if k in value] + rest
    return {k: canonical_order(value[k], props.get(k, extra), root) for k in keys}
