"""Remote code runs only pinned, from a local folder: transformers fetches ``auto_map`` code at the code
repository's ``main`` whatever ``revision`` says."""

from __future__ import annotations

import json
from pathlib import Path

from lsrbench.errors import InputError
from lsrbench.names import is_commit

__all__ = ["check_remote_code", "pin_remote_code"]

CONFIG_FILES = ("config.json", "tokenizer_config.json")


def check_remote_code(config: dict, config_file, *, prefetching: bool = False) -> None:
    """Every ``trust_remote_code`` backbone has its code pinned (a folder, or ``code_revision`` when
    prefetching)."""
    from lsrbench.model.checkpoint import local_model_folder

    for name, entry in config["backbones"].items():
        if not entry.get("trust_remote_code"):
            continue
        field = f"backbones.{name}.code_revision"
        pin = entry.get("code_revision")
        if pin is not None and not is_commit(str(pin)):
            raise InputError(config_file, field, f"'{pin}' is not a commit: give the code repository's 40-hex commit")
        if prefetching:
            if pin is None and not Path(str(entry["model"])).expanduser().is_dir():
                raise InputError(config_file, field, "trust_remote_code needs the commit of the model's code "
                                                     "(code_revision) to prefetch it pinned")
            continue
        if local_model_folder(entry, config.get("mirror"), config["cache_dir"], config_file, name) is None:
            raise InputError(config_file, f"backbones.{name}.trust_remote_code",
                             f"'{entry['model']}' would run its hub code at the code repository's main: load it from "
                             "a folder holding its code (lsrbench prefetch with code_revision into a mirror, or a "
                             "local folder)")


def pin_remote_code(folder: Path, code_revision: str | None, model: str) -> list[dict]:
    """Download each ``auto_map`` module from its repository at ``code_revision`` into ``folder`` and point
    ``auto_map`` at it; returns what was fetched."""
    from huggingface_hub import hf_hub_download

    fetched = []
    for name in CONFIG_FILES:
        path = folder / name
        if not path.is_file():
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        auto_map = data.get("auto_map") or {}
        changed = False
        for key, value in list(auto_map.items()):
            for i, ref in enumerate(value if isinstance(value, list) else [value]):
                if not isinstance(ref, str) or "--" not in ref:
                    continue
                repo, local = ref.split("--", 1)
                module = local.rsplit(".", 1)[0] + ".py"
                if not (folder / module).is_file():
                    hf_hub_download(repo, module, revision=code_revision, local_dir=str(folder))
                    fetched.append({"repo": repo, "file": module, "revision": code_revision, "for": model})
                if isinstance(value, list):
                    value[i] = local
                else:
                    auto_map[key] = local
                changed = True
        if changed:
            path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return fetched
