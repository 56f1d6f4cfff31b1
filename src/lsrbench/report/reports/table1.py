"""table1.md, the paper's Table 1 from this run, and table1.cells.json: every cell with the
metrics.csv rows it comes from, which ``lsrbench verify`` checks the table against."""

from __future__ import annotations

from lsrbench.dag.report_rule import Report, Shown
from lsrbench.report.config_record import config_record, keyed, report_settings
from lsrbench.report.reports.chance import with_chance
from lsrbench.report.reports.collect import METRICS_CSV
from lsrbench.report.reports.inputs import logit_auto_k, norm_files, probes_read, reference

__all__ = ["REPORT", "TABLE1_MD", "TABLE1_CELLS", "report_table1"]

TABLE1_MD, TABLE1_CELLS = "table1.md", "table1.cells.json"


def report_table1(metrics_csv: str, norm_files, report_cfg: dict, backbones: dict,
                  auto_k: dict | None, table1_md: str, cells_json: str, reference_file=None,
                  config_yaml: str | None = None, probe_files=None, chance_json: str | None = None) -> None:
    """``reference_file``: the paper's values (an input, so editing it re-makes the table);
    ``probe_files``: where k auto is read from the probes (a logit-scale ``auto_k.statistic``)."""
    from lsrbench.report.tables.table1 import write_table1

    write_table1(metrics_csv, report_cfg, backbones, table1_md, keyed(norm_files), auto_k, cells_json=cells_json,
                 config=config_record(config_yaml), probe_files=keyed(probe_files or []), chance_json=chance_json)


def verify_table1(root, stated, trace) -> None:
    """The table against its cells record, every cell recomputed from metrics.csv."""
    from lsrbench.report.verify.table1 import verify_table1 as check

    check(root / TABLE1_MD, root / TABLE1_CELLS, root / METRICS_CSV, trace)


REPORT = Report(
    name="table1", job=report_table1,
    outputs={"table1_md": TABLE1_MD, "cells_json": TABLE1_CELLS},
    files=lambda L: {**with_chance(L), "reference_file": reference(L.config)},
    keyed=lambda L: {"norm_files": norm_files(L), **probes_read(L, logit_auto_k(L.config))},
    settings=lambda c: {**report_settings(c), "auto_k": c.get("auto_k")},
    page=Shown("Tables", "table1", "Table 1", 1),
    stated_in=("table1_md", "cells_json"),
    verify=verify_table1,
)
