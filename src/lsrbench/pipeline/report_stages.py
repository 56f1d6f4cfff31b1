"""One function per report rule (:data:`lsrbench.dag.reports.REPORTS`): each reads cached run outputs
only (metrics, per-query scores, head norms, training logs) and writes one report, so deleting a
report re-runs just its rule. Run files come by key (:func:`keyed`), never by position."""

from __future__ import annotations

import json
from pathlib import Path

from lsrbench.atomic import atomic_open
from lsrbench.pipeline.stages import as_list


def keyed(rows) -> dict[tuple[str, ...], str]:
    """``[key..., path]`` rows (the report rules' ``params.keyed``) as ``{(key...): path}``; a key of
    one field (a backbone) as that string."""
    return {(row[0] if len(row) == 2 else tuple(row[:-1])): row[-1] for row in rows}


def report_collect(metric_files, metrics_csv: str, sources_json: str, config_yaml: str | None = None) -> None:
    """metrics.csv from the current config's run files, and beside it ``sources_json``
    (metrics.sources.json): which files those were, since results/ also holds other configs' runs
    (``lsrbench verify`` traces the rows to exactly these), and the config snapshot they belong to.
    Every report reads ``config_yaml`` as an input: a changed setting re-makes it."""
    from lsrbench.provenance import write_json
    from lsrbench.report.results import collect_metrics

    files = as_list(metric_files)
    collect_metrics(files, metrics_csv)
    write_json(sources_json, {"manifest": sources_json, "metrics_csv": metrics_csv, "sources": files,
                              "config": config_yaml})


def report_table1(metrics_csv: str, norm_files, report_cfg: dict, backbones: dict,
                  auto_k: dict | None, table1_md: str, cells_json: str, reference_file=None,
                  config_yaml: str | None = None, probe_files=None) -> None:
    """table1.md, and beside it ``cells_json`` (table1.cells.json): every cell with the metrics.csv rows
    it comes from, which ``lsrbench verify`` checks the table against. ``reference_file`` is
    ``report_cfg["reference"]`` as a Snakemake input (so that editing it re-runs the table);
    ``probe_files``: where k auto is read from the probes (a logit-scale ``auto_k.statistic``)."""
    from lsrbench.report.table1 import write_table1

    write_table1(metrics_csv, report_cfg, backbones, table1_md, keyed(norm_files), auto_k, cells_json=cells_json,
                 probe_files=keyed(probe_files or []))


def report_table_beir(metrics_csv: str, report_cfg: dict, backbones: dict, table_beir_md: str,
                      config_yaml: str | None = None) -> None:
    from lsrbench.report.tables import write_table_beir

    write_table_beir(metrics_csv, report_cfg, backbones, table_beir_md)


def _read_norms(norm_files) -> tuple[dict[str, str], dict[str, dict]]:
    files = keyed(norm_files)
    return files, {b: json.loads(Path(p).read_text(encoding="utf-8")) for b, p in files.items()}


def read_probes(probe_files) -> list[dict]:
    """Every probe result of ``probe_files`` (``[backbone, probe.json]`` rows), backbone by backbone."""
    return [result for path in keyed(probe_files or []).values()
            for result in json.loads(Path(path).read_text(encoding="utf-8"))]


def _head_statistics(norm_files, probes: list[dict]) -> tuple[dict[str, str], dict[str, dict]]:
    """Each backbone's norms.json with the probe's logit-scale statistics at k = 1 joined
    (:func:`lsrbench.model.auto_k.head_statistics`): what k auto and the claims may divide."""
    from lsrbench.model.auto_k import head_statistics, probe_at_k1

    files, norms = _read_norms(norm_files)
    return files, {b: head_statistics(n, probe_at_k1(probes, b)) for b, n in norms.items()}


def report_norms(norm_files, metrics_csv: str, report_cfg: dict, backbones: dict,
                 auto_k: dict | None, norms_md: str, norms_png: str, config_yaml: str | None = None,
                 probe_files=None) -> None:
    """norms.md and norms.png: the head norms, with the probe's logit scale at k = 1 where the
    config runs the probe (``probe_files``)."""
    from lsrbench.report.plots import plot_norms
    from lsrbench.report.results import read_metrics
    from lsrbench.report.tables import auto_k_markdown, norms_markdown

    probes = read_probes(probe_files)
    files, norms = _head_statistics(norm_files, probes)
    text = norms_markdown(files, backbones, probes) + auto_k_markdown(read_metrics(metrics_csv), report_cfg, backbones,
                                                                      norms, auto_k)
    with atomic_open(norms_md, "w", encoding="utf-8") as fh:
        fh.write(text)
    plot_norms(files, metrics_csv, report_cfg, backbones, norms_png, auto_k, probes)


