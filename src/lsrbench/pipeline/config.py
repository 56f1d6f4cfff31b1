"""Run configuration: strict YAML loading (bounded for hostile files), validation against the JSON
schemas of ``pipeline/schemas/`` (the only source of defaults; ``workflow/schemas`` points there)
with one-line errors, and the run grid. Everything else checked before a run (cross-references,
derived names, the files a config names) is :mod:`lsrbench.pipeline.validate`."""

from __future__ import annotations

import copy
from importlib import resources
from pathlib import Path

import jsonschema
import yaml

from lsrbench.errors import InputError
from lsrbench.names import DEFAULT_MODE, format_k, run_name

# Package data (a non-editable install has it too); the workflow's schemas/ folder links here.
SCHEMA_DIR = resources.files("lsrbench.pipeline") / "schemas"


# Bounds on a YAML file's size and shape, so that checking a hostile file takes bounded time and
# memory: PyYAML follows aliases without limit (a "billion laughs" file is a few hundred bytes whose
# expansion has 10^9 values, and everything that walks the result walks all of them), and its
# composer recurses once per nesting level (a deep enough file overflows the Python stack).
# A real config has a few hundred values in a few kB (config/paper.yaml: 8 kB).
MAX_YAML_BYTES = 2**20
MAX_YAML_DEPTH = 64
MAX_YAML_VALUES = 50_000  # scalars, sequences and mappings, aliases expanded


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys (PyYAML silently keeps the last one), more
    than :data:`MAX_YAML_DEPTH` nesting levels and more than :data:`MAX_YAML_VALUES` values once
    aliases are expanded."""

    _depth = 0
    _values = 0

    def compose_node(self, parent, index):
        if self._depth >= MAX_YAML_DEPTH:
            raise yaml.composer.ComposerError(None, None, f"nested more than {MAX_YAML_DEPTH} levels deep",
                                              self.peek_event().start_mark)
        self._values += 1  # counted as composed (the scanner is the slow part), aliases after
        if self._values > MAX_YAML_VALUES:
            raise yaml.composer.ComposerError(None, None, f"more than {MAX_YAML_VALUES} values", self.peek_event().start_mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def get_single_node(self):
        node = super().get_single_node()
        if node is not None:
            _expanded_size(node, {})
        return node


def _expanded_size(node, sizes: dict) -> int:
    """How many values ``node`` stands for once every alias is expanded (an alias is the node it
    names, composed once and shared: memoised, so this takes time linear in the file)."""
    if id(node) in sizes:
        return sizes[id(node)]
    size = 1
    if isinstance(node, yaml.SequenceNode):
        size += sum(_expanded_size(child, sizes) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        size += sum(_expanded_size(k, sizes) + _expanded_size(v, sizes) for k, v in node.value)
    if size > MAX_YAML_VALUES:
        raise yaml.composer.ComposerError(None, None, f"more than {MAX_YAML_VALUES} values once aliases "
                                          "(*name) are expanded", node.start_mark)
    sizes[id(node)] = size
    return size


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


def _construct_int(loader, node):
    """PyYAML's int, with Python's refusal of a huge literal (more than 4300 digits) as a YAML error."""
    try:
        return yaml.constructor.SafeConstructor.construct_yaml_int(loader, node)
    except ValueError as exc:
        raise yaml.constructor.ConstructorError(None, None, f"integer not readable ({exc})", node.start_mark) from None


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_StrictLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def _decode(path: Path, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(path, f"line {line}", f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {column})") from None


def load_yaml(path: str | Path) -> dict:
    """Load a YAML mapping; a non-UTF-8 byte, syntax errors, duplicate keys and files too large,
    deep or alias-expanding (see :data:`MAX_YAML_VALUES`) become one-line InputErrors naming the
    line (``<file>: line 7: YAML error: ...``)."""
    path = Path(path)
    if path.is_dir():
        raise InputError(path, None, "a folder, not a YAML file")
    if not path.is_file():
        raise InputError(path, None, "file not found")
    if path.stat().st_size > MAX_YAML_BYTES:
        raise InputError(path, None, f"{path.stat().st_size} bytes, more than a config file may have ({MAX_YAML_BYTES})")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(path, None, f"cannot read ({exc.strerror})") from None
    text = _decode(path, raw)
    try:
        data = yaml.load(text, Loader=_StrictLoader)
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (e.g. a NUL byte)
        line = text.count("\n", 0, exc.position) + 1
        raise InputError(path, f"line {line}", f"YAML error: unacceptable character #x{exc.character:04x}") from None
    except yaml.YAMLError as exc:
        raise InputError(path, *_yaml_problem(exc)) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(path, None, "expected a YAML mapping at the top level")
    return data


def _yaml_problem(exc: yaml.YAMLError) -> tuple[str, str]:
    """(where, message) of a PyYAML error: the line it names, and where the construct began."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}" if mark is not None else "yaml"
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context, cmark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context and cmark is not None and (mark is None or cmark.line != mark.line):
        problem += f" ({context} at line {cmark.line + 1})"
    return where, f"YAML error: {problem}"


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
        while err.context:  # anyOf / oneOf: what is wrong in the alternative that got furthest
            err = max(err.context, key=lambda e: len(e.relative_path))
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


