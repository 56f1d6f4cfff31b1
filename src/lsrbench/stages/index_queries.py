"""The index_queries stage: a dataset sharing another's corpus gets its queries encoded only, scored against the
other's ``docs.npz``."""

from __future__ import annotations

from dataclasses import replace

from lsrbench.stages.index import STAGE as INDEX, index_grid

__all__ = ["STAGE"]

# the index stage's declaration but for its grid and its one output (no document shards)
STAGE = replace(INDEX, name="index_queries", grid=lambda c: index_grid(c, shares_corpus=True),
                outputs={"queries_npz": "queries.npz"}, runtime=lambda layout, item: {})