def report_probe(probe_files, backbones: dict, reference: str | None, statistic: str, probe_md: str, probe_json: str,
                 probe_png: str, config_yaml: str | None = None) -> None:
    """results/probe.md, probe.json and probe.png: every backbone at step 0, before any training
    (:mod:`lsrbench.report.probe_report`, :mod:`lsrbench.report.probe_plots`)."""
    from lsrbench.provenance import write_json
    from lsrbench.report.probe_plots import plot_probe
    from lsrbench.report.probe_report import probe_markdown, probe_record

    results = read_probes(probe_files)
    with atomic_open(probe_md, "w", encoding="utf-8") as fh:
        fh.write(probe_markdown(results, backbones, reference, statistic))
    write_json(probe_json, probe_record(results, reference, statistic))
    plot_probe(results, backbones, reference, probe_png, statistic)


def report_probe_outcomes(probe_files, metrics_csv: str, report_cfg: dict, backbones: dict, reference: str | None,
                          statistic: str, outcomes_md: str, outcomes_json: str, config_yaml: str | None = None) -> None:
    """results/probe_outcomes.md and .json: the probe beside the trained outcome of every run, and
    the rank correlation between the probe's prediction and them (how far it can be trusted)."""
    from lsrbench.provenance import write_json
    from lsrbench.report.probe_report import probe_markdown, probe_outcomes, probe_record
    from lsrbench.report.results import read_metrics

    results = read_probes(probe_files)
    outcomes = probe_outcomes(results, read_metrics(metrics_csv), report_cfg, backbones, reference, statistic)
    with atomic_open(outcomes_md, "w", encoding="utf-8") as fh:
        fh.write(probe_markdown(results, backbones, reference, statistic, outcomes))
    write_json(outcomes_json, probe_record(results, reference, statistic, outcomes))


def report_tradeoff(metrics_csv: str, report_cfg: dict, backbones: dict, tradeoff_png: str, tradeoff_pdf: str,
                    config_yaml: str | None = None) -> None:
    from lsrbench.report.plots import plot_tradeoff

    plot_tradeoff(metrics_csv, report_cfg, backbones, tradeoff_png, tradeoff_pdf)


def report_loss_curves(log_files, backbones: dict, loss_curves_png: str, config_yaml: str | None = None) -> None:
    from lsrbench.report.plots import plot_loss_curves

    plot_loss_curves(keyed(log_files), backbones, loss_curves_png)


def report_claims(metrics_csv: str, perquery_files, norm_files, log_files, claims_cfg: dict, report_cfg: dict,
                  backbones: dict, claims_md: str, claims_json: str, reference_file=None,
                  config_yaml: str | None = None, probe_files=None) -> None:
    """Evaluate the config's claims on this run's numbers into claims.md and claims.json.
    ``reference_file``: ``report_cfg["reference"]`` as an input (the paper's numbers, its best k);
    ``probe_files``: the step-0 probes where the config runs them (a loss claim's start without a
    training log, the logit-scale head statistics)."""
    import pandas as pd

    from lsrbench.config.reference import read_reference
    from lsrbench.config.schema import with_defaults
    from lsrbench.model.train_log import read_train_log
    from lsrbench.report.claims import Evidence, evaluate_claims
    from lsrbench.report.claims_output import write_claims
    from lsrbench.report.results import read_metrics

    perquery = {key: pd.read_csv(path, sep="\t", dtype={"query_id": str}) for key, path in keyed(perquery_files).items()}
    probes = read_probes(probe_files)
    _, norms = _head_statistics(norm_files, probes)
    logs = {key: read_train_log(path) for key, path in keyed(log_files).items()}
    reference = read_reference((as_list(reference_file or []) or [None])[0])
    ev = Evidence(read_metrics(metrics_csv), perquery, norms, logs, backbones, report_cfg, reference, probes)
    claims_cfg = with_defaults("claims", claims_cfg)
    write_claims(evaluate_claims(ev, claims_cfg), claims_cfg, claims_md, claims_json)


def report_html(markdown: str, html: str) -> None:
    """An HTML page of a Markdown report, for `snakemake --report` (which shows HTML inline),
    titled by the report's first heading."""
    from lsrbench.report.render import html_page

    text = Path(markdown).read_text(encoding="utf-8")
    title = next((line.lstrip("# ").strip() for line in text.splitlines() if line.startswith("#")), Path(markdown).stem)
    with atomic_open(html, "w", encoding="utf-8") as fh:
        fh.write(html_page(text, title))
