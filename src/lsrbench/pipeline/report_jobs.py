"""The job function of every report rule (:data:`lsrbench.dag.reports.REPORTS`, by its ``job``): each reads cached run outputs
only (metrics, per-query scores, head norms, training logs) and writes one report, so deleting a
report re-runs just its rule. Run files come by key (:func:`lsrbench.report.config_record.keyed`), never by
position."""

from __future__ import annotations

from pathlib import Path

from lsrbench.atomic import atomic_open
from lsrbench.dag.stage import as_list
from lsrbench.report.config_record import config_record, keyed, read_probes


def report_collect(metric_files, metrics_csv: str, sources_json: str, config_yaml: str | None = None,
                   seeded_files=None) -> None:
    """metrics.csv from the current config's run files, and beside it ``sources_json``
    (metrics.sources.json): which files those were, since results/ also holds other configs' runs
    (``lsrbench verify`` traces the rows to exactly these), and the config snapshot they belong to.
    Every report reads ``config_yaml`` as an input: a changed setting re-makes it, and says which
    config it was made with (:mod:`lsrbench.report.config_record`). With several training seeds,
    ``seeded_files`` (``[run, k, seed, dataset, path]`` rows) gives each run file's seed:
    metrics.csv's seed column, and ``seeds`` in metrics.sources.json."""
    from lsrbench.provenance import write_json
    from lsrbench.report.results import collect_metrics

    files = as_list(metric_files)
    seeds = {path: str(key[2]) for key, path in keyed(seeded_files).items()} if seeded_files else None
    collect_metrics(files, metrics_csv, seeds)
    write_json(sources_json, {"manifest": sources_json, "metrics_csv": metrics_csv, "sources": files,
                              "config": config_record(config_yaml), **({"seeds": seeds} if seeds else {})})


def report_chance(data_dirs, infos, measures: dict, chance_json: str, config_yaml: str | None = None) -> None:
    """results/chance.json: per evaluated dataset, its evaluated documents and queries and what a
    random ranking of them scores on each measure (:mod:`lsrbench.report.tables.chance`), with the
    files it was computed from."""
    from lsrbench.report.tables.chance import chance_record, write_chance

    record = chance_record(keyed(data_dirs), keyed(infos), measures)
    write_chance(chance_json, {**record, "config": config_record(config_yaml), "manifest": chance_json,
                               "sources": {"data_dirs": data_dirs, "infos": infos, "measures": measures}})


def report_table1(metrics_csv: str, norm_files, report_cfg: dict, backbones: dict,
                  auto_k: dict | None, table1_md: str, cells_json: str, reference_file=None,
                  config_yaml: str | None = None, probe_files=None, chance_json: str | None = None) -> None:
    """table1.md, and beside it ``cells_json`` (table1.cells.json): every cell with the metrics.csv rows
    it comes from, which ``lsrbench verify`` checks the table against. ``reference_file`` is
    ``report_cfg["reference"]`` as a Snakemake input (so that editing it re-runs the table);
    ``probe_files``: where k auto is read from the probes (a logit-scale ``auto_k.statistic``)."""
    from lsrbench.report.tables.table1 import write_table1

    write_table1(metrics_csv, report_cfg, backbones, table1_md, keyed(norm_files), auto_k, cells_json=cells_json,
                 config=config_record(config_yaml), probe_files=keyed(probe_files or []), chance_json=chance_json)


def report_table_beir(metrics_csv: str, report_cfg: dict, backbones: dict, table_beir_md: str,
                      config_yaml: str | None = None, chance_json: str | None = None) -> None:
    from lsrbench.report.tables.beir import write_table_beir

    write_table_beir(metrics_csv, report_cfg, backbones, table_beir_md, config_record(config_yaml), chance_json)


def report_norms(norm_files, metrics_csv: str, report_cfg: dict, backbones: dict, auto_k: dict | None,
                 norms_md: str, norms_png: str, data_json: str, config_yaml: str | None = None,
                 probe_files=None) -> None:
    """norms.md, norms.png and what the figure shows (``data_json``, with the files read): the head
    norms, with the probe's logit scale at k = 1 where the config runs the probe (``probe_files``)."""
    from lsrbench.report.figures.data import write_figure_record
    from lsrbench.report.figures.plots import plot_norms
    from lsrbench.report.results import read_mean_metrics
    from lsrbench.report.tables.norms import norms_report_text

    files, config, probes = keyed(norm_files), config_record(config_yaml), read_probes(keyed(probe_files or []))
    with atomic_open(norms_md, "w", encoding="utf-8") as fh:
        fh.write(norms_report_text(files, read_mean_metrics(metrics_csv), report_cfg, backbones, auto_k, config, probes))
    data = plot_norms(files, metrics_csv, report_cfg, backbones, norms_png, auto_k, probes)
    write_figure_record(data_json, config, [norms_md, norms_png],
                        {"metrics_csv": metrics_csv, "norm_files": norm_files,
                         **({"probe_files": probe_files} if probe_files else {})}, data)


def report_probe(probe_files, backbones: dict, reference: str | None, statistic: str, probe_md: str, probe_json: str,
                 probe_png: str, config_yaml: str | None = None) -> None:
    """results/probe.md, probe.json and probe.png: every backbone at step 0, before any training
    (:mod:`lsrbench.report.probe.report`, :mod:`lsrbench.report.probe.plots`)."""
    from lsrbench.provenance import write_json
    from lsrbench.report.probe.plots import plot_probe
    from lsrbench.report.probe.report import probe_markdown, probe_record

    results = read_probes(keyed(probe_files))
    with atomic_open(probe_md, "w", encoding="utf-8") as fh:
        fh.write(probe_markdown(results, backbones, reference, statistic))
    write_json(probe_json, probe_record(results, reference, statistic))
    plot_probe(results, backbones, reference, probe_png, statistic)


