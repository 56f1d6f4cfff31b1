"""The run grid of a checked config: which (backbone, mode, k) are trained, with which seeds and triplets, and
what the probe measures; one definition for validator, DAG and reports."""

from __future__ import annotations

from lsrbench.names import AUTO_K, DEFAULT_MODE, NO_SEED, PROBE_K, SEED, format_k, k_order, run_name, split_run_name

__all__ = ["k_lists", "backbone_modes", "runs", "grid_lines", "n_triplets", "training_seeds", "several_seeds",
           "is_released", "run_keys", "seed_recipe", "PROBE_TRIPLETS", "probe_settings", "probed_ks"]

# Triplets the probe measures on by default: two batches of the tiny recipe, one of the paper's.
PROBE_TRIPLETS = 32


def k_lists(config: dict, backbone: str) -> dict[str, tuple[str, list]]:
    """Mode -> (the field its k list is read from, the list) of one backbone; an ``evaluate_only`` backbone has
    one run at k = 1."""
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
    """The training seeds: ``recipe.seeds`` when given, else ``recipe.seed``."""
    recipe = config["recipe"]
    return list(recipe["seeds"]) if recipe.get("seeds") else [recipe["seed"]]


def several_seeds(config: dict) -> bool:
    """Whether the grid has a seed axis: then run keys, report rows and metrics.csv carry the seed."""
    return len(training_seeds(config)) > 1


def is_released(config: dict, run: str) -> bool:
    """A run of an ``evaluate_only`` backbone: a released checkpoint, evaluated as it is (no training)."""
    return bool(config["backbones"][split_run_name(run)[0]].get("evaluate_only"))


def run_keys(config: dict) -> list[dict]:
    """The key of every model of the grid, ``{run, k}`` in config order, plus ``seed`` only with several seeds
    (a one-seed config keeps its keys)."""
    if not several_seeds(config):
        return [{"run": r, "k": k} for r, k in runs(config)]
    seeds = training_seeds(config)
    return [{"run": r, "k": k, SEED: s} for r, k in runs(config)
            for s in ([NO_SEED] if is_released(config, r) else seeds)]


def seed_recipe(recipe: dict, seed: int) -> dict:
    """The recipe one seed trains with (``seeds`` dropped, ``seed`` its own); a one-seed config's is
    unchanged."""
    return {**{k: v for k, v in recipe.items() if k != "seeds"}, "seed": seed}


def grid_lines(config: dict) -> list[str]:
    """The run grid, one line per (backbone, mode), as ``check-config`` and the landing page show it."""
    rows = [(name, mode, ", ".join(ks)) for name in config["backbones"] for mode, ks in backbone_modes(config, name).items()]
    width = max((len(name) for name, _, _ in rows), default=0)
    return [f"{name:<{width}}  {mode:<6}  k = {ks}{_matched_note(config['backbones'][name])}" for name, mode, ks in rows]


def _matched_note(entry: dict) -> str:
    scale = entry.get("head_scale")
    if not isinstance(scale, dict):
        return ""
    return (f"  (head x {scale['match']}'s {scale['statistic']} / its own, measured at run time; "
            f"{scale.get('mode', 'untie')})")


def n_triplets(config: dict) -> int:
    """How many triplets are drawn: ``training_data.n_triplets``, else one per example of the recipe."""
    td, recipe = config["training_data"], config["recipe"]
    return td.get("n_triplets") or max(1, recipe["steps"]) * recipe["batch_size"]


def probe_settings(config: dict) -> dict:
    """The ``probe:`` block with the schema's defaults and its ``triplets`` resolved."""
    from lsrbench.config.schema import with_defaults

    settings = with_defaults("probe", config.get("probe") or {})
    settings["triplets"] = settings["triplets"] or max(PROBE_TRIPLETS, config["recipe"]["batch_size"])
    return settings


def probed_ks(config: dict, backbone: str) -> list[list[str]]:
    """``[mode, k]`` of every run one backbone's probe measures: k = 1, the swept numeric k and ``probe.k_grid``
    ascending, then ``auto``; a released checkpoint at k = 1 only."""
    released = config["backbones"][backbone].get("evaluate_only")
    extra = [] if released else [format_k(k) for k in probe_settings(config)["k_grid"]]
    out = []
    for mode, ks in backbone_modes(config, backbone).items():
        numeric = {"1", *extra, *(k for k in ks if k not in (AUTO_K, PROBE_K))}
        out += [[mode, k] for k in sorted(numeric, key=k_order)] + ([[mode, AUTO_K]] if AUTO_K in ks else [])
    return out

