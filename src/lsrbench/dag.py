"""Wiring helpers for the Snakefile: the run grid and each rule's parameters, derived from config.

Each rule's params carry exactly the config values its outputs depend on, so Snakemake's params
rerun trigger re-runs only the affected jobs when a value changes.
"""

from __future__ import annotations

from .config import backbone_ks, stable_hash


def run_grid(config: dict) -> list[dict]:
    return [{"backbone": b, "k": k} for b in config["backbones"] for k in backbone_ks(config, b)]


def n_triplets(config: dict) -> int:
    td, recipe = config["training_data"], config["recipe"]
    return td.get("n_triplets") or max(1, recipe["steps"]) * recipe["batch_size"]


def norm_kwargs(config: dict, config_file: str, backbone: str) -> dict:
    return {"backbone": backbone, "entry": config["backbones"][backbone], "mirror": config.get("mirror"),
            "cache_dir": config.get("cache_dir", "cache"), "config_file": config_file}


def dataset_kwargs(config: dict, name: str) -> dict:
    pool = config["evaluation"].get("pool_depth") if name in config["evaluation"]["datasets"] else None
    return {"name": name, "entry": config["_datasets"][name], "mirror": config.get("mirror"),
            "datasets_file": config["datasets_file"], "cache_dir": config.get("cache_dir", "cache"),
            "pool_depth": pool}


def triplets_kwargs(config: dict) -> dict:
    td = config["training_data"]
    return {"dataset_entry": config["_datasets"][td["dataset"]], "n": n_triplets(config), "seed": td.get("seed", 0)}


def train_kwargs(config: dict, config_file: str, backbone: str, k: str) -> dict:
    entry, recipe = config["backbones"][backbone], config["recipe"]
    return {"backbone": backbone, "entry": entry, "k": k, "recipe": recipe, "mirror": config.get("mirror"),
            "cache_dir": config.get("cache_dir", "cache"), "config_file": config_file,
            "config_hash": stable_hash({"entry": entry, "recipe": recipe, "k": k,
                                        "training_data": config["training_data"]})}


def index_kwargs(config: dict, dataset: str) -> dict:
    return {"dataset_entry": config["_datasets"][dataset], "batch_size": config["evaluation"]["encode_batch_size"]}


def evaluate_kwargs(config: dict, backbone: str, k: str, dataset: str) -> dict:
    ev = config["evaluation"]
    entry = config["_datasets"][dataset]
    return {"backbone": backbone, "k": k, "dataset_name": dataset, "dataset_entry": entry,
            "top_k": ev["top_k"], "measures": ev["measures"],
            "config_hash": stable_hash({"entry": config["backbones"][backbone], "recipe": config["recipe"], "k": k,
                                        "training_data": config["training_data"], "dataset": entry,
                                        "evaluation": ev})}


def report_kwargs(config: dict, kind: str) -> dict:
    return {"kind": kind, "report_cfg": config["report"], "backbones": config["backbones"]}
