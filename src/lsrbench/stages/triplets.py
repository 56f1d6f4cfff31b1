"""The triplets stage: the training triplets of ``training_data``."""

from __future__ import annotations

from lsrbench.config.grid import n_triplets
from lsrbench.dag.stage import Stage
from lsrbench.stages.loading import job_location

__all__ = ["STAGE", "triplets"]


def _identity(layout, key: dict) -> dict:
    from lsrbench.data.training_sources import TRAINING_SOURCES

    td = layout.config["training_data"]
    source = TRAINING_SOURCES[td["source"]]
    corpus = {"corpus": layout.get("data", dataset=td["dataset"]).id} if source.needs_corpus else {}
    return {"training_data": source.identity(td, layout.fingerprint), "n": n_triplets(layout.config),
            "seed": td["seed"], **corpus}


def _inputs(layout, item) -> dict:
    td = layout.config["training_data"]
    return {"full_dir": layout.get("data", dataset=td["dataset"]).path("full")} if td["source"] == "pseudo_queries" else {}


def triplets(entry: dict, n: int, seed: int, triplets_jsonl: str, full_dir: str | None = None, mirror=None,
             cache_dir: str = "cache", config_file: str = "config") -> None:
    """Training triplets of ``training_data`` (``entry``, as written), from the mirror when prefetched there."""
    from lsrbench.data.training_sources import build_triplets

    build_triplets(entry, n, seed, triplets_jsonl, mirror=mirror, cache_dir=cache_dir, config_file=config_file,
                   full_dir=full_dir)


STAGE = Stage(
    name="triplets", kind="triplets", job=triplets,
    priority=4,
    grid=lambda c: [{}],
    identity=_identity,
    inputs=_inputs,
    outputs={"triplets_jsonl": "triplets.jsonl"},
    # the training data as written (its mirror folder name, a local repo's path): a mirror holds the
    # same triplets, checked against it
    runtime=lambda layout, item: {"entry": layout.config["training_data"], **job_location(layout)},
)
