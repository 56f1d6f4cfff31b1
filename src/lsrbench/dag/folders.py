"""The addressed folders of the DAG, by kind: where each output's folder is, and which wildcard
holds its own id (:mod:`lsrbench.dag.layout` explains content addressing)."""

from __future__ import annotations

from lsrbench.hashing import stable_hash
from lsrbench.names import POOLED

__all__ = ["ID_LENGTH", "ID_REGEX", "FOLDERS", "ID_WILDCARD", "PARAMS_JSON", "pattern", "short_id", "folder_id"]

ID_LENGTH = 12
ID_REGEX = f"[0-9a-f]{{{ID_LENGTH}}}"
PARAMS_JSON = "params.json"  # beside every addressed output: what its id stands for

# Every addressed folder, by kind; {results} is the results folder, the rest are the rules' wildcards.
FOLDERS = {
    "data": "{results}/data/{dataset}/{data_id}",
    "pool": "{results}/data/{dataset}/{data_id}/{pool_id}",
    "refit": "{results}/mlm_refit/{refit_id}",
    "norms": "{results}/norms/{backbone}/{norms_id}",
    "probe": "{results}/probe/{backbone}/{probe_id}",
    "triplets": "{results}/triplets/{triplets_id}",
    "train": "{results}/runs/{run}/k{k}/{train_id}",
    "index": "{results}/runs/{run}/k{k}/{train_id}/{dataset}/{index_id}",
    "evaluate": "{results}/runs/{run}/k{k}/{train_id}/{dataset}/{index_id}/{eval_id}",
    "pooled": "{results}/runs/{run}/k{k}/{train_id}/" + POOLED + "/{pooled_id}",
    "bm25": "{results}/bm25/{dataset}/{bm25_id}",
    "configs": "{results}/configs/{config_id}",
    "preflight": "{results}/preflight/{preflight_id}",
}
# The wildcard holding each kind's own id (:func:`folder_id`).
ID_WILDCARD = {"data": "data_id", "pool": "pool_id", "refit": "refit_id", "norms": "norms_id", "probe": "probe_id", "triplets": "triplets_id",
               "train": "train_id", "index": "index_id", "evaluate": "eval_id", "pooled": "pooled_id", "bm25": "bm25_id",
               "configs": "config_id", "preflight": "preflight_id"}


def pattern(kind: str, name: str = "", results: str = "results") -> str:
    """A rule's path pattern: the folder of ``kind`` with its wildcards, then ``name`` inside it."""
    folder = FOLDERS[kind].replace("{results}", results)
    return f"{folder}/{name}" if name else folder


def short_id(identity) -> str:
    return stable_hash(identity)[:ID_LENGTH]


def folder_id(kind: str, identity) -> str:
    """A folder's own id: a pool's names its depth (``pool<depth>``), every other kind's is its identity's hash."""
    return f"pool{identity['pool_depth']}" if kind == "pool" else short_id(identity)
