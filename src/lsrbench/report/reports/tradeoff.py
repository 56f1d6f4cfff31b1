"""tradeoff.png/.pdf: effectiveness against FLOPs of every run, and tradeoff.data.json: what it shows."""

from __future__ import annotations

from lsrbench.dag.report_rule import Report, Shown
from lsrbench.report.config_record import config_record, report_settings
from lsrbench.report.reports.chance import CHANCE_JSON, with_chance
from lsrbench.report.reports.collect import METRICS_CSV

__all__ = ["REPORT", "report_tradeoff", "TRADEOFF_PNG"]

TRADEOFF_PNG = "tradeoff.png"


def report_tradeoff(metrics_csv: str, report_cfg: dict, backbones: dict, tradeoff_png: str, tradeoff_pdf: str,
                    data_json: str, config_yaml: str | None = None, chance_json: str | None = None) -> None:
    from lsrbench.report.figures.data import write_figure_record
    from lsrbench.report.figures.plots import plot_tradeoff

    data = plot_tradeoff(metrics_csv, report_cfg, backbones, tradeoff_png, tradeoff_pdf, chance_json)
    write_figure_record(data_json, config_record(config_yaml), [tradeoff_png, tradeoff_pdf],
                        {"metrics_csv": metrics_csv, **({"chance_json": chance_json} if chance_json else {})}, data)


def verify_tradeoff(root, stated, trace) -> None:
    """The figure's data made again from metrics.csv and chance.json; its images by SHA-256."""
    from lsrbench.report.figures.data import tradeoff_data
    from lsrbench.report.results import read_mean_metrics
    from lsrbench.report.tables.chance import read_chance
    from lsrbench.report.verify.remake import check_outputs, compare_data, origin, stated_record

    side, metrics_csv, chance_json = root / REPORT.outputs["data_json"], root / METRICS_CSV, root / CHANCE_JSON
    if (found := stated_record(stated, side, trace)) is None:
        return
    record, located, config_rec, config = found
    check_outputs(record, located, side, trace)
    s = report_settings(config)
    chance = read_chance(str(chance_json)) if chance_json.is_file() else None
    fresh = tradeoff_data(read_mean_metrics(str(metrics_csv)), s["report_cfg"], s["backbones"], chance)
    compare_data(side, record["data"], fresh, origin([metrics_csv, chance_json], config_rec), trace)


REPORT = Report(
    name="tradeoff", job=report_tradeoff,
    outputs={"tradeoff_png": TRADEOFF_PNG, "tradeoff_pdf": "tradeoff.pdf", "data_json": "tradeoff.data.json"},
    files=with_chance, settings=report_settings,
    shown={"tradeoff_png": Shown("Figures", "tradeoff", "Effectiveness against FLOPs", 3)},
    stated_in=("data_json",),
    verify=verify_tradeoff,
)
