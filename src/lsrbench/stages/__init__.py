"""A module per addressed stage of the DAG, each holding the stage's whole declaration
(:class:`lsrbench.dag.stage.Stage`: what decides its folder id, its inputs, outputs, runtime settings
and priority) and its job function. The rule files, folder ids, ``params.json`` and the job's call
derive from it (:class:`lsrbench.dag.stage.StageRules`, :class:`lsrbench.dag.layout.Layout`).

Per (backbone, k) and training seed, as the paper's experiment runs: norm -> train -> index ->
evaluate; before them the datasets, their pooled subsets, the triplets and a backbone's MLM re-fit;
beside them BM25, the FLOPs pooled over NanoBEIR and the step-0 probe. Priorities: among ready jobs
a stage earlier in the chain goes first (5 a GPU grid's preflight; 4 data, norms and re-fits; 3 trainings and the probe;
2 index; 1 evaluations; reports and the config snapshot 0), so that no long job runs alone at the
end and a job that fails leaves every report as it was.

A new stage is one module here with ``STAGE = Stage(..., job=...)`` and one line below. The
registry is read lazily: a job process imports its own stage's module only (:func:`stage`).
"""

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
