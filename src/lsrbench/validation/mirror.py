"""What of a config's models, datasets and training data a mirror folder holds (``lsrbench prefetch --dry-run``,
the preflight's backbone check)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from lsrbench.errors import InputError

__all__ = ["missing"]


def missing(config: dict, mirror: str | os.PathLike) -> list[dict]:
    """What :func:`prefetch` would fetch, without downloading: one record per item, "in the mirror" or
    "missing"."""
    from lsrbench.config.grid import n_triplets
    from lsrbench.data.training_sources import mirrored_triplets, training_name
    from lsrbench.config.evaluated import used_datasets

    mirror = Path(mirror)
    records = []
    for name, entry in config["backbones"].items():
        ref = str(entry["model"])
        if ref.startswith(("/", "./", "../", "~")) or Path(ref).is_dir():
            continue  # used in place
        folder = mirror / "models" / ref
        records.append({"kind": "model", "backbone": name, "path": str(folder), "have": folder.is_dir()})
        if entry.get("trust_remote_code"):
            records.append({"kind": "remote code", "backbone": name, "path": str(folder),
                            "have": folder.is_dir() and not _remote_refs(folder)})
    for name in used_datasets(config):
        records.append({"kind": "dataset", "name": name, "path": str(mirror / "data" / name),
                        "have": (mirror / "data" / name).is_dir()})
    td = config["training_data"]
    if td["source"] != "pseudo_queries":
        try:
            have = mirrored_triplets(td, n_triplets(config), td["seed"], mirror) is not None
        except InputError:
            have = False  # drawn for another config
        records.append({"kind": "training", "name": training_name(td), "path": str(mirror / "data" / training_name(td)),
                        "have": have})
    return [{**r, "status": "in the mirror" if r.pop("have") else "missing"} for r in records]


def _remote_refs(folder: Path) -> bool:
    from lsrbench.model.remote_code import CONFIG_FILES

    for name in CONFIG_FILES:
        if (folder / name).is_file() and "--" in json.dumps(json.loads((folder / name).read_text()).get("auto_map") or {}):
            return True
    return False
