"""``table_beir.md``: every run on every dataset (a seed's spread where there are several), with the
chance row and marks."""

from __future__ import annotations

import numpy as np
import pandas as pd

from lsrbench.atomic import atomic_open
from lsrbench.names import BM25, RUN_COLUMN, SEED, k_order, split_run_name
from lsrbench.report.tables.chance import CHANCE_LABEL, at_chance, chance_note, column_chance, read_chance
from lsrbench.report.config_record import config_line
from lsrbench.report.render import MISSING, markdown_table
from lsrbench.report.results import bm25_label, bm25_notes, label_notes, read_metrics, run_label
from lsrbench.report.seeds import is_seeded, seeds_of, spread
from lsrbench.report.tables.table1 import seeds_note

__all__ = ["beir_markdown", "table_beir_text", "write_table_beir"]


def beir_markdown(metrics: pd.DataFrame, report_cfg: dict, backbones: dict, chance: dict | None = None) -> str:
    """Per-dataset effectiveness of every run (one column per dataset, then each group's mean)."""
    measure = report_cfg["beir_measure"]
    sel = metrics[metrics["measure"] == measure]
    if sel.empty:
        return f"No {measure} values.\n"
    seeds = seeds_of(sel)
    index = [RUN_COLUMN, "k", SEED] if is_seeded(sel) else [RUN_COLUMN, "k"]
    pivot = sel.pivot_table(index=index, columns="dataset", values="value", aggfunc="first")
    datasets = [d for c in report_cfg["columns"] for d in c["datasets"]]
    datasets = list(dict.fromkeys(d for d in datasets if d in pivot.columns)) + [d for d in pivot.columns if d not in datasets]
    pivot = pivot[datasets]
    for col in report_cfg["columns"]:
        if col["measure"] == measure and len(col["datasets"]) > 1:
            pivot[f"mean ({col['name']})"] = pivot[col["datasets"]].mean(axis=1, skipna=False)
    if is_seeded(sel):
        pivot = _over_seeds(pivot)
    rows = pivot.reset_index()
    rows["_k"] = rows["k"].map(k_order)
    rows["_b"] = rows[RUN_COLUMN].map(lambda b: -1 if b == BM25 else list(backbones).index(split_run_name(b)[0])
                                      if split_run_name(b)[0] in backbones else 99)
    rows = rows.sort_values(["_b", RUN_COLUMN, "_k"]).drop(columns=["_k", "_b"])
    marked = _at_chance(rows, report_cfg, chance, measure)
    rows = _with_chance_row(rows, report_cfg, chance, measure, is_seeded(sel))
    rows.insert(0, "Backbone", [(bm25_label(report_cfg) if b == BM25 else b if b == CHANCE_LABEL else run_label(b, backbones))
                                for b in rows.pop(RUN_COLUMN)])
    notes = "".join(f"\n{note}\n" for note in ([seeds_note(seeds, best_k=False)] if is_seeded(sel) else []) + label_notes(backbones)
                    + (bm25_notes(report_cfg) if (sel[RUN_COLUMN] == BM25).any() else [])
                    + ([chance_note(chance, [c for c in datasets], [measure]) + marked] if chance else []))
    right = [c for c in rows.columns if c != "Backbone"] if is_seeded(sel) else None
    return (f"# Per-dataset {measure}\n\nEvery run on every evaluated dataset.\n\n"
            + markdown_table(rows, right=right) + "\n" + notes)


def _chance_columns(rows: pd.DataFrame, report_cfg: dict, chance: dict | None, measure: str) -> dict[str, object]:
    groups = {f"mean ({c['name']})": c["datasets"] for c in report_cfg["columns"]
              if c["measure"] == measure and len(c["datasets"]) > 1}
    return {col: column_chance(chance, measure, groups.get(col, [col])) for col in rows.columns
            if col not in (RUN_COLUMN, "k")}


def _with_chance_row(rows: pd.DataFrame, report_cfg: dict, chance: dict | None, measure: str,
                     seeded: bool) -> pd.DataFrame:
    if not chance:
        return rows
    levels = _chance_columns(rows, report_cfg, chance, measure)
    row = {RUN_COLUMN: CHANCE_LABEL, "k": "-"}
    for col, level in levels.items():
        value = np.nan if level is None else level.expected
        row[col] = (MISSING if level is None else f"{value:.4f}") if seeded else value
    at = int((rows[RUN_COLUMN] == BM25).sum())
    return pd.concat([rows.iloc[:at], pd.DataFrame([row]), rows.iloc[at:]], ignore_index=True)


def _at_chance(rows: pd.DataFrame, report_cfg: dict, chance: dict | None, measure: str) -> str:
    if not chance:
        return ""
    found = []
    for col, level in _chance_columns(rows, report_cfg, chance, measure).items():
        for b, k, value in zip(rows[RUN_COLUMN], rows["k"], rows[col]):
            number = float(str(value).split(" ± ")[0]) if isinstance(value, str) and value != MISSING else value
            if b != BM25 and isinstance(number, float) and at_chance(number, level):
                found.append(f"{b} k={k} on {col} ({number:.3f})")
    return " Runs at chance: " + ("; ".join(found) if found else "none") + "."


def _over_seeds(pivot: pd.DataFrame) -> pd.DataFrame:
    grouped = pivot.groupby(level=[RUN_COLUMN, "k"], sort=False)

    def cell(values: pd.Series) -> str:
        if values.isna().any():
            return MISSING
        deviation = spread(values)
        return f"{values.mean():.3f}" + ("" if deviation is None else f" ± {deviation:.3f}")

    return grouped.agg(cell)


def table_beir_text(metrics: pd.DataFrame, report_cfg: dict, backbones: dict, config: dict | None = None,
                    chance: dict | None = None) -> str:
    """table_beir.md as written: :func:`beir_markdown` and the config it was made with."""
    return beir_markdown(metrics, report_cfg, backbones, chance) + config_line(config)


def write_table_beir(metrics_csv: str, report_cfg: dict, backbones: dict, out_md: str, config: dict | None = None,
                     chance_json: str | None = None) -> None:
    with atomic_open(out_md, "w", encoding="utf-8") as fh:
        fh.write(table_beir_text(read_metrics(metrics_csv), report_cfg, backbones, config, read_chance(chance_json)))
