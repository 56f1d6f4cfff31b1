"""probe.md, probe.json and probe.png: every backbone at step 0, before any training (what
``lsrbench probe`` makes)."""

from __future__ import annotations

from lsrbench.atomic import atomic_open
from lsrbench.dag.report_rule import Report, Shown
from lsrbench.report.config_record import keyed, read_probes
from lsrbench.report.reports.inputs import probe_files, probe_report_settings, uses_probe

__all__ = ["REPORT", "report_probe"]


def report_probe(probe_files, backbones: dict, reference: str | None, statistic: str, probe_md: str, probe_json: str,
                 probe_png: str, config_yaml: str | None = None) -> None:
    from lsrbench.provenance import write_json
    from lsrbench.report.probe.plots import plot_probe
    from lsrbench.report.probe.report import probe_markdown, probe_record

    results = read_probes(keyed(probe_files))
    with atomic_open(probe_md, "w", encoding="utf-8") as fh:
        fh.write(probe_markdown(results, backbones, reference, statistic))
    write_json(probe_json, probe_record(results, reference, statistic))
    plot_probe(results, backbones, reference, probe_png, statistic)


REPORT = Report(
    name="probe_report", job=report_probe,
    outputs={"probe_md": "probe.md", "probe_json": "probe.json", "probe_png": "probe.png"},
    keyed=lambda L: {"probe_files": probe_files(L)},
    settings=probe_report_settings,
    shown={"probe_png": Shown("Probe", "probe")},
    when=uses_probe,
)
