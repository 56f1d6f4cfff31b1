"""The run grid of a checked config: which (backbone, mode, k) are trained, how many training
triplets are drawn, and which (mode, k) the step-0 probe measures per backbone (docs/probe.md).
One definition each, used by the validator, the DAG and the reports."""

from __future__ import annotations

from lsrbench.names import AUTO_K, DEFAULT_MODE, PROBE_K, format_k, k_order, run_name

__all__ = ["k_lists", "backbone_modes", "runs", "grid_lines", "n_triplets", "PROBE_TRIPLETS", "probe_settings",
           "probed_ks"]

# Triplets the probe measures on by default: two batches of the tiny default's recipe, one of the
# paper's (benchmark/README.md: what a probe costs per triplet on one CPU core).
PROBE_TRIPLETS = 32


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


def probe_settings(config: dict) -> dict:
    """The ``probe:`` block with the schema's defaults (a config without one has them all), its
    ``triplets`` resolved: :data:`PROBE_TRIPLETS`, or one batch where the recipe's is larger."""
    from lsrbench.config.schema import with_defaults

    settings = with_defaults("probe", config.get("probe") or {})
    settings["triplets"] = settings["triplets"] or max(PROBE_TRIPLETS, config["recipe"]["batch_size"])
    return settings


def probed_ks(config: dict, backbone: str) -> list[list[str]]:
    """``[mode, k]`` of every run one backbone's probe measures: per swept mode k = 1 (the reference
    point, and the head as loaded), the swept numeric k and ``probe.k_grid`` ascending, then ``auto``
    when it is swept (resolved from the runs before it where its statistic is the probe's own).
    ``probe`` is no k the probe measures: it is read off these. A released checkpoint
    (``evaluate_only``) is probed as it is evaluated: at k = 1 only."""
    released = config["backbones"][backbone].get("evaluate_only")
    extra = [] if released else [format_k(k) for k in probe_settings(config)["k_grid"]]
    out = []
    for mode, ks in backbone_modes(config, backbone).items():
        numeric = {"1", *extra, *(k for k in ks if k not in (AUTO_K, PROBE_K))}
        out += [[mode, k] for k in sorted(numeric, key=k_order)] + ([[mode, AUTO_K]] if AUTO_K in ks else [])
    return out

