"""results/chance.json: what a random ranking of the evaluated documents scores, per dataset and
measure (the tables' and the claims' chance levels)."""

from __future__ import annotations

from lsrbench.config.evaluated import dataset_measures
from lsrbench.dag.evaluated import eval_dir, eval_info
from lsrbench.dag.report_rule import Report
from lsrbench.report.config_record import config_record, keyed
from lsrbench.report.reports.collect import metrics

__all__ = ["REPORT", "CHANCE_JSON", "report_chance", "with_chance"]

CHANCE_JSON = "chance.json"


def report_chance(data_dirs, infos, measures: dict, chance_json: str, config_yaml: str | None = None) -> None:
    """chance.json from the evaluated data folders, with the files it was computed from."""
    from lsrbench.report.tables.chance import chance_record, write_chance

    record = chance_record(keyed(data_dirs), keyed(infos), measures)
    write_chance(chance_json, {**record, "config": config_record(config_yaml), "manifest": chance_json,
                               "sources": {"data_dirs": data_dirs, "infos": infos, "measures": measures}})


def _evaluated_data(layout) -> dict:
    datasets = layout.config["evaluation"]["datasets"]
    return {"data_dirs": [[d, eval_dir(layout, d)] for d in datasets], "infos": [[d, eval_info(layout, d)] for d in datasets]}


def with_chance(layout) -> dict:
    """metrics.csv and what a random ranking scores on the evaluated data (results/chance.json)."""
    return {**metrics(layout), "chance_json": f"{layout.results}/{CHANCE_JSON}"}


def verify_chance(root, stated, trace) -> None:
    """chance.json computed again from the evaluated data folders it names."""
    from lsrbench.report.tables.chance import chance_record
    from lsrbench.report.verify.remake import compare_data, origin, read_record

    side = root / CHANCE_JSON
    if not side.is_file() or (read := read_record(side, trace)) is None:
        return
    record, located = read
    sources = record.get("sources") or {}
    dirs = {key: str(located(path)) for key, path in keyed(sources.get("data_dirs") or []).items()}
    infos = {key: str(located(path)) for key, path in keyed(sources.get("infos") or []).items()}
    fresh = chance_record(dirs, infos, sources.get("measures") or {})
    compare_data(side, record["datasets"], fresh["datasets"], origin([*dirs.values()], record["config"]), trace)


REPORT = Report(
    name="chance", job=report_chance,
    outputs={"chance_json": CHANCE_JSON},
    keyed=_evaluated_data,
    settings=lambda c: {"measures": {d: dataset_measures(c, d) for d in c["evaluation"]["datasets"]}},
    verify=verify_chance,
)