# ---------------------------------------------------------------------------- layered config files
# A config file may start with ``base: <file>`` (relative to its own folder): the base is loaded
# first (it may have a base of its own), then this file's values are merged on top of it. Merge
# rule: mappings are merged key by key; a list or a scalar replaces the base's value; ``null``
# over a mapping removes it (``splade-tiny-x10: null`` drops that backbone), over anything else it
# is the value null (``mirror: null``).
BASE_KEY = "base"
COMMAND_LINE = "command line (--config)"


class ConfigOrigins(dict):
    """Where each value of a merged config was set: ``{field: file}`` (fields spelled as in error
    messages, ``recipe.steps``, ``evaluation.datasets[0]``), for errors that name the right file."""

    def __init__(self, default: str):
        super().__init__()
        self.default = default

    def file_for(self, field: str | None) -> str:
        """The file that set ``field`` or the nearest mapping above it."""
        best = None
        for key in self:
            if field and (field == key or field.startswith((key + ".", key + "["))):
                best = key if best is None or len(key) > len(best) else best
        return self[best] if best is not None else self.default


def _join(prefix: str, key) -> str:
    return f"{prefix}[{key}]" if isinstance(key, int) else f"{prefix}.{key}" if prefix else str(key)


def merge_config(base: dict, layer: dict, origin: str, origins: ConfigOrigins, prefix: str = "") -> dict:
    """Merge ``layer`` into ``base`` in place (the rule above) and record ``origin`` for what it set."""
    for key, value in layer.items():
        field = _join(prefix, key)
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge_config(base[key], value, origin, origins, field)
            continue
        for known in [k for k in origins if k.startswith((field + ".", field + "["))]:
            del origins[known]  # replaced as a whole: nothing below it comes from the base any more
        if value is None and isinstance(base.get(key), dict):
            del base[key]
        else:
            base[key] = copy.deepcopy(value)
        origins[field] = origin
    return base


def _load_layers(path: Path, seen: tuple[Path, ...]) -> list[tuple[str, dict]]:
    data = load_yaml(path)
    base = data.pop(BASE_KEY, None)
    if base is None:
        return [(str(path), data)]
    if not isinstance(base, str) or not base:
        raise InputError(path, BASE_KEY, "expected the path of a base config file (relative to this file's folder)")
    base_path = Path(base) if Path(base).is_absolute() else path.parent / base
    if not base_path.is_file():
        raise InputError(path, BASE_KEY, f"base config '{base}' not found (looked for {base_path})")
    if base_path.resolve() in seen:
        raise InputError(path, BASE_KEY, f"base config '{base}' leads back to this file (a cycle)")
    return _load_layers(base_path, (*seen, base_path.resolve())) + [(str(path), data)]


def load_config_files(paths, command_line: dict | None = None) -> tuple[dict, ConfigOrigins, list[str]]:
    """The run config of one or more config files (each with its ``base:`` chain), merged in order,
    then ``command_line`` (Snakemake's ``--config`` values) on top: ``(config, origins, files read)``.
    Every file is parsed strictly (:func:`load_yaml`)."""
    paths = [Path(p) for p in paths]
    config: dict = {}
    origins = ConfigOrigins(str(paths[-1]))
    files = []
    for path in paths:
        for file, layer in _load_layers(path, (path.resolve(),)):
            merge_config(config, layer, file, origins)
            files.append(file)
    if command_line:
        merge_config(config, dict(command_line), COMMAND_LINE, origins)
    return config, origins, files


def backbone_modes(config: dict, name: str) -> dict[str, list[str]]:
    """Mode -> list of k (canonical text, ``auto`` allowed) swept for one backbone; an
    ``evaluate_only`` backbone (a released checkpoint) has one run: shared, k = 1."""
    entry = config["backbones"][name]
    if entry.get("evaluate_only"):
        return {DEFAULT_MODE: [format_k(1)]}
    ks = entry.get("k", config["k_grid"])
    modes = entry.get("modes", config["modes"])
    if isinstance(modes, dict):
        return {m: [format_k(k) for k in mk] for m, mk in modes.items()}
    return {m: [format_k(k) for k in ks] for m in modes}


def grid_lines(config: dict) -> list[str]:
    """The run grid, one line per (backbone, mode): what ``lsrbench check-config`` prints and the
    report's landing page shows (``splade-tiny      shared  k = 1, 4, 16``)."""
    rows = [(name, mode, ", ".join(ks)) for name in config["backbones"] for mode, ks in backbone_modes(config, name).items()]
    width = max((len(name) for name, _, _ in rows), default=0)
    return [f"{name:<{width}}  {mode:<6}  k = {ks}" for name, mode, ks in rows]


def runs(config: dict) -> list[tuple[str, str]]:
    """Every (run name, k) of the grid, in config order (see :func:`lsrbench.names.run_name`)."""
    return [(run_name(b, m), k) for b in config["backbones"] for m, ks in backbone_modes(config, b).items() for k in ks]
