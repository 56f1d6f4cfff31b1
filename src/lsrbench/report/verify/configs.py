"""``lsrbench verify``: the reports of one results folder come from one config."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from lsrbench.hashing import stable_hash
from lsrbench.report.config_record import stated_config

__all__ = ["Snapshot", "check_configs"]


@dataclass
class Snapshot:
    """A config snapshot the reports name: its id, the files it was read from, and the config (None
    when it cannot be read)."""

    id: str
    files: list[str]
    config: dict | None


def _stated(path: Path, how: str) -> dict | None | str:
    try:
        text = path.read_text(encoding="utf-8")
        if how == "md":
            return stated_config(text)
        config = json.loads(text).get("config")
    except (OSError, ValueError, AttributeError) as exc:
        return f"unreadable ({' '.join(str(exc).split())})"
    if isinstance(config, str):  # metrics.sources.json of an older lsrbench: the snapshot's path
        return {"snapshot": config, "id": Path(config).parent.name, "files": []}
    return config if isinstance(config, dict) and isinstance(config.get("id"), str) else None


def _read_snapshot(root: Path, config_id: str, problems: list[str]) -> dict | None:
    folder = root / "configs" / config_id
    yaml_file, params = folder / "config.yaml", folder / "params.json"
    if not yaml_file.is_file() or not params.is_file():
        problems.append(f"{yaml_file}: missing: the config snapshot the reports name (removed by hand? re-run "
                        "snakemake to re-make the reports)")
        return None
    try:
        identity = json.loads(params.read_text(encoding="utf-8"))["identity"]
        config = yaml.safe_load(yaml_file.read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError) as exc:
        problems.append(f"{folder}: unreadable config snapshot ({' '.join(str(exc).split())})")
        return None
    if stable_hash(identity)[:12] != config_id:
        problems.append(f"{params}: does not hash to its folder's id {config_id} (edited?): the reports' config "
                        "cannot be trusted")
        return None
    shown = json.dumps(config, sort_keys=True, default=str)
    if not isinstance(config, dict) or shown != json.dumps(identity.get("config"), sort_keys=True, default=str):
        problems.append(f"{yaml_file}: not the config its id {config_id} stands for ({params.name} differs: edited?)")
        return None
    return config


def check_configs(root: Path, problems: list[str]) -> dict[Path, tuple[dict, Snapshot]]:
    """Every report of ``root`` says which config it was made with, all the same one, and that snapshot is sound."""
    from lsrbench.report.reports import stated_in

    of_report: dict[Path, dict] = {}
    for name, how in stated_in():
        path = root / name
        if not path.is_file():
            continue
        stated = _stated(path, how)
        if isinstance(stated, str):
            problems.append(f"{path}: {stated}")
        elif stated is None:
            problems.append(f"{path}: says no config it was made with (made by an older lsrbench, or by hand): "
                            "re-make the reports (snakemake --cores 2, with the config you mean)")
        else:
            of_report[path] = stated
    of_report.update(_manifest_configs(root))
    snapshots: dict[str, Snapshot] = {}
    for stated in of_report.values():
        if stated["id"] not in snapshots:
            snapshots[stated["id"]] = Snapshot(stated["id"], list(stated.get("files") or []),
                                               _read_snapshot(root, stated["id"], problems))
    if len(snapshots) > 1:
        problems.append(_mixed(root, of_report))
    return {path: (stated, snapshots[stated["id"]]) for path, stated in of_report.items()}


def _manifest_configs(root: Path) -> dict[Path, dict]:
    from lsrbench.names import MANIFESTS

    found = {}
    for path in sorted((root / MANIFESTS).glob("*.json")):
        stated = _stated(path, "json")
        if isinstance(stated, dict):
            found[path] = stated
    return found


def _mixed(root: Path, of_report: dict[Path, dict]) -> str:
    groups: dict[str, list[str]] = {}
    files: dict[str, list[str]] = {}
    for path, stated in of_report.items():
        groups.setdefault(stated["id"], []).append(str(path.relative_to(root)) if root in path.parents else path.name)
        files[stated["id"]] = list(stated.get("files") or [])
    told = "; ".join(f"config {cid} ({', '.join(files[cid]) or 'files not recorded'}): {', '.join(names)}"
                     for cid, names in groups.items())
    return (f"{root}: the reports come from {len(groups)} configs, {told}. One results folder shows one config: "
            "re-make every report with the config you mean, without a target (snakemake --cores 2 [--configfile "
            "FILE]); a target such as results/table1.md re-makes only what it needs")
