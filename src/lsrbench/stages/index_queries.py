"""The index_queries stage: a dataset sharing another's corpus (MS MARCO Dev and TREC DL 2019 on
full collections) gets its queries encoded only, scored against the other's ``docs.npz``."""

from __future__ import annotations

from lsrbench.dag.stage import Stage
from lsrbench.stages.index import index, index_folder, index_grid, index_identity, index_inputs

__all__ = ["STAGE"]

STAGE = Stage(
    name="index_queries", kind="index", job=index,
    priority=2,
    model_job=True,
    grid=lambda c: index_grid(c, shares_corpus=True),
    folder_fields=index_folder,
    identity=index_identity,
    inputs=index_inputs,
    outputs={"queries_npz": "queries.npz"},
)
