"""One function per report rule: each reads cached run outputs only (metrics, per-query scores,
head norms, training logs) and writes one report, so deleting a report re-runs just its rule."""

from __future__ import annotations

import json
from pathlib import Path

from lsrbench.atomic import atomic_open
from lsrbench.pipeline.stages import as_list


def report_collect(metric_files, output: str, sources: str | None = None) -> None:
    """metrics.csv from the current config's run files, and beside it ``sources``
    (metrics.sources.json): which files those were, since results/ also holds other configs' runs
    (``lsrbench verify`` traces the rows to exactly these)."""
    from lsrbench.provenance import write_json
    from lsrbench.report.results import collect_metrics

    files = as_list(metric_files)
    collect_metrics(files, output)
    if sources:
        write_json(sources, {"manifest": sources, "metrics_csv": output, "sources": files})


def report_table1(metrics_csv: str, norm_files, norm_names: list[str], report_cfg: dict, backbones: dict,
                  auto_k: dict | None, output: str, cells: str | None = None, reference_file=None) -> None:
    """table1.md, and beside it ``cells`` (table1.cells.json): every cell with the metrics.csv rows
    it comes from, which ``lsrbench verify`` checks the table against. ``reference_file`` is
    ``report_cfg["reference"]`` as a Snakemake input (so that editing it re-runs the table)."""
    from lsrbench.report.table1 import write_table1

    write_table1(metrics_csv, report_cfg, backbones, output, dict(zip(norm_names, as_list(norm_files))), auto_k,
                 cells_json=cells)


def report_table_beir(metrics_csv: str, report_cfg: dict, backbones: dict, output: str) -> None:
    from lsrbench.report.tables import write_table_beir

    write_table_beir(metrics_csv, report_cfg, backbones, output)


def _read_norms(norm_files, norm_names: list[str]) -> tuple[dict[str, str], dict[str, dict]]:
    files = dict(zip(norm_names, as_list(norm_files)))
    return files, {b: json.loads(Path(p).read_text(encoding="utf-8")) for b, p in files.items()}


def report_norms(norm_files, norm_names: list[str], metrics_csv: str, report_cfg: dict, backbones: dict,
                 auto_k: dict | None, out_md: str, out_png: str) -> None:
    from lsrbench.report.plots import plot_norms
    from lsrbench.report.results import read_metrics
    from lsrbench.report.tables import auto_k_markdown, norms_markdown

    files, norms = _read_norms(norm_files, norm_names)
    text = norms_markdown(files, backbones) + auto_k_markdown(read_metrics(metrics_csv), report_cfg, backbones, norms,
                                                              auto_k)
    with atomic_open(out_md, "w", encoding="utf-8") as fh:
        fh.write(text)
    plot_norms(files, metrics_csv, report_cfg, backbones, out_png, auto_k)


def report_tradeoff(metrics_csv: str, report_cfg: dict, backbones: dict, out_png: str, out_pdf: str) -> None:
    from lsrbench.report.plots import plot_tradeoff

    plot_tradeoff(metrics_csv, report_cfg, backbones, out_png, out_pdf)


def report_loss_curves(log_files, log_keys: list[str], backbones: dict, output: str) -> None:
    from lsrbench.report.plots import plot_loss_curves

    plot_loss_curves(dict(zip(log_keys, as_list(log_files))), backbones, output)


def report_claims(metrics_csv: str, perquery_files, perquery_keys: list[list[str]], norm_files, norm_names: list[str],
                  log_files, log_keys: list[str], claims_cfg: dict, report_cfg: dict, backbones: dict, output: str,
                  out_json: str, reference_file=None) -> None:
    """Evaluate the config's claims on this run's numbers into claims.md and claims.json.
    ``reference_file``: ``report_cfg["reference"]`` as an input (the paper's numbers, its best k)."""
    import pandas as pd
    import yaml

    from lsrbench.model.train_log import read_train_log
    from lsrbench.pipeline.config import with_defaults
    from lsrbench.report.claims import Evidence, evaluate_claims
    from lsrbench.report.claims_output import write_claims
    from lsrbench.report.results import read_metrics

    perquery = {tuple(key): pd.read_csv(path, sep="\t", dtype={"query_id": str})
                for key, path in zip(perquery_keys, as_list(perquery_files))}
    _, norms = _read_norms(norm_files, norm_names)
    logs = {}
    for key, path in zip(log_keys, as_list(log_files)):
        run, k = key.rsplit("|", 1)
        logs[(run, k)] = read_train_log(path)
    reference = as_list(reference_file or [])
    reference = yaml.safe_load(Path(reference[0]).read_text(encoding="utf-8")) or {} if reference else {}
    ev = Evidence(read_metrics(metrics_csv), perquery, norms, logs, backbones, report_cfg, reference)
    claims_cfg = with_defaults("claims", claims_cfg)
    write_claims(evaluate_claims(ev, claims_cfg), claims_cfg, output, out_json)


def report_html(markdown: str, output: str) -> None:
    """An HTML page of a Markdown report, for `snakemake --report` (which shows HTML inline),
    titled by the report's first heading."""
    from lsrbench.report.render import html_page

    text = Path(markdown).read_text(encoding="utf-8")
    title = next((line.lstrip("# ").strip() for line in text.splitlines() if line.startswith("#")), Path(markdown).stem)
    with atomic_open(output, "w", encoding="utf-8") as fh:
        fh.write(html_page(text, title))
