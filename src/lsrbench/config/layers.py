"""A run config as files: ``base:`` chains merged in order with ``--config`` on top, where each value was set
(for errors naming the right file), and its relative paths located."""

from __future__ import annotations

import copy
from pathlib import Path

from lsrbench.config.strict_yaml import load_yaml
from lsrbench.errors import InputError

__all__ = ["BASE_KEY", "LIKE_KEY", "COMMAND_LINE", "ConfigOrigins", "merge_config", "load_config_files",
           "locate_config_paths", "resolve_like", "workflow_dir"]


def workflow_dir() -> Path:
    """The repository the package runs from (where the Snakefile finds relative config files), else the working
    directory."""
    repo = Path(__file__).resolve().parents[3]
    return repo if (repo / "Snakefile").is_file() else Path.cwd()


def locate_config_paths(config: dict, basedir: str | Path) -> dict:
    """Relative ``datasets_file`` and ``report.reference``: from the working directory, else the workflow's
    folder."""

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


# ``base: <file>`` is loaded first, this file merged on top: mappings key by key, lists and scalars
# replace, ``null`` over a mapping removes it.
BASE_KEY = "base"
COMMAND_LINE = "command line (--config)"
# ``like: <backbone>``: that backbone's entry but its label, with the given keys replacing whole values.
LIKE_KEY = "like"


class ConfigOrigins(dict):
    """Where each value of a merged config was set, ``{field: file}``, for errors that name the right file."""

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
            del origins[known]
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
    """The config of one or more files (with ``base:`` chains) merged in order, then ``command_line`` on top:
    ``(config, origins, files read)``."""
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
    return resolve_like(config, origins), origins, files


def resolve_like(config: dict, origins: ConfigOrigins) -> dict:
    """Each ``like: <backbone>`` entry made into that backbone's entry with its own keys on top (in place); an
    unknown name or a cycle is one line naming the file."""
    backbones = config.get("backbones")
    if not isinstance(backbones, dict):
        return config
    resolved: dict[str, object] = {}

    def entry_of(name: str, chain: tuple[str, ...]):
        entry = backbones[name]
        if name in resolved or not isinstance(entry, dict) or LIKE_KEY not in entry:
            return resolved.setdefault(name, entry)
        other, field = entry[LIKE_KEY], f"backbones.{name}.{LIKE_KEY}"
        if not isinstance(other, str) or other not in backbones:
            raise InputError(origins.file_for(field), field, f"{other!r} is not a backbone of this config "
                                                             f"(backbones: {', '.join(map(str, backbones))})")
        if other == name or other in chain:
            raise InputError(origins.file_for(field), field, f"'{other}' leads back to {name} (a cycle of like)")
        base = copy.deepcopy(entry_of(other, (*chain, name)))
        # every key but the label: a copied label would make two rows of Table 1 read the same
        base = {k: v for k, v in base.items() if k != "label"} if isinstance(base, dict) else {}
        for key in base:
            if key not in entry:  # an error in a copied value names the file that wrote it
                origins.setdefault(f"backbones.{name}.{key}", origins.file_for(f"backbones.{other}.{key}"))
        resolved[name] = {**base, **{k: v for k, v in entry.items() if k != LIKE_KEY}}
        return resolved[name]

    for name in list(backbones):
        backbones[name] = entry_of(name, ())
    return config
