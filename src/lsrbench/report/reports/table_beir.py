"""table_beir.md: every run on every evaluated dataset."""

from __future__ import annotations

from lsrbench.dag.report_rule import Report, Shown
from lsrbench.report.config_record import config_record, report_settings
from lsrbench.report.reports.chance import CHANCE_JSON, with_chance
from lsrbench.report.reports.collect import METRICS_CSV

__all__ = ["REPORT", "report_table_beir"]


def report_table_beir(metrics_csv: str, report_cfg: dict, backbones: dict, table_beir_md: str,
                      config_yaml: str | None = None, chance_json: str | None = None) -> None:
    from lsrbench.report.tables.beir import write_table_beir

    write_table_beir(metrics_csv, report_cfg, backbones, table_beir_md, config_record(config_yaml), chance_json)


def verify_table_beir(root, stated, trace) -> None:
    """table_beir.md made again from metrics.csv (raw: the table shows each seed's spread)."""
    import json

    from lsrbench.report.results import read_metrics
    from lsrbench.report.tables.beir import table_beir_text
    from lsrbench.report.verify.remake import compare_text, origin, stated_settings

    md, metrics_csv, chance = (root / f for f in (REPORT.outputs["table_beir_md"], METRICS_CSV, CHANCE_JSON))
    settings = stated_settings(stated, md)
    if not md.is_file() or settings is None:
        return
    record, config = settings
    s = report_settings(config)
    fresh = table_beir_text(read_metrics(str(metrics_csv)), s["report_cfg"], s["backbones"], record,
                            json.loads(chance.read_text(encoding="utf-8")) if chance.is_file() else None)
    compare_text(md, fresh, origin([metrics_csv], record), trace)


REPORT = Report(
    name="table_beir", job=report_table_beir,
    outputs={"table_beir_md": "table_beir.md"},
    files=with_chance, settings=report_settings,
    page=Shown("Tables", "table_beir", "Every run on every dataset", 7),
    stated_in=("table_beir_md",),
    verify=verify_table_beir,
)