def report_probe_outcomes(probe_files, metrics_csv: str, report_cfg: dict, backbones: dict, reference: str | None,
                          statistic: str, outcomes_md: str, outcomes_json: str, config_yaml: str | None = None) -> None:
    """results/probe_outcomes.md and .json: the probe beside the trained outcome of every run, and
    the rank correlation between the probe's prediction and them (how far it can be trusted)."""
    from lsrbench.provenance import write_json
    from lsrbench.report.probe.report import probe_markdown, probe_outcomes, probe_record
    from lsrbench.report.results import read_metrics

    results = read_probes(keyed(probe_files))
    outcomes = probe_outcomes(results, read_metrics(metrics_csv), report_cfg, backbones, reference, statistic)
    with atomic_open(outcomes_md, "w", encoding="utf-8") as fh:
        fh.write(probe_markdown(results, backbones, reference, statistic, outcomes))
    write_json(outcomes_json, probe_record(results, reference, statistic, outcomes))


def report_tradeoff(metrics_csv: str, report_cfg: dict, backbones: dict, tradeoff_png: str, tradeoff_pdf: str,
                    data_json: str, config_yaml: str | None = None, chance_json: str | None = None) -> None:
    from lsrbench.report.figures.data import write_figure_record
    from lsrbench.report.figures.plots import plot_tradeoff

    data = plot_tradeoff(metrics_csv, report_cfg, backbones, tradeoff_png, tradeoff_pdf, chance_json)
    write_figure_record(data_json, config_record(config_yaml), [tradeoff_png, tradeoff_pdf],
                        {"metrics_csv": metrics_csv, **({"chance_json": chance_json} if chance_json else {})}, data)


def report_loss_curves(log_files, backbones: dict, batch_size: int, loss_curves_png: str, data_json: str,
                       config_yaml: str | None = None) -> None:
    """The loss curves, with the chance level of ``batch_size`` (the recipe's) triplets a step;
    with several training seeds, each curve the mean over seeds step by step."""
    from lsrbench.report.figures.data import write_figure_record
    from lsrbench.report.figures.plots import plot_loss_curves
    from lsrbench.report.seeds import read_mean_train_logs

    data = plot_loss_curves(read_mean_train_logs(keyed(log_files)), backbones, loss_curves_png, batch_size=batch_size, seeds=_n_seeds(log_files))
    write_figure_record(data_json, config_record(config_yaml), [loss_curves_png], {"log_files": log_files}, data)


def _n_seeds(log_files) -> int:
    """How many training seeds ``[run, k, (seed,) path]`` rows come from."""
    from lsrbench.names import NO_SEED

    return len({row[2] for row in log_files if len(row) == 4 and row[2] != NO_SEED}) or 1


def report_claims(metrics_csv: str, perquery_files, norm_files, log_files, claims_cfg: dict, report_cfg: dict,
                  backbones: dict, claims_md: str, claims_json: str, reference_file=None,
                  config_yaml: str | None = None, probe_files=None, chance_json: str | None = None) -> None:
    """Evaluate the config's claims on this run's numbers into claims.md and claims.json (with the
    files they were evaluated from, which ``lsrbench verify`` evaluates them again from).
    ``reference_file``: ``report_cfg["reference"]`` as an input (the paper's numbers, its best k);
    ``probe_files``: the step-0 probes where the config runs them (a loss claim's start without a
    training log, the logit-scale head statistics)."""
    from lsrbench.config.schema import with_defaults
    from lsrbench.report.claims.engine import evaluate_claims
    from lsrbench.report.claims.output import evidence_seeds, read_evidence, write_claims

    reference = (as_list(reference_file or []) or [None])[0]
    ev = read_evidence(metrics_csv, keyed(perquery_files), keyed(norm_files), keyed(log_files), backbones, report_cfg,
                       reference, keyed(probe_files or []), chance_json)
    claims_cfg = with_defaults("claims", claims_cfg)
    sources = {"metrics_csv": metrics_csv, "reference_file": reference, "perquery_files": perquery_files,
               "norm_files": norm_files, "log_files": log_files, **({"probe_files": probe_files} if probe_files else {}),
               **({"chance_json": chance_json} if chance_json else {})}
    write_claims(evaluate_claims(ev, claims_cfg), claims_cfg, claims_md, claims_json, config_record(config_yaml),
                 sources, evidence_seeds(metrics_csv), ev.chance)


def report_html(markdown: str, html: str, config_yaml: str | None = None) -> None:
    """An HTML page of a Markdown report, for `snakemake --report` (which shows HTML inline),
    titled by the report's first heading. ``config_yaml``: the config snapshot of the report, an
    input so that the page's manifest names it (a page is of one config, as its report is)."""
    from lsrbench.report.render import report_page

    with atomic_open(html, "w", encoding="utf-8") as fh:
        fh.write(report_page(Path(markdown).read_text(encoding="utf-8"), Path(markdown).stem))


# a report rule's job name -> its function (lsrbench.pipeline.job_runner runs it)
REPORT_JOBS = {f.__name__: f for f in (report_collect, report_chance, report_table1, report_table_beir, report_norms,
                                       report_tradeoff, report_loss_curves, report_claims, report_html, report_probe,
                                       report_probe_outcomes)}
