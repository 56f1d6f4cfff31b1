"""Which datasets a checked config reads and evaluates, and how."""

from __future__ import annotations

__all__ = ["evaluated", "used_datasets", "pooled_flops_datasets", "pool_depth_of", "dataset_measures"]


def evaluated(config: dict) -> list[str]:
    """The evaluated datasets (``evaluation.datasets``), in order."""
    return list(config["evaluation"]["datasets"])


def pooled_flops_datasets(config: dict) -> list[str]:
    """The datasets whose FLOPs are pooled per run: report.flops_datasets when it names several."""
    names = list(config["report"].get("flops_datasets") or [])
    return names if len(names) > 1 else []


def used_datasets(config: dict) -> list[str]:
    """Every dataset the run reads: the evaluated ones, the pseudo-queries' corpus, the MLM re-fits' texts."""
    td = config["training_data"]
    extra = [td["dataset"]] if td["source"] == "pseudo_queries" else []
    extra += [e["mlm_refit"]["dataset"] for e in config["backbones"].values() if e.get("mlm_refit")]
    return list(dict.fromkeys(evaluated(config) + extra))


def pool_depth_of(config: dict, dataset: str | None = None):
    """The evaluation's pool depth, or ``dataset``'s (None: full collections, or ``dataset`` not evaluated)."""
    if dataset is not None and dataset not in config["evaluation"]["datasets"]:
        return None
    return config["evaluation"]["pool_depth"]


def dataset_measures(config: dict, dataset: str) -> list[str]:
    """The measures of a dataset: its entry's own, else ``evaluation.measures``."""
    from lsrbench.config.entries import dataset_entry  # the schema's validator: not in every job

    return list(dataset_entry(config, dataset).measures or config["evaluation"]["measures"])
