"""The report's other tables: every run on every dataset (``table_beir.md``), the head norms of
the backbones (``norms.md``) and what ``k: auto`` costs against the best k found by the sweep."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from lsrbench.atomic import atomic_open
from lsrbench.names import BM25, SEED, k_order, split_run_name
from lsrbench.report.chance_report import CHANCE_LABEL, at_chance, chance_note, column_chance, read_chance
from lsrbench.report.config_record import config_line
from lsrbench.report.render import MISSING, markdown_table
from lsrbench.report.results import best_ks, bm25_label, bm25_notes, label_notes, read_metrics, run_label, run_table
from lsrbench.report.seeds import is_seeded, seeds_of, spread
from lsrbench.report.table1 import auto_k_values, seeds_note

__all__ = ["beir_markdown", "table_beir_text", "write_table_beir", "RANKED_STATISTICS", "norms_markdown",
           "auto_k_markdown", "norms_report_text"]


def beir_markdown(metrics: pd.DataFrame, report_cfg: dict, backbones: dict, chance: dict | None = None) -> str:
    """Per-dataset effectiveness of every run (one column per dataset, then each group's mean).
    With several training seeds (per-seed rows), each cell is the mean over seeds ± their sample
    standard deviation, a group's mean that of each seed's mean over the group. ``chance``
    (results/chance.json): a row of a random ranking's expected values, and a note naming the
    runs at chance."""
    measure = report_cfg["beir_measure"]
    sel = metrics[metrics["measure"] == measure]
    if sel.empty:
        return f"No {measure} values.\n"
    seeds = seeds_of(sel)
    index = ["backbone", "k", SEED] if is_seeded(sel) else ["backbone", "k"]
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
    rows["_b"] = rows["backbone"].map(lambda b: -1 if b == BM25 else list(backbones).index(split_run_name(b)[0])
                                      if split_run_name(b)[0] in backbones else 99)
    rows = rows.sort_values(["_b", "backbone", "_k"]).drop(columns=["_k", "_b"])
    marked = _at_chance(rows, report_cfg, chance, measure)
    rows = _with_chance_row(rows, report_cfg, chance, measure, is_seeded(sel))
    rows.insert(0, "Backbone", [(bm25_label(report_cfg) if b == BM25 else b if b == CHANCE_LABEL else run_label(b, backbones))
                                for b in rows.pop("backbone")])
    notes = "".join(f"\n{note}\n" for note in ([seeds_note(seeds, best_k=False)] if is_seeded(sel) else []) + label_notes(backbones)
                    + (bm25_notes(report_cfg) if (sel["backbone"] == BM25).any() else [])
                    + ([chance_note(chance, [c for c in datasets], [measure]) + marked] if chance else []))
    right = [c for c in rows.columns if c != "Backbone"] if is_seeded(sel) else None
    return (f"# Per-dataset {measure}\n\nEvery run on every evaluated dataset.\n\n"
            + markdown_table(rows, right=right) + "\n" + notes)


def _chance_columns(rows: pd.DataFrame, report_cfg: dict, chance: dict | None, measure: str) -> dict[str, object]:
    """Each column of the table (a dataset, or a group's mean) -> a random ranking's level on it."""
    groups = {f"mean ({c['name']})": c["datasets"] for c in report_cfg["columns"]
              if c["measure"] == measure and len(c["datasets"]) > 1}
    return {col: column_chance(chance, measure, groups.get(col, [col])) for col in rows.columns
            if col not in ("backbone", "k")}


def _with_chance_row(rows: pd.DataFrame, report_cfg: dict, chance: dict | None, measure: str,
                     seeded: bool) -> pd.DataFrame:
    """The table with a random ranking's row after BM25's (none without results/chance.json)."""
    if not chance:
        return rows
    levels = _chance_columns(rows, report_cfg, chance, measure)
    row = {"backbone": CHANCE_LABEL, "k": "-"}
    for col, level in levels.items():
        value = np.nan if level is None else level.expected
        row[col] = (MISSING if level is None else f"{value:.4f}") if seeded else value
    at = int((rows["backbone"] == BM25).sum())
    return pd.concat([rows.iloc[:at], pd.DataFrame([row]), rows.iloc[at:]], ignore_index=True)


def _at_chance(rows: pd.DataFrame, report_cfg: dict, chance: dict | None, measure: str) -> str:
    """" Runs at chance: ..." naming each run and column at chance (mean over seeds), or ""."""
    if not chance:
        return ""
    found = []
    for col, level in _chance_columns(rows, report_cfg, chance, measure).items():
        for b, k, value in zip(rows["backbone"], rows["k"], rows[col]):
            number = float(str(value).split(" ± ")[0]) if isinstance(value, str) and value != MISSING else value
            if b != BM25 and isinstance(number, float) and at_chance(number, level):
                found.append(f"{b} k={k} on {col} ({number:.3f})")
    return " Runs at chance: " + ("; ".join(found) if found else "none") + "."


def _over_seeds(pivot: pd.DataFrame) -> pd.DataFrame:
    """A (backbone, k, seed) x dataset pivot as (backbone, k) x dataset texts: the mean over seeds
    (missing when a seed lacks the value) ± the sample standard deviation (when there are two)."""
    grouped = pivot.groupby(level=["backbone", "k"], sort=False)

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


def norms_report_text(norm_files: dict[str, str], metrics: pd.DataFrame, report_cfg: dict, backbones: dict,
                      auto_cfg: dict | None, config: dict | None = None, probes: list[dict] | None = None) -> str:
    """norms.md as written: the head norms (with the probe's logit scale at k = 1 where ``probes``
    are given), choosing k without a sweep, the config it was made with."""
    from lsrbench.model.auto_k import head_statistics, probe_at_k1

    norms = {b: head_statistics(json.loads(Path(p).read_text(encoding="utf-8")), probe_at_k1(probes or [], b))
             for b, p in norm_files.items()}
    return (norms_markdown(norm_files, backbones, probes) + auto_k_markdown(metrics, report_cfg, backbones, norms, auto_cfg)
            + config_line(config))


# The three statistics norms.md ranks the backbones by: (key, table header).
RANKED_STATISTICS = (("frobenius_norm", "‖W‖_F"), ("mean_row_norm", "mean ‖w_j‖"), ("max_logit", "max logit"))


def norms_markdown(norm_files: dict[str, str], backbones: dict, probes: list[dict] | None = None) -> str:
    """Head-norm table: one row per backbone, largest Frobenius norm first, with the probe's
    initial logit scale at k = 1 (``probes``: probe results; :func:`lsrbench.model.auto_k.head_statistics`)
    beside the norms, and how the three statistics rank the backbones."""
    from lsrbench.model.auto_k import head_statistics, probe_at_k1

    rows = []
    for name, path in norm_files.items():
        n = head_statistics(json.loads(Path(path).read_text()), probe_at_k1(probes or [], name))
        rows.append({
            "Backbone": run_label(name, backbones),
            "‖W‖_F": n["frobenius_norm"],
            "mean ‖w_j‖": n["mean_row_norm"],
            "max ‖w_j‖": n["max_row_norm"],
            "max logit": n.get("max_logit", np.nan),
            "mean w (active)": n.get("mean_activation", np.nan),
            "‖b‖": n["bias_norm"],
            "vocab": n["vocab_size"],
            "hidden": n["hidden_size"],
            "tied": "yes" if n["tied"] else "no",
        })
    df = pd.DataFrame(rows).sort_values("‖W‖_F", ascending=False, kind="stable")
    probed = df[["max logit", "mean w (active)"]].notna().any(axis=None)
    probe_text = ("max logit: the mean over the probe's documents of the largest logit, and mean w: the mean "
                  "activation log1p(relu(logit)) of active terms, both at k = 1 (the probe; "
                  f"{MISSING} where a backbone was not probed)." if probed else
                  "The probe's logit scale at k = 1 (max logit, mean activation) is not shown: the step-0 probe "
                  "did not run for this folder (lsrbench probe, or probe.with_grid: true).")
    body = markdown_table(df if probed else df.drop(columns=["max logit", "mean w (active)"]))
    return (
        "# MLM head norms\n\n"
        "Norms of the vocabulary projection W_head (rows w_j, one per vocabulary term) and its bias b, "
        f"as loaded (before the rescale by k). {probe_text} The Frobenius norm grows with the square "
        "root of the vocabulary size at equal rows; the logits are what SPLADE sees (docs/claims.md).\n\n"
        + body + "\n\n" + _rankings(df) + "\n"
        + "".join(f"\n{note}\n" for note in label_notes(backbones))
    )


def _rankings(df: pd.DataFrame) -> str:
    """One line per statistic: the backbones from largest to smallest, and whether they agree."""
    orders = {}
    for _, header in RANKED_STATISTICS:
        have = df[df[header].notna()]
        if len(have):
            orders[header] = list(have.sort_values(header, ascending=False, kind="stable")["Backbone"])
    lines = [f"- by {header}: " + " > ".join(names) for header, names in orders.items()]
    comparable = [names for names in orders.values() if len(names) == len(df)]
    agree = "the same order" if len(comparable) > 1 and all(o == comparable[0] for o in comparable) else "different orders"
    verdict = (f"The statistics rank the backbones in {agree}." if len(comparable) > 1 else
               "Only one statistic covers every backbone.")
    return "Ranking, largest first:\n\n" + "\n".join(lines) + "\n\n" + verdict


def auto_k_markdown(metrics: pd.DataFrame, report_cfg: dict, backbones: dict, norms: dict, auto_cfg: dict | None) -> str:
    """For every swept backbone: k: auto next to the empirically best k, and what auto k costs."""
    if not auto_cfg:
        return ""
    table = run_table(metrics, report_cfg, backbones)
    first_col = report_cfg["columns"][0]
    first = first_col["name"]
    best = best_ks(metrics, first_col["measure"], first_col["datasets"])
    autos = auto_k_values(norms, auto_cfg)
    rows = []
    for name in backbones:
        if name not in best:
            continue
        mine = table[table["backbone"] == name].set_index("k")[first]
        auto_score = mine.get("auto", np.nan)
        rows.append({"Backbone": run_label(name, backbones), "auto k": autos.get(name, np.nan), "best k": best[name],
                     f"{first} at best k": mine[best[name]], f"{first} at auto k": auto_score,
                     "lost by auto k": mine[best[name]] - auto_score if pd.notna(auto_score) else np.nan})
    if not rows:
        return ""
    stat = auto_cfg["statistic"]
    frame = pd.DataFrame(rows)
    ran_auto = frame[f"{first} at auto k"].notna().any()
    lost = (f"'lost by auto k' is measured only where the config also ran k: auto (otherwise {MISSING})." if ran_auto
            else "No backbone ran k: auto here, so what auto k would lose is not measured (add auto to a backbone's k).")
    return ("\n## Choosing k without a sweep\n\n"
            f"auto k = {stat} of the backbone / {stat} of {auto_cfg['reference']}. {lost}\n\n"
            + markdown_table(frame if ran_auto else frame.drop(columns=[f"{first} at auto k", "lost by auto k"])) + "\n")
