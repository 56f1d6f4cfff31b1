"""Run configuration: strict YAML loading, schema validation with one-line errors, the run grid."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import jsonschema
import yaml

from .errors import InputError

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = ROOT / "workflow" / "schemas"


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
    return yaml.safe_load((SCHEMA_DIR / name).read_text())


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


def format_k(k: float) -> str:
    """Canonical text of a rescale factor, as used in paths and tables: 1, 4, 16, 2.5."""
    k = float(k)
    return str(int(k)) if k.is_integer() else repr(k)


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
    from .dag import POOLED

    for i, name in enumerate(config["evaluation"]["datasets"]):
        if name == POOLED:
            raise InputError(config_file, f"evaluation.datasets[{i}]", f"'{POOLED}' is reserved for FLOPs pooled over report.flops_datasets")
        if name not in datasets:
            raise InputError(config_file, f"evaluation.datasets[{i}]", f"dataset '{name}' is not defined in {datasets_file}")
    td = config["training_data"]
    from .triplets import check_training_data

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
    for i, name in enumerate(config["report"].get("flops_datasets", [])):
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
    uses_auto = [n for n in config["backbones"] if any("auto" in ks for ks in backbone_modes(config, n).values())]
    if uses_auto:
        ref_name = (config.get("auto_k") or {}).get("reference")
        if ref_name is None:
            raise InputError(config_file, f"backbones.{uses_auto[0]}.k", "k: auto needs auto_k.reference (the backbone whose head norm is k = 1)")
        if ref_name not in config["backbones"]:
            raise InputError(config_file, "auto_k.reference", f"backbone '{ref_name}' is not defined under backbones")
    for name, entry in config["backbones"].items():
        ref = entry["model"]
        if ref.startswith(("/", "./", "../", "~")) and not Path(ref).expanduser().is_dir():
            raise InputError(config_file, f"backbones.{name}.model", f"model folder '{ref}' does not exist")
    config["_datasets"] = datasets
    return config


def check_config_file(path: str | Path) -> None:
    """Strict parse of the config file itself (syntax, duplicate backbone names): Snakemake's own
    YAML loading would silently keep the last of two entries with the same name."""
    load_yaml(path)


MODE_SEPARATOR = "+"


def format_k_or_auto(k) -> str:
    return "auto" if k == "auto" else format_k(k)


def run_name(backbone: str, mode: str) -> str:
    """The name a run variant carries in paths, metrics.csv and tables: the backbone itself for the
    paper's ``shared`` mode, ``<backbone>+<mode>`` otherwise (``+`` is not allowed in backbone names)."""
    return backbone if mode == "shared" else f"{backbone}{MODE_SEPARATOR}{mode}"


def split_run_name(name: str) -> tuple[str, str]:
    """Inverse of :func:`run_name`: ``(backbone, mode)``."""
    base, _, mode = name.partition(MODE_SEPARATOR)
    return base, mode or "shared"


def backbone_modes(config: dict, name: str) -> dict[str, list[str]]:
    """Mode -> list of k (canonical text, ``auto`` allowed) swept for one backbone."""
    entry = config["backbones"][name]
    ks = entry.get("k", config["k_grid"])
    modes = entry.get("modes", config.get("modes", ["shared"]))
    if isinstance(modes, dict):
        return {m: [format_k_or_auto(k) for k in mk] for m, mk in modes.items()}
    return {m: [format_k_or_auto(k) for k in ks] for m in modes}


def backbone_ks(config: dict, name: str) -> list[str]:
    return backbone_modes(config, name).get("shared", [])


def runs(config: dict) -> list[tuple[str, str]]:
    """Every (run name, k) of the grid, in config order (see :func:`run_name`)."""
    return [(run_name(b, m), k) for b in config["backbones"] for m, ks in backbone_modes(config, b).items() for k in ks]


def stable_hash(obj) -> str:
    """SHA-256 of a JSON-serialisable object, independent of key order."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def public(config: dict) -> dict:
    """The config without derived keys (those starting with '_')."""
    return {k: v for k, v in config.items() if not k.startswith("_")}
