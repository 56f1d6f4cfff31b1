"""A module per pipeline stage holding its whole declaration (``STAGE = Stage(..., job=...)``) and its job
function; rules, folder ids and ``params.json`` derive from it. Earlier stages get higher priority, so no long
job runs alone at the end. A new stage is one module and one line below."""

from __future__ import annotations

from importlib import import_module

__all__ = ["STAGE_NAMES", "stage", "all_stages"]

# The registry: one line per stage, its module's name (the Layout builds outputs in this order).
STAGE_NAMES = (
    "preflight",
    "mlm_refit",
    "norm",
    "triplets",
    "dataset",
    "pool",
    "probe",
    "train",
    "released",
    "index",
    "index_queries",
    "evaluate",
    "pooled_flops",
    "bm25",
    "config_snapshot",
)


def stage(name: str):
    """The declaration of stage ``name`` (its module imported, no other)."""
    if name not in STAGE_NAMES:
        raise KeyError(f"{name}: not a stage of lsrbench.stages")
    return import_module(f"{__name__}.{name}").STAGE


def all_stages() -> tuple:
    """Every declaration, in registry order (what a :class:`~lsrbench.dag.layout.Layout` is built from)."""
    return tuple(stage(name) for name in STAGE_NAMES)
