"""Strict YAML: the one reader of every config file, bounded for hostile files, with one-line errors naming the
line."""

from __future__ import annotations

from pathlib import Path

import yaml

from lsrbench.errors import InputError

__all__ = ["load_yaml", "MAX_YAML_BYTES", "MAX_YAML_DEPTH", "MAX_YAML_VALUES"]


# Bounds so a hostile file is checked in bounded time and memory: PyYAML expands aliases without limit ("billion
# laughs") and recurses per nesting level.
MAX_YAML_BYTES = 2**20
MAX_YAML_DEPTH = 64
MAX_YAML_VALUES = 50_000  # scalars, sequences and mappings, aliases expanded


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader refusing duplicate keys, nesting deeper than :data:`MAX_YAML_DEPTH` and more than
    :data:`MAX_YAML_VALUES` values after alias expansion."""

    _depth = 0
    _values = 0

    def compose_node(self, parent, index):
        if self._depth >= MAX_YAML_DEPTH:
            raise yaml.composer.ComposerError(None, None, f"nested more than {MAX_YAML_DEPTH} levels deep",
                                              self.peek_event().start_mark)
        self._values += 1
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


MERGE_TAG = "tag:yaml.org,2002:merge"


def _construct_mapping(loader, node, deep=False):
    seen = {}
    for key_node, _ in node.value:
        if key_node.tag == MERGE_TAG:
            continue
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key '{key}' (first at line {seen[key] + 1})", key_node.start_mark
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep)


def _construct_int(loader, node):
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
    """Load a YAML mapping; bad bytes, syntax, duplicate keys and oversized files become one-line InputErrors
    naming the line."""
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
    if data is None:  # nothing but blank lines and comments: never what a run meant to give
        raise InputError(path, None, "empty: no settings in it (only blank lines or comments)")
    if not isinstance(data, dict):
        raise InputError(path, None, "expected a YAML mapping at the top level")
    return data


def _yaml_problem(exc: yaml.YAMLError) -> tuple[str, str]:
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}" if mark is not None else "yaml"
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context, cmark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context and cmark is not None and (mark is None or cmark.line != mark.line):
        problem += f" ({context} at line {cmark.line + 1})"
    return where, f"YAML error: {problem}"
