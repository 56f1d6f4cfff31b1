"""probe_outcomes.md and .json: the probe beside the trained outcome of every run, and the rank
correlation between the probe's prediction and them (how far it can be trusted)."""

from __future__ import annotations

from lsrbench.atomic import atomic_open
from lsrbench.dag.report_rule import Report, Shown
from lsrbench.report.config_record import keyed, read_probes
from lsrbench.report.reports.collect import metrics
from lsrbench.report.reports.inputs import probe_files, probe_report_settings, uses_probe

__all__ = ["REPORT", "report_probe_outcomes"]


def report_probe_outcomes(probe_files, metrics_csv: str, report_cfg: dict, backbones: dict, reference: str | None,
                          statistic: str, outcomes_md: str, outcomes_json: str, config_yaml: str | None = None) -> None:
    from lsrbench.provenance import write_json
    from lsrbench.report.probe.report import probe_markdown, probe_outcomes, probe_record
    from lsrbench.report.results import read_metrics

    results = read_probes(keyed(probe_files))
    outcomes = probe_outcomes(results, read_metrics(metrics_csv), report_cfg, backbones, reference, statistic)
    with atomic_open(outcomes_md, "w", encoding="utf-8") as fh:
        fh.write(probe_markdown(results, backbones, reference, statistic, outcomes))
    write_json(outcomes_json, probe_record(results, reference, statistic, outcomes))


REPORT = Report(
    name="probe_outcomes", job=report_probe_outcomes,
    outputs={"outcomes_md": "probe_outcomes.md", "outcomes_json": "probe_outcomes.json"},
    files=metrics, keyed=lambda L: {"probe_files": probe_files(L)},
    settings=lambda c: {**probe_report_settings(c), "report_cfg": c["report"]},
    page=Shown("Probe", "probe_outcomes", "The probe beside the trained runs", 9),
    when=uses_probe,
)
