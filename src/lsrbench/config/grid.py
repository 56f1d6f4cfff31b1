"""The run grid of a checked config: which (backbone, mode, k) are trained, with which training
seeds, and how many training triplets are drawn. One definition each, used by the validator, the
DAG and the reports."""

from __future__ import annotations

from lsrbench.names import DEFAULT_MODE, NO_SEED, SEED, format_k, run_name, split_run_name

__all__ = ["k_lists", "backbone_modes", "runs", "grid_lines", "n_triplets", "training_seeds", "several_seeds",
           "is_released", "run_keys", "seed_recipe"]


def k_lists(config: dict, backbone: str) -> dict[str, tuple[str, list]]:
    """Mode -> (the field its k list is read from, the list as written) of one backbone: its own
    ``modes`` mapping, else its ``k`` (or ``k_grid``) in each of its ``modes`` (or the config's);
    an ``evaluate_only`` backbone (a released checkpoint) has one run, shared at k = 1."""
    entry = config["backbones"][backbone]
    if entry.get("evaluate_only"):
        return {DEFAULT_MODE: (f"backbones.{backbone}", [1])}
    modes = entry.get("modes", config["modes"])
    if isinstance(modes, dict):
        return {m: (f"backbones.{backbone}.modes.{m}", ks) for m, ks in modes.items()}
    field, ks = (f"backbones.{backbone}.k", entry["k"]) if "k" in entry else ("k_grid", config["k_grid"])
    return {m: (field, ks) for m in modes}


def backbone_modes(config: dict, name: str) -> dict[str, list[str]]:
    """Mode -> list of k (canonical text, ``auto`` allowed) swept for one backbone."""
    return {mode: [format_k(k) for k in ks] for mode, (_, ks) in k_lists(config, name).items()}


def runs(config: dict) -> list[tuple[str, str]]:
    """Every (run name, k) of the grid, in config order (see :func:`lsrbench.names.run_name`)."""
    return [(run_name(b, m), k) for b in config["backbones"] for m, ks in backbone_modes(config, b).items() for k in ks]


def training_seeds(config: dict) -> list[int]:
    """The training seeds: ``recipe.seeds`` when given (each seed trains its own run of every
    (backbone, mode, k)), else the one ``recipe.seed`` (docs/configuration.md)."""
    recipe = config["recipe"]
    return list(recipe["seeds"]) if recipe.get("seeds") else [recipe["seed"]]


def several_seeds(config: dict) -> bool:
    """Whether the grid has a seed axis: then run keys, report rows and metrics.csv carry the seed."""
    return len(training_seeds(config)) > 1


def is_released(config: dict, run: str) -> bool:
    """A run of an ``evaluate_only`` backbone: a released checkpoint, evaluated as it is (no training)."""
    return bool(config["backbones"][split_run_name(run)[0]].get("evaluate_only"))


def run_keys(config: dict) -> list[dict]:
    """The key of every model of the grid (its train folder): ``{run, k}``, in config order; with
    several training seeds also ``seed``, innermost (:data:`lsrbench.names.NO_SEED` for a released
    checkpoint, which is one model whatever the seeds). One seed keeps the key it always had, so
    a one-seed config's outputs, report inputs and metrics.csv are what they were."""
    if not several_seeds(config):
        return [{"run": r, "k": k} for r, k in runs(config)]
    seeds = training_seeds(config)
    return [{"run": r, "k": k, SEED: s} for r, k in runs(config)
            for s in ([NO_SEED] if is_released(config, r) else seeds)]


def seed_recipe(recipe: dict, seed: int) -> dict:
    """The recipe one seed trains with: ``seeds`` left out, ``seed`` the run's own. A one-seed
    config's recipe (``seed: s``, or ``seeds: [s]``) gives exactly the recipe it always had."""
    return {**{k: v for k, v in recipe.items() if k != "seeds"}, "seed": seed}


def grid_lines(config: dict) -> list[str]:
    """The run grid, one line per (backbone, mode): what ``lsrbench check-config`` prints and the
    report's landing page shows (``splade-tiny      shared  k = 1, 4, 16``)."""
    rows = [(name, mode, ", ".join(ks)) for name in config["backbones"] for mode, ks in backbone_modes(config, name).items()]
    width = max((len(name) for name, _, _ in rows), default=0)
    return [f"{name:<{width}}  {mode:<6}  k = {ks}" for name, mode, ks in rows]


def n_triplets(config: dict) -> int:
    """How many triplets are drawn: ``training_data.n_triplets``, else one per example of the recipe."""
    td, recipe = config["training_data"], config["recipe"]
    return td.get("n_triplets") or max(1, recipe["steps"]) * recipe["batch_size"]
