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
                   files=("config/config.yaml",), config_id: str = "0089264207a0") -> Path:
    """``folder`` with metrics.csv, table1.md and table1.cells.json as the report rules write them."""
    from lsrbench.report.tables.table1 import write_table1

    folder.mkdir(parents=True, exist_ok=True)
    metrics.to_csv(folder / "metrics.csv", index=False, float_format="%.6g")
    write_table1(str(folder / "metrics.csv"), report, backbones, str(folder / "table1.md"),
                 cells_json=str(folder / "table1.cells.json"),
                 config={"id": config_id, "files": list(files), "snapshot": f"results/configs/{config_id}/config.yaml"})
    return folder
