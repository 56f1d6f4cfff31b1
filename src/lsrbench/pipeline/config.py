"""Run configuration: strict YAML loading, validation against the JSON schemas of
``pipeline/schemas/`` (the only source of defaults; ``workflow/schemas`` points there) with
one-line errors, cross-references between sections, and the run grid."""

from __future__ import annotations

import copy
from importlib import resources
from pathlib import Path

import jsonschema
import yaml

from lsrbench.errors import InputError
from lsrbench.names import AUTO_K, DEFAULT_MODE, POOLED, format_k, run_name

# Package data (a non-editable install has it too); the workflow's schemas/ folder links here.
SCHEMA_DIR = resources.files("lsrbench.pipeline") / "schemas"


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys (PyYAML silently keeps the last one)."""


def _construct_mapping(loader, node, deep=False):
    seen = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key '{key}' (first at line {seen[key] + 1})", key_node.start_mark
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml(path: str | Path) -> dict:
    """Load a YAML mapping; a non-UTF-8 byte, syntax errors and duplicate keys become one-line
    InputErrors naming the line (``<file>: line 7: YAML error: ...``)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, None, "file not found")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(path, f"line {line}", f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {column})") from None
    try:
        data = yaml.load(text, Loader=_StrictLoader)
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (e.g. a NUL byte)
        line = text.count("\n", 0, exc.position) + 1
        raise InputError(path, f"line {line}", f"YAML error: unacceptable character #x{exc.character:04x}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "yaml"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context, cmark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
        if context and cmark is not None and (mark is None or cmark.line != mark.line):
            problem += f" ({context} at line {cmark.line + 1})"
        raise InputError(path, where, f"YAML error: {problem}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(path, None, "expected a YAML mapping at the top level")
    return data


def _field(error: jsonschema.ValidationError) -> str:
    parts = []
    for p in error.absolute_path:
        parts.append(f"[{p}]" if isinstance(p, int) else ("." if parts else "") + str(p))
    return "".join(parts) or "(top level)"


def _schema(name: str) -> dict:
    return yaml.safe_load((SCHEMA_DIR / name).read_text(encoding="utf-8"))


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


def validate(data: dict, schema_name: str, file: str | Path) -> dict:
    """Validate ``data`` against a schema of workflow/schemas (filling defaults) or raise InputError."""
    schema = _schema(schema_name)
    errors = sorted(_Validator(schema).iter_errors(data), key=lambda e: (len(list(e.absolute_path)), str(e.path)))
    if errors:
        err = errors[0]
        msg = err.message
        if err.validator == "additionalProperties":
            msg = msg.replace("Additional properties are not allowed", "unknown key")
        raise InputError(file, _field(err), msg)
    return data


def with_defaults(section: str, values: dict) -> dict:
    """``values`` of one section of the run config (``recipe``, ``evaluation``, ``report``, ...)
    with the schema's defaults filled in and checked: for callers of the stage functions that do
    not go through a whole config (tests, notebooks)."""
    schema = _schema("config.schema.yaml")
    sub = {**schema["properties"][section], "definitions": schema.get("definitions", {})}
    values = copy.deepcopy(values)
    errors = sorted(_Validator(sub).iter_errors(values), key=lambda e: str(e.path))
    if errors:
        raise InputError(None, f"{section}.{_field(errors[0])}", errors[0].message)
    return values


def load_datasets_file(path: str | Path) -> dict:
    data = load_yaml(path)
    return validate(data, "datasets.schema.yaml", path)


def locate_config_paths(config: dict, basedir: str | Path) -> dict:
    """Relative ``datasets_file`` and ``report.reference`` are read from the working directory, or,
    when they are not there, from the workflow's folder (``snakemake -d elsewhere`` with the
    repository's own config/ files)."""

    def locate(value):
        if not isinstance(value, str) or Path(value).is_absolute() or Path(value).exists():
            return value
        beside = Path(basedir) / value
        return str(beside) if beside.exists() else value

    if "datasets_file" in config:
        config["datasets_file"] = locate(config["datasets_file"])
    report = config.get("report")
    if isinstance(report, dict) and report.get("reference"):
        report["reference"] = locate(report["reference"])
    return config


def check_config(config: dict, config_file: str | Path) -> dict:
    """Validate a (merged) run config and its cross-references; returns it with defaults filled."""
    config = validate(config, "config.schema.yaml", config_file)
    datasets_file = config["datasets_file"]
    datasets = load_datasets_file(datasets_file)

    for i, name in enumerate(config["evaluation"]["datasets"]):
        if name == POOLED:
            raise InputError(config_file, f"evaluation.datasets[{i}]", f"'{POOLED}' is reserved for FLOPs pooled over report.flops_datasets")
        if name not in datasets:
            raise InputError(config_file, f"evaluation.datasets[{i}]", f"dataset '{name}' is not defined in {datasets_file}")
    td = config["training_data"]
    from lsrbench.data.triplets import check_training_data

    check_training_data(td, config_file)
    if td["source"] == "pseudo_queries":
        if "dataset" not in td:
            raise InputError(config_file, "training_data.dataset", "pseudo_queries needs a dataset to crop queries from")
        if td["dataset"] not in datasets:
            raise InputError(config_file, "training_data.dataset", f"dataset '{td['dataset']}' is not defined in {datasets_file}")
    evaluated = set(config["evaluation"]["datasets"])
    for i, col in enumerate(config["report"]["columns"]):
        for j, name in enumerate(col["datasets"]):
            if name not in evaluated:
                raise InputError(config_file, f"report.columns[{i}].datasets[{j}]", f"dataset '{name}' is not evaluated (evaluation.datasets)")
    for i, name in enumerate(config["report"]["flops_datasets"]):
        if name not in evaluated:
            raise InputError(config_file, f"report.flops_datasets[{i}]", f"dataset '{name}' is not evaluated (evaluation.datasets)")
    for i, name in enumerate((config.get("claims") or {}).get("datasets", [])):
        if name not in evaluated:
            raise InputError(config_file, f"claims.datasets[{i}]", f"dataset '{name}' is not evaluated (evaluation.datasets)")
    mirror = config.get("mirror")
    used = set(evaluated) | ({td["dataset"]} if "dataset" in td else set())
    for name in sorted(used):
        entry = datasets[name]
        mirrored = mirror and (Path(mirror) / "data" / name).is_dir()
        if entry["source"] == "beir" and "path" in entry and not mirrored and not Path(entry["path"]).is_dir():
            raise InputError(datasets_file, f"{name}.path", f"dataset folder '{entry['path']}' does not exist")
    uses_auto = [n for n in config["backbones"] if any(AUTO_K in ks for ks in backbone_modes(config, n).values())]
    if uses_auto:
        ref_name = (config.get("auto_k") or {}).get("reference")
        if ref_name is None:
            raise InputError(config_file, f"backbones.{uses_auto[0]}.k", "k: auto needs auto_k.reference (the backbone whose head norm is k = 1)")
        if ref_name not in config["backbones"]:
            raise InputError(config_file, "auto_k.reference", f"backbone '{ref_name}' is not defined under backbones")
    for name, entry in config["backbones"].items():
        if entry["evaluate_only"]:
            check_evaluate_only(name, entry, config_file)
        ref = entry["model"]
        if ref.startswith(("/", "./", "../", "~")) and not Path(ref).expanduser().is_dir():
            raise InputError(config_file, f"backbones.{name}.model", f"model folder '{ref}' does not exist")
    config["_datasets"] = datasets
    return config


def check_config_file(path: str | Path) -> None:
    """Strict parse of the config file itself (syntax, duplicate backbone names): Snakemake's own
    YAML loading would silently keep the last of two entries with the same name."""
    load_yaml(path)


def check_evaluate_only(name: str, entry: dict, config_file) -> None:
    """A released sparse encoder (``evaluate_only: true``) is evaluated as it is: k = 1 (its head
    is not rescaled), the shared mode, no head scaling; a k grid does not apply to it."""
    field = f"backbones.{name}"
    if "k" in entry and [format_k(k) for k in entry["k"]] != ["1"]:
        raise InputError(config_file, f"{field}.k", "an evaluate_only backbone is evaluated as released, at k = 1: "
                                                    "remove k (or write [1])")
    modes = entry.get("modes")
    one_run = (modes is None or modes == [DEFAULT_MODE]
               or (isinstance(modes, dict) and list(modes) == [DEFAULT_MODE]
                   and [format_k(k) for k in modes[DEFAULT_MODE]] == ["1"]))
    if not one_run:
        raise InputError(config_file, f"{field}.modes", "an evaluate_only backbone has one run, shared mode at k = 1: "
                                                        "remove modes")
    if entry.get("head_scale", 1) != 1:
        raise InputError(config_file, f"{field}.head_scale", "an evaluate_only backbone is evaluated as released: "
                                                             "head_scale must be 1")


def evaluate_only(config: dict, name: str) -> bool:
    """Whether backbone ``name`` is a released sparse encoder, evaluated without training."""
    return bool(config["backbones"][name].get("evaluate_only"))


def backbone_modes(config: dict, name: str) -> dict[str, list[str]]:
    """Mode -> list of k (canonical text, ``auto`` allowed) swept for one backbone; an
    evaluate-only backbone has one: shared, k = 1."""
    entry = config["backbones"][name]
    if entry.get("evaluate_only"):
        return {DEFAULT_MODE: [format_k(1)]}
    ks = entry.get("k", config["k_grid"])
    modes = entry.get("modes", config["modes"])
    if isinstance(modes, dict):
        return {m: [format_k(k) for k in mk] for m, mk in modes.items()}
    return {m: [format_k(k) for k in ks] for m in modes}


def runs(config: dict) -> list[tuple[str, str]]:
    """Every (run name, k) of the grid, in config order (see :func:`lsrbench.names.run_name`)."""
    return [(run_name(b, m), k) for b in config["backbones"] for m, ks in backbone_modes(config, b).items() for k in ks]
