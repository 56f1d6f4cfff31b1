"""The run grid of a checked config: which (backbone, mode, k) are trained, and how many training
triplets are drawn. One definition each, used by the validator, the DAG and the reports."""

from __future__ import annotations

from lsrbench.names import DEFAULT_MODE, format_k, run_name

__all__ = ["k_lists", "backbone_modes", "runs", "grid_lines", "n_triplets"]


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
