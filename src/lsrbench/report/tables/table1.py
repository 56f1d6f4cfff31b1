"""Table 1 of the paper, reproduced: one row per (backbone, k), the report's columns (a macro mean of a measure
over datasets each), FLOPs and active dims, the best k in bold, collapsed runs marked, the paper's reported
values beside ours; and its sidecar ``table1.cells.json``, which records where every cell comes from so that
``lsrbench verify`` can trace it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from lsrbench.atomic import atomic_open
from lsrbench.hashing import sha256_file
from lsrbench.config.reference import load_reference
from lsrbench.report.tables.chance import (AT_CHANCE_MARK, CHANCE_LABEL, at_chance, chance_note, column_chance,
                                           read_chance)
from lsrbench.report.config_record import config_line
from lsrbench.model.auto_k import auto_k_ratio
from lsrbench.names import BM25, COLLAPSED, DOC_DIMS, FLOPS, QUERY_DIMS, RUN_COLUMN, SEED, format_k, split_run_name
from lsrbench.report.results import (best_ks, bm25_label, bm25_notes, flops_datasets, label_notes, mean_score, read_metrics,
                                     run_label,
                                     run_table, swept_ks)
from lsrbench.report.seeds import run_seeds, seed_mean, seeds_of, spread

__all__ = ["auto_k_values", "head_statistics_of", "render_cell", "best_texts", "twin_notes", "table1_cells",
           "table1_markdown", "seeds_note", "table1_record", "write_table1"]


def auto_k_values(norms: dict[str, dict], auto_cfg: dict | None) -> dict[str, float]:
    """k: auto for every backbone with head norms (:func:`lsrbench.model.auto_k.auto_k_ratio`)."""
    if not auto_cfg or auto_cfg.get("reference") not in norms:
        return {}
    stat = auto_cfg["statistic"]
    values = {}
    for b, n in norms.items():
        try:
            values[b] = auto_k_ratio(n, norms[auto_cfg["reference"]], stat)
        except (KeyError, ValueError):  # zero, or not measured (a logit scale without a probe): no auto k
            continue
    return values


def head_statistics_of(norm_files: dict, probe_files: dict | None = None) -> dict[str, dict]:
    """Backbone -> its norms.json with the probe's logit-scale statistics at k = 1 joined
    (:func:`lsrbench.model.auto_k.head_statistics`) where ``probe_files`` are given."""
    from lsrbench.model.auto_k import head_statistics, probe_at_k1

    probes = [r for path in (probe_files or {}).values() for r in json.loads(Path(path).read_text(encoding="utf-8"))]
    return {b: head_statistics(json.loads(Path(p).read_text(encoding="utf-8")), probe_at_k1(probes, b))
            for b, p in norm_files.items()}


def render_cell(cell: dict) -> str:
    """The text of one table1.md cell from its record (see :func:`table1_cells`)."""
    if cell.get("collapsed"):
        return f"collapsed ({cell['collapsed_seeds']} seeds)" if cell.get("collapsed_seeds") else "collapsed"
    if "numbers" not in cell:
        return cell["text"]
    texts = [n["text"] if n.get("spread_text") is None else f"{n['text']} ± {n['spread_text']}" for n in cell["numbers"]]
    body = "–" if all(t is None for t in texts) else cell.get("sep", "").join("–" if t is None else t for t in texts)
    if cell.get("bold"):
        body = f"**{body}**"
    if cell.get("at_chance"):
        body = f"{body} {AT_CHANCE_MARK}"
    if cell.get("template"):
        body = cell["template"].format(body)
    if cell.get("reference"):
        body += f" (paper {cell['reference']['text']})"
    return body


def _number(run: pd.DataFrame, measure: str, datasets: list[str], fmt: str, require_all: bool) -> dict:
    sel = run[(run["measure"] == measure) & run["dataset"].isin(datasets)]
    seeds = run_seeds(run)
    groups = [(s, sel[sel[SEED] == s]) for s in seeds] if seeds else [(None, sel)]
    if require_all:
        complete = all(len(rows) == len(datasets) for _, rows in groups)
    else:
        groups = [(s, rows) for s, rows in groups if len(rows)]
        complete = bool(groups)
    values = [rows["value"].mean() for _, rows in groups] if complete else []
    value = values[0] if len(values) == 1 else float(np.mean(values)) if values else np.nan
    number = {"measure": measure, "datasets": list(datasets), "require_all": require_all, "format": fmt,
              # metrics.csv line of each source row: the frame is metrics.csv as read (header = line 1)
              "sources": [{"line": int(i) + 2, "dataset": d, "value": float(v)}
                          for i, d, v in zip(sel.index, sel["dataset"], sel["value"])],
              "value": None if pd.isna(value) else float(value),
              "text": None if pd.isna(value) else format(value, fmt)}
    if seeds:  # several training seeds: which ones the mean is over, and their spread
        for source, seed in zip(number["sources"], sel[SEED]):
            source["seed"] = seed
        deviation = spread(values) if complete else None
        number.update(seeds=[s for s, _ in groups] if complete else [], spread=deviation,
                      spread_text=None if deviation is None or pd.isna(deviation) else format(deviation, fmt))
    return number


def best_texts(metrics: pd.DataFrame, column: dict, fmt: str) -> dict[str, str]:
    """Per run swept over several k, its best k's value of ``column`` as shown (``fmt``): every non-collapsed k
    whose shown value equals it is bold, so a tie at the shown precision is never broken silently."""
    out = {}
    for run, k in best_ks(metrics, column["measure"], column["datasets"]).items():
        if len(swept_ks(metrics, run)) < 2:
            continue
        value = mean_score(metrics, run, k, column["measure"], column["datasets"])
        if value is not None:
            out[run] = format(value, fmt)
    return out


def twin_notes(backbones: dict, shown_ks: dict[str, set[str]], autos: dict[str, float]) -> list[str]:
    """A line per synthetic twin (``head_scale: s`` on another backbone's checkpoint) run at k = s
    or at an auto k that rounds to s: dividing the scaled head by s gives back the original head,
    so that run is the original at k = 1 (the same numbers up to float rounding)."""
    lines = []
    for name, entry in backbones.items():
        scale = entry["head_scale"]
        if not entry["synthetic"] or scale == 1 or isinstance(scale, dict):  # a matched scale: no k gives it back
            continue
        originals = [o for o, e in backbones.items() if o != name and e["head_scale"] == 1
                     and all(e.get(key) == entry.get(key) for key in ("model", "revision", "mlm_refit"))]
        ks = shown_ks.get(name, set())
        auto_hit = "auto" in ks and name in autos and abs(autos[name] - scale) <= 1e-3 * scale
        if not originals or not (auto_hit or format_k(scale) in ks):
            continue
        at = f"k = auto ({autos[name]:.3g})" if auto_hit else f"k = {format_k(scale)}"
        lines.append(f"{run_label(name, backbones)} at {at} divides its head, scaled x{format_k(scale)} at load, back "
                     f"by {format_k(scale)}: that run is {run_label(originals[0], backbones)} at k = 1, the same model "
                     "(the same numbers up to float rounding).")
    return lines


def table1_cells(metrics: pd.DataFrame, report_cfg: dict, backbones: dict, norms: dict | None = None,
                 auto_cfg: dict | None = None, chance: dict | None = None) -> dict:
    """Every cell of table1.md with where its numbers come from."""
    means = seed_mean(metrics)
    table = run_table(means, report_cfg, backbones)
    columns = [c["name"] for c in report_cfg["columns"]]
    out = {"columns": ["Backbone", "k", *columns, "FLOPs", "q / d dims"], "rows": []}
    if table.empty:
        return out
    first = columns[0]
    first_col = report_cfg["columns"][0]
    best_text = best_texts(means, first_col, ".3f")
    reference = load_reference(report_cfg.get("reference"))
    autos = auto_k_values(norms or {}, auto_cfg)
    flops_ds = flops_datasets(means, report_cfg)
    for b, k, collapsed in zip(table[RUN_COLUMN], table["k"], table["collapsed"]):
        run = metrics[(metrics[RUN_COLUMN] == b) & (metrics["k"] == k)]
        mark = _collapse_mark(run, bool(collapsed))
        k_cell = {"column": "k", "text": k}
        base = split_run_name(b)[0]
        if k == "auto" and base in autos:
            stat = auto_cfg["statistic"]
            k_cell = {"column": "k", "template": "auto ({})", "numbers": [
                {"norms": {"backbone": base, "reference": auto_cfg["reference"], "statistic": stat},
                 "format": ".3g", "value": float(autos[base]), "text": format(autos[base], ".3g")}]}
        cells = [{"column": "Backbone", "text": run_label(b, backbones) if b != BM25 else bm25_label(report_cfg)}, k_cell]
        if b != BM25 and not any(row["backbone"] == CHANCE_LABEL for row in out["rows"]):
            out["rows"] += _chance_row(report_cfg, chance)  # after BM25's row, before the first run
        for col in report_cfg["columns"]:
            name = col["name"]
            cell = {"column": name, "numbers": [_number(run, col["measure"], col["datasets"], ".3f", True)], **mark}
            if b != BM25 and at_chance(cell["numbers"][0]["value"], column_chance(chance, col["measure"], col["datasets"])):
                cell["at_chance"] = True
            # every k that ties with the best at the precision shown (the caption says so)
            cell["bold"] = (name == first and not collapsed
                            and cell["numbers"][0]["text"] is not None and cell["numbers"][0]["text"] == best_text.get(b))
            ref = reference.get(b, {}).get(k, {}).get(name)
            if ref is not None:
                cell["reference"] = {"file": report_cfg["reference"], "backbone": b, "k": k, "column": name,
                                     "value": float(ref), "text": f"{ref:.3f}"}
            cells.append(cell)
        cells.append({"column": "FLOPs", "numbers": [_number(run, FLOPS, flops_ds, ".2f", False)], **mark})
        cells.append({"column": "q / d dims", "sep": " / ", "numbers": [_number(run, QUERY_DIMS, flops_ds, ".1f", False),
                                                                        _number(run, DOC_DIMS, flops_ds, ".1f", False)]})
        for cell in cells:
            cell["text"] = render_cell(cell)
        out["rows"].append({"backbone": b, "k": k, "collapsed": bool(collapsed), "collapsed_sources": _flag_sources(run),
                            "cells": cells})
    if seeds_of(metrics):
        out["seeds"] = seeds_of(metrics)
    return out


def _chance_row(report_cfg: dict, chance: dict | None) -> list[dict]:
    if not chance:
        return []
    cells = [{"column": "Backbone", "text": CHANCE_LABEL}, {"column": "k", "text": "-"}]
    for col in report_cfg["columns"]:
        level = column_chance(chance, col["measure"], col["datasets"])
        number = {"chance": {"measure": col["measure"], "datasets": list(col["datasets"])}, "format": ".4f",
                  "value": None if level is None else level.expected,
                  "text": None if level is None else format(level.expected, ".4f")}
        cells.append({"column": col["name"], "numbers": [number]})
    cells += [{"column": "FLOPs", "text": "–"}, {"column": "q / d dims", "text": "–"}]
    for cell in cells:
        cell["text"] = render_cell(cell)
    return [{"backbone": CHANCE_LABEL, "k": "-", "collapsed": False, "collapsed_sources": [], "cells": cells}]


def _flag_sources(run: pd.DataFrame) -> list[dict]:
    flags = run[run["measure"] == COLLAPSED]
    sources = [{"line": int(i) + 2, "dataset": d, "value": float(v)}
               for i, d, v in zip(flags.index, flags["dataset"], flags["value"])]
    if SEED in flags.columns:
        for source, seed in zip(sources, flags[SEED]):
            source["seed"] = seed
    return sources


def _collapse_mark(run: pd.DataFrame, collapsed: bool) -> dict:
    seeds = run_seeds(run)
    if not collapsed or len(seeds) < 2:
        return {"collapsed": collapsed}
    flags = run[(run["measure"] == COLLAPSED) & (run["value"] > 0)]
    return {"collapsed": True, "collapsed_seeds": f"{flags[SEED].nunique()} of {len(seeds)}"}


def table1_markdown(metrics: pd.DataFrame, report_cfg: dict, backbones: dict, norms: dict | None = None,
                    auto_cfg: dict | None = None, cells: dict | None = None, config: dict | None = None,
                    chance: dict | None = None) -> str:
    """The paper's Table 1 shape, as Markdown: one row per (backbone, k), best k per backbone in
    bold, collapsed runs shown as such, the paper's value beside ours where it reports one."""
    if cells is None:
        cells = table1_cells(metrics, report_cfg, backbones, norms, auto_cfg, chance)
    if not cells["rows"]:
        return "No finished runs.\n"
    first = report_cfg["columns"][0]["name"]
    reference = report_cfg.get("reference")
    shown = pd.DataFrame([[c["text"] for c in row["cells"]] for row in cells["rows"]], columns=cells["columns"])
    lines = ["# Table 1: effectiveness and efficiency per backbone and rescale factor k", ""]
    if report_cfg.get("caption"):
        lines += [report_cfg["caption"].strip(), ""]
    # disable_numparse: a cell is shown as written ("2.50", not tabulate's "2.5")
    lines.append(shown.to_markdown(index=False, colalign=["left"] + ["right"] * (shown.shape[1] - 1),
                                   disable_numparse=True))
    notes = [
        f"k: the MLM head weight is divided by k before training (W_head <- W_head / k); auto: k = head norm / "
        f"head norm of the reference backbone. Bold: the best {first} per backbone as shown, every k that ties with it "
        "at this precision in bold (the 'best k' of the other reports is the one with the highest unrounded value, auto "
        "and collapsed runs excluded); a run of a single k is not bold: it was compared with nothing. [untie]: the head gets its own "
        "copy before the rescale (input embeddings unchanged); otherwise the tied matrix is scaled (the paper). "
        "FLOPs: sum_j p_q(j) p_d(j), the expected number of multiplications per query-document pair; q / d dims: "
        "mean non-zero terms per query / document. collapsed: the run's status says it collapsed (see its status.json).",
    ]
    if cells.get("seeds"):
        notes.append(seeds_note(cells["seeds"]))
    notes += label_notes(backbones)
    if any(row["backbone"] == BM25 for row in cells["rows"]):
        notes += bm25_notes(report_cfg)
    if chance:
        datasets = list(dict.fromkeys(d for col in report_cfg["columns"] for d in col["datasets"]))
        measures = list(dict.fromkeys(col["measure"] for col in report_cfg["columns"]))
        notes.append(chance_note(chance, datasets, measures))
    shown_ks: dict[str, set[str]] = {}
    for row in cells["rows"]:
        shown_ks.setdefault(row["backbone"], set()).add(row["k"])
    notes += twin_notes(backbones, shown_ks, auto_k_values(norms or {}, auto_cfg))
    if any(c.get("reference") for row in cells["rows"] for c in row["cells"]):
        notes.append(f"(paper x): the value reported in the paper, from {reference}.")
    for note in notes:  # one paragraph each
        lines += ["", note]
    return "\n".join(lines) + "\n" + config_line(config)


def seeds_note(seeds: list[str], best_k: bool = True) -> str:
    """What a table's numbers are with several training seeds (recipe.seeds); ``best_k``: the
    table marks the best k and collapsed runs (Table 1)."""
    marks = (" The best k is the one of the means; collapsed (m of n seeds): m of the run's seeds collapsed, and the "
             "run counts as collapsed." if best_k else "")
    return (f"Seeds: every run was trained once per seed ({len(seeds)} seeds: {', '.join(seeds)}; recipe.seeds). A "
            "number is the mean over the seeds of each seed's value, ± the sample standard deviation over seeds "
            f"(n − 1).{marks} BM25 and released checkpoints are not trained: one value.")


def table1_record(cells: dict, metrics_csv: str, report_cfg: dict, backbones: dict, norm_files: dict,
                  auto_cfg: dict | None, out_md: str, cells_json: str, config: dict | None = None,
                  probe_files: dict | None = None, chance_json: str | None = None) -> dict:
    """The sidecar of table1.md (``table1.cells.json``): what the table was computed from (with SHA-256), the
    settings needed to compute it again, and every cell (see :func:`table1_cells`)."""
    def stamp(path):
        path = str(path)
        return {"path": path, "sha256": sha256_file(path), "bytes": Path(path).stat().st_size}

    ref = report_cfg.get("reference")
    return {
        "format": 1,
        "manifest": str(cells_json),  # its own path as written (finds the working directory again)
        "config": config,  # the config snapshot the table was made with (lsrbench.report.config_record)
        "table": stamp(out_md),
        "metrics_csv": stamp(metrics_csv),
        # what a random ranking scores (the chance row and the at-chance marks)
        **({"chance_json": stamp(chance_json)} if chance_json else {}),
        "reference": ({**stamp(ref), "resolved": str(Path(ref).resolve())} if ref and Path(ref).is_file() else None),
        "norm_files": {b: str(p) for b, p in norm_files.items()},
        # where k auto by a logit-scale statistic was read (the probes at k = 1)
        **({"probe_files": {b: str(p) for b, p in probe_files.items()}} if probe_files else {}),
        "settings": {"report": report_cfg, "auto_k": auto_cfg,
                     "backbones": {b: {key: e[key] for key in ("label", "synthetic", "evaluate_only") if key in e}
                                   for b, e in backbones.items()}},
        **cells,
    }


def write_table1(metrics_csv: str, report_cfg: dict, backbones: dict, out_md: str, norm_files: dict | None = None,
                 auto_cfg: dict | None = None, cells_json: str | None = None, config: dict | None = None,
                 probe_files: dict | None = None, chance_json: str | None = None) -> None:
    """table1.md (and its sidecar ``cells_json``), ending with the config line (``config``:
    :mod:`lsrbench.report.config_record`); ``probe_files`` (backbone -> probe.json): where
    ``auto_k.statistic`` is a logit-scale statistic, read at k = 1 of the probe."""
    norm_files = dict(norm_files or {})
    norms = head_statistics_of(norm_files, probe_files)
    metrics, chance = read_metrics(metrics_csv), read_chance(chance_json)
    cells = table1_cells(metrics, report_cfg, backbones, norms, auto_cfg, chance)
    with atomic_open(out_md, "w", encoding="utf-8") as fh:
        fh.write(table1_markdown(metrics, report_cfg, backbones, norms, auto_cfg, cells=cells, config=config,
                                 chance=chance))
    if cells_json:
        record = table1_record(cells, metrics_csv, report_cfg, backbones, norm_files, auto_cfg, out_md, cells_json,
                               config, probe_files, chance_json)
        with atomic_open(cells_json, "w", encoding="utf-8") as fh:
            json.dump(record, fh, indent=1, ensure_ascii=False)
            fh.write("\n")
