"""The training recipe as it decides results (a train identity's and the config snapshot's)."""

from __future__ import annotations

from lsrbench.dag.stage import LateSetting

__all__ = ["RUNTIME_RECIPE_KEYS", "LATE_RECIPE_SETTINGS", "late_recipe_settings", "results_recipe"]

# Settings that say how a job runs, not what it computes: in no identity.
RUNTIME_RECIPE_KEYS = ("checkpoint_steps", "report_to")
# Recipe keys added after grids had been trained (lsrbench.dag.stage.without_late_defaults).
LATE_RECIPE_SETTINGS = ("weight_decay",)


def late_recipe_settings(prefix: str) -> tuple:
    """The late recipe settings where an identity holds the recipe at ``prefix``."""
    return tuple(LateSetting(f"{prefix}.{name}", ("config.schema.yaml", "recipe")) for name in LATE_RECIPE_SETTINGS)


def results_recipe(config: dict, seed: int | None = None) -> dict:
    """The recipe as it determines results (no ``checkpoint_steps`` or ``report_to``): of one training seed,
    else of the whole config with its seeds."""
    from lsrbench.config.grid import seed_recipe, several_seeds, training_seeds

    recipe = {key: v for key, v in config["recipe"].items() if key not in RUNTIME_RECIPE_KEYS}
    if seed is not None or not several_seeds(config):
        return seed_recipe(recipe, training_seeds(config)[0] if seed is None else seed)
    return {key: v for key, v in recipe.items() if key != "seed"}  # seeds replaces it
