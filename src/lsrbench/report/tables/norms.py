"""``norms.md``: the head norms of the backbones (with the probe's logit scale at k = 1 where it ran)
and what ``k: auto`` costs against the best k found by the sweep."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from lsrbench.model.auto_k import REPORTED_HEAD_STATISTICS
from lsrbench.names import RUN_COLUMN
from lsrbench.report.config_record import config_line
from lsrbench.report.render import MISSING, markdown_table
from lsrbench.report.results import best_ks, label_notes, run_label, run_table
from lsrbench.report.tables.table1 import auto_k_values

__all__ = ["RANKED_STATISTICS", "norms_markdown", "auto_k_markdown", "norms_report_text"]


def norms_report_text(norm_files: dict[str, str], metrics: pd.DataFrame, report_cfg: dict, backbones: dict,
                      auto_cfg: dict | None, config: dict | None = None, probes: list[dict] | None = None) -> str:
    """norms.md as written: the head norms (with the probe's logit scale at k = 1 where ``probes``
    are given), choosing k without a sweep, the config it was made with."""
    from lsrbench.model.auto_k import head_statistics, probe_at_k1

    norms = {b: head_statistics(json.loads(Path(p).read_text(encoding="utf-8")), probe_at_k1(probes or [], b))
             for b, p in norm_files.items()}
    return (norms_markdown(norm_files, backbones, probes) + auto_k_markdown(metrics, report_cfg, backbones, norms, auto_cfg)
            + config_line(config))


# The statistics norms.md ranks the backbones by: (key, table header).
RANKED_STATISTICS = tuple(zip(REPORTED_HEAD_STATISTICS, ("‖W‖_F", "mean ‖w_j‖", "max logit")))


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
        mine = table[table[RUN_COLUMN] == name].set_index("k")[first]
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
