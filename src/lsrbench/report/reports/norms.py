"""norms.md and norms.png: the head norms of every backbone (with the probe's logit scale at k = 1
where the config runs the probe), and norms.data.json: what the figure shows, for ``lsrbench verify``."""

from __future__ import annotations

from lsrbench.atomic import atomic_open
from lsrbench.dag.report_rule import Report, Shown
from lsrbench.report.config_record import config_record, keyed, read_probes, report_settings
from lsrbench.report.reports.collect import METRICS_CSV, metrics
from lsrbench.report.reports.inputs import norm_files, probes_read

__all__ = ["REPORT", "report_norms"]


def report_norms(norm_files, metrics_csv: str, report_cfg: dict, backbones: dict, auto_k: dict | None,
                 norms_md: str, norms_png: str, data_json: str, config_yaml: str | None = None,
                 probe_files=None) -> None:
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


def verify_norms(root, stated, trace) -> None:
    """norms.md and the figure's data made again from the head-norm (and probe) files they name."""
    import json

    from lsrbench.model.auto_k import head_statistics, probe_at_k1
    from lsrbench.report.figures.data import norms_data
    from lsrbench.report.results import read_mean_metrics
    from lsrbench.report.tables.norms import norms_report_text
    from lsrbench.report.tables.table1 import auto_k_values
    from lsrbench.report.verify.remake import check_outputs, compare_data, compare_text, origin, run_files, stated_record

    md, side, metrics_csv = root / REPORT.outputs["norms_md"], root / REPORT.outputs["data_json"], root / METRICS_CSV
    if (found := stated_record(stated, side, trace)) is None:
        return
    record, located, config_rec, config = found
    check_outputs(record, located, side, trace)
    files = run_files(record["sources"].get("norm_files"), located, side, trace)
    probe_files = run_files(record["sources"].get("probe_files"), located, side, trace)
    if files is None or probe_files is None:
        return
    probes = read_probes({b: str(p) for b, p in probe_files.items()})
    s, metrics_now = report_settings(config), read_mean_metrics(str(metrics_csv))
    where = origin([metrics_csv, *files.values(), *probe_files.values()], config_rec)
    if md.is_file() and md in stated:
        fresh = norms_report_text({b: str(p) for b, p in files.items()}, metrics_now, s["report_cfg"], s["backbones"],
                                  config.get("auto_k"), stated[md][0], probes)
        compare_text(md, fresh, where, trace)
    statistics = {b: head_statistics(json.loads(p.read_text(encoding="utf-8")), probe_at_k1(probes, b))
                  for b, p in files.items()}
    fresh_data = norms_data(statistics, metrics_now, s["report_cfg"], auto_k_values(statistics, config.get("auto_k")))
    compare_data(side, record["data"], fresh_data, where, trace)


REPORT = Report(
    name="norms_report", job=report_norms,
    outputs={"norms_md": "norms.md", "norms_png": "norms.png", "data_json": "norms.data.json"},
    files=metrics, keyed=lambda L: {"norm_files": norm_files(L), **probes_read(L)},
    settings=lambda c: {**report_settings(c), "auto_k": c.get("auto_k")},
    shown={"norms_png": Shown("Head norms", "norms", "Head norms (figure)", 6)},
    page=Shown("Head norms", "norms", "Head norms (table)", 5),
    stated_in=("norms_md", "data_json"),
    verify=verify_norms,
)
