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
    one field (a backbone) as that string. With several training seeds a run's key holds its seed
    after k (``(run, k, seed, ...)``: :func:`lsrbench.config.grid.run_keys`)."""
    return {(row[0] if len(row) == 2 else tuple(row[:-1])): row[-1] for row in rows}


def report_collect(metric_files, metrics_csv: str, sources_json: str, config_yaml: str | None = None,
                   seeded_files=None) -> None:
    """metrics.csv from the current config's run files, and beside it ``sources_json``
    (metrics.sources.json): which files those were, since results/ also holds other configs' runs
    (``lsrbench verify`` traces the rows to exactly these), and the config snapshot they belong to.
    Every report reads ``config_yaml`` as an input: a changed setting re-makes it. With several
    training seeds, ``seeded_files`` (``[run, k, seed, dataset, path]`` rows) gives each run
    file's seed: metrics.csv's seed column, and ``seeds`` in metrics.sources.json."""
    from lsrbench.provenance import write_json
    from lsrbench.report.results import collect_metrics

    files = as_list(metric_files)
    seeds = {path: str(key[2]) for key, path in keyed(seeded_files).items()} if seeded_files else None
    collect_metrics(files, metrics_csv, seeds)
    write_json(sources_json, {"manifest": sources_json, "metrics_csv": metrics_csv, "sources": files,
                              "config": config_yaml, **({"seeds": seeds} if seeds else {})})


def report_table1(metrics_csv: str, norm_files, report_cfg: dict, backbones: dict,
                  auto_k: dict | None, table1_md: str, cells_json: str, reference_file=None,
                  config_yaml: str | None = None) -> None:
    """table1.md, and beside it ``cells_json`` (table1.cells.json): every cell with the metrics.csv rows
    it comes from, which ``lsrbench verify`` checks the table against. ``reference_file`` is
    ``report_cfg["reference"]`` as a Snakemake input (so that editing it re-runs the table)."""
    from lsrbench.report.table1 import write_table1

    write_table1(metrics_csv, report_cfg, backbones, table1_md, keyed(norm_files), auto_k, cells_json=cells_json)


def report_table_beir(metrics_csv: str, report_cfg: dict, backbones: dict, table_beir_md: str,
                      config_yaml: str | None = None) -> None:
    from lsrbench.report.tables import write_table_beir

    write_table_beir(metrics_csv, report_cfg, backbones, table_beir_md)


def _read_norms(norm_files) -> tuple[dict[str, str], dict[str, dict]]:
    files = keyed(norm_files)
    return files, {b: json.loads(Path(p).read_text(encoding="utf-8")) for b, p in files.items()}


def report_norms(norm_files, metrics_csv: str, report_cfg: dict, backbones: dict,
                 auto_k: dict | None, norms_md: str, norms_png: str, config_yaml: str | None = None) -> None:
    from lsrbench.report.plots import plot_norms
    from lsrbench.report.results import read_mean_metrics
    from lsrbench.report.tables import auto_k_markdown, norms_markdown

    files, norms = _read_norms(norm_files)
    text = norms_markdown(files, backbones) + auto_k_markdown(read_mean_metrics(metrics_csv), report_cfg, backbones, norms,
                                                              auto_k)
    with atomic_open(norms_md, "w", encoding="utf-8") as fh:
        fh.write(text)
    plot_norms(files, metrics_csv, report_cfg, backbones, norms_png, auto_k)


def report_tradeoff(metrics_csv: str, report_cfg: dict, backbones: dict, tradeoff_png: str, tradeoff_pdf: str,
                    config_yaml: str | None = None) -> None:
    from lsrbench.report.plots import plot_tradeoff

    plot_tradeoff(metrics_csv, report_cfg, backbones, tradeoff_png, tradeoff_pdf)


def _train_logs(log_files) -> dict[tuple[str, str], list[dict]]:
    """(run, k) -> its training log (with several seeds, the mean over seeds step by step)."""
    from lsrbench.model.train_log import read_train_log
    from lsrbench.report.seeds import by_model, mean_train_logs

    return {key: mean_train_logs([read_train_log(p) for p in paths]) for key, paths in by_model(keyed(log_files), 2).items()}


def report_loss_curves(log_files, backbones: dict, loss_curves_png: str, config_yaml: str | None = None) -> None:
    from lsrbench.report.plots import plot_loss_curves

    plot_loss_curves(_train_logs(log_files), backbones, loss_curves_png, seeds=_n_seeds(log_files))


def _n_seeds(log_files) -> int:
    """How many training seeds ``[run, k, (seed,) path]`` rows come from."""
    from lsrbench.names import NO_SEED

    return len({row[2] for row in log_files if len(row) == 4 and row[2] != NO_SEED}) or 1


def report_claims(metrics_csv: str, perquery_files, norm_files, log_files, claims_cfg: dict, report_cfg: dict,
                  backbones: dict, claims_md: str, claims_json: str, reference_file=None,
                  config_yaml: str | None = None) -> None:
    """Evaluate the config's claims on this run's numbers into claims.md and claims.json.
    ``reference_file``: ``report_cfg["reference"]`` as an input (the paper's numbers, its best k)."""
    import pandas as pd

    from lsrbench.config.reference import read_reference
    from lsrbench.config.schema import with_defaults
    from lsrbench.report.claims import Evidence, evaluate_claims
    from lsrbench.report.claims_output import write_claims
    from lsrbench.report.results import read_metrics
    from lsrbench.report.seeds import by_model, mean_perquery, per_seed, seed_mean, seeds_of

    # with several seeds, each query's score averaged over the seeds (lsrbench.report.seeds)
    perquery = {key: mean_perquery([pd.read_csv(p, sep="\t", dtype={"query_id": str}) for p in paths])
                for key, paths in by_model(keyed(perquery_files), 3).items()}
    _, norms = _read_norms(norm_files)
    reference = read_reference((as_list(reference_file or []) or [None])[0])
    metrics = read_metrics(metrics_csv)
    ev = Evidence(seed_mean(metrics), perquery, norms, _train_logs(log_files), backbones, report_cfg, reference,
                  seed_metrics=per_seed(metrics))
    claims_cfg = with_defaults("claims", claims_cfg)
    write_claims(evaluate_claims(ev, claims_cfg), claims_cfg, claims_md, claims_json, seeds=seeds_of(metrics))


def report_html(markdown: str, html: str) -> None:
    """An HTML page of a Markdown report, for `snakemake --report` (which shows HTML inline),
    titled by the report's first heading."""
    from lsrbench.report.render import html_page

    text = Path(markdown).read_text(encoding="utf-8")
    title = next((line.lstrip("# ").strip() for line in text.splitlines() if line.startswith("#")), Path(markdown).stem)
    with atomic_open(html, "w", encoding="utf-8") as fh:
        fh.write(html_page(text, title))
