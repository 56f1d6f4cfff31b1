"""What several stage declarations (:mod:`lsrbench.dag.declarations`) are made of: the backbone keys
that decide what is loaded and their identity (a local folder's bytes), the recipe as it decides
results, and where jobs read from (never part of a result). Its own module so that the probe's
declaration parts (:mod:`lsrbench.dag.probe_parts`) share them with training without a cycle."""

from __future__ import annotations

from pathlib import Path

__all__ = ["RUNTIME_RECIPE_KEYS", "LATE_RECIPE_KEYS", "LOAD_KEYS", "SOURCE_KEYS", "load_entry", "load_identity",
           "results_recipe", "job_location", "source_entry", "source_identity", "refit_of", "loaded_entry"]

# Settings that say how a job runs, not what it computes: in no identity.
RUNTIME_RECIPE_KEYS = ("checkpoint_steps", "report_to")
# Recipe keys added after grids had been trained: in a train identity only when they differ from
# their schema default, so that a finished run's folder id stays what it was.
LATE_RECIPE_KEYS = ("weight_decay",)
# The backbone keys that decide what is loaded (labels, k lists and modes do not change a result).
LOAD_KEYS = ("model", "revision", "trust_remote_code", "code_revision", "head_scale", "fetch")
# The keys that say which checkpoint a backbone starts from (a twin's head_scale is applied on top).
SOURCE_KEYS = ("model", "revision", "trust_remote_code", "code_revision", "fetch")


def load_entry(config: dict, backbone: str) -> dict:
    """A backbone entry's keys that decide what is loaded, as written in the config."""
    entry = config["backbones"][backbone]
    return {k: entry[k] for k in LOAD_KEYS if k in entry}


def results_recipe(config: dict, seed: int | None = None) -> dict:
    """The recipe as it determines results (``checkpoint_steps`` only says how often to save,
    ``report_to`` where the trainer also reports): of one training seed
    (:func:`lsrbench.config.grid.seed_recipe`: what a train identity holds, exactly the recipe of a
    one-seed config as it always was), else of the whole config (its seeds as one ``seed``, or as
    ``seeds`` when there are several: the config snapshot's)."""
    from lsrbench.config.grid import seed_recipe, several_seeds, training_seeds

    from lsrbench.config.schema import property_defaults

    late = property_defaults("config.schema.yaml", "recipe")
    recipe = {k: v for k, v in config["recipe"].items()
              if k not in RUNTIME_RECIPE_KEYS and not (k in LATE_RECIPE_KEYS and v == late[k])}
    if seed is not None or not several_seeds(config):
        return seed_recipe(recipe, training_seeds(config)[0] if seed is None else seed)
    return {k: v for k, v in recipe.items() if k != "seed"}  # seeds replaces it


def job_location(layout) -> dict:
    """Where jobs read from and name in errors: never part of a result."""
    return {"mirror": layout.config["mirror"], "cache_dir": layout.config["cache_dir"], "config_file": layout.config_file}


def source_entry(config: dict, backbone: str) -> dict:
    """The keys of a backbone entry that say which checkpoint it starts from, as written."""
    entry = config["backbones"][backbone]
    return {k: entry[k] for k in SOURCE_KEYS if k in entry}


def source_identity(layout, backbone: str) -> dict:
    """The checkpoint a backbone starts from: a local folder's bytes, else the hub id / wheel digests."""
    entry = source_entry(layout.config, backbone)
    if Path(str(entry["model"])).expanduser().is_dir():
        entry["model"] = layout.fingerprint(entry["model"])
    return entry


def refit_of(config: dict, backbone: str) -> dict:
    """``{"refit": <name>}``, the key of the MLM re-fit a backbone loads (docs/miniature.md): the
    first backbone entry with the same source checkpoint and ``mlm_refit`` settings, so that twins
    share one re-fit job; ``{}`` for a backbone without ``mlm_refit``."""
    entry = config["backbones"][backbone]
    if not entry.get("mlm_refit"):
        return {}
    same = (source_entry(config, backbone), entry["mlm_refit"])
    first = next(b for b, e in config["backbones"].items()
                 if e.get("mlm_refit") and (source_entry(config, b), e["mlm_refit"]) == same)
    return {"refit": first}


def load_identity(layout, backbone: str) -> dict:
    """What a backbone loads: a local checkpoint folder's bytes, else the hub id / wheel digests;
    for a backbone with ``mlm_refit``, the re-fit's id (which holds its source) and ``head_scale``."""
    refit = refit_of(layout.config, backbone)
    if refit:
        entry = layout.config["backbones"][backbone]
        return {"mlm_refit": layout.get("refit", **refit).id, "head_scale": entry.get("head_scale", 1)}
    entry = load_entry(layout.config, backbone)
    if Path(str(entry["model"])).expanduser().is_dir():
        entry["model"] = layout.fingerprint(entry["model"])
    return entry


def loaded_entry(layout, backbone: str) -> dict:
    """The load keys a job gets (its runtime ``entry``): as written, or for a backbone with
    ``mlm_refit`` the re-fit checkpoint's folder as its ``model`` (with its ``head_scale`` and
    ``trust_remote_code``)."""
    entry = load_entry(layout.config, backbone)
    refit = refit_of(layout.config, backbone)
    if not refit:
        return entry
    kept = {k: v for k, v in entry.items() if k in ("head_scale", "trust_remote_code")}
    return {"model": layout.get("refit", **refit).path("model"), **kept}
