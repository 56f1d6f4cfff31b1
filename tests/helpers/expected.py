"""Results folders for ``lsrbench expected``: Table 1 written by the report code (write_table1) from
metrics, among them the tiny default as this repository recorded it (its default training seed
of benchmark/results/tiny_default_seeds-metrics.csv)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from helpers.paths import REPO
from lsrbench.names import METRIC_COLUMNS, SEED

SEEDS_RECORD = REPO / "benchmark" / "results" / "tiny_default_seeds-metrics.csv"
DEFAULT_SEED = "42"  # config/config.yaml's recipe.seed


def recorded_tiny_default() -> pd.DataFrame:
    """metrics.csv of the tiny default as recorded: the seeds run's rows of the default's seed."""
    seeds = pd.read_csv(SEEDS_RECORD, dtype={"backbone": str, "k": str, SEED: str, "dataset": str, "measure": str})
    return seeds[seeds[SEED].isin([DEFAULT_SEED, "-"])][METRIC_COLUMNS].reset_index(drop=True)


def tiny_config() -> dict:
    from lsrbench.cli_options import load_config

    return load_config([str(REPO / "config" / "config.yaml")], check_files=False)[0]


def results_folder(folder: Path, metrics: pd.DataFrame, report: dict, backbones: dict,
                   files=("config/config.yaml",), config_id: str = "e9999f904834") -> Path:
    """``folder`` with metrics.csv, table1.md and table1.cells.json as the report rules write them."""
    from lsrbench.report.tables.table1 import write_table1

    folder.mkdir(parents=True, exist_ok=True)
    metrics.to_csv(folder / "metrics.csv", index=False, float_format="%.6g")
    write_table1(str(folder / "metrics.csv"), report, backbones, str(folder / "table1.md"),
                 cells_json=str(folder / "table1.cells.json"),
                 config={"id": config_id, "files": list(files), "snapshot": f"results/configs/{config_id}/config.yaml"})
    return folder


def made_on(folder: Path, cpu: str) -> Path:
    """The folder's trained runs recorded as made on CPU model ``cpu`` (a train stage's provenance
    record, as lsrbench.provenance writes it: what lsrbench expected reads the machine from)."""
    import json

    record = folder / "runs" / "splade-tiny" / "k1" / "0123456789ab" / "train_provenance.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({"stage": "train", "device": {"cpu": "x86_64", "cpu_model": cpu, "torch_threads": 2}}))
    return folder


def swapped_rows(metrics: pd.DataFrame, a: tuple[str, str], b: tuple[str, str]) -> pd.DataFrame:
    """Every metric of run ``a`` and run ``b`` (backbone, k) exchanged: the folder of a run whose
    outputs were filed under each other's name."""
    out = metrics.copy()
    rows = {run: (out["backbone"] == run[0]) & (out["k"] == run[1]) for run in (a, b)}
    for src, dst in ((a, b), (b, a)):
        values = metrics[rows[src]].set_index(["dataset", "measure"])["value"]
        out.loc[rows[dst], "value"] = [values[(d, m)] for d, m in zip(out.loc[rows[dst], "dataset"],
                                                                       out.loc[rows[dst], "measure"])]
    return out


QUALITY = ("nDCG@10", "RR@10", "R@1000")


def shifted_runs(metrics: pd.DataFrame, low: float = 0.02, high: float = 0.03) -> pd.DataFrame:
    """Every trained run's retrieval quality lower by 0.02-0.03 (run i of n by low + (high - low) i /
    (n - 1), floored at 0), BM25 and the sparsity numbers as they were: how the issue's run with
    another MLM re-fit seed looks (every run 0.02-0.03 lower), shifted instead of trained."""
    out = metrics.copy()
    runs = [r for r in dict.fromkeys(zip(out["backbone"], out["k"])) if r[0] != "BM25"]
    for i, (backbone, k) in enumerate(runs):
        shift = low + (high - low) * i / max(1, len(runs) - 1)
        rows = (out["backbone"] == backbone) & (out["k"] == k) & out["measure"].isin(QUALITY)
        out.loc[rows, "value"] = (out.loc[rows, "value"] - shift).clip(lower=0.0)
    return out
