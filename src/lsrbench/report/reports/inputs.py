"""The run files reports read, as a layout addresses them: ``[key..., path]`` rows (``[backbone,
path]``, ``[run, k, (seed,) path]``, :func:`lsrbench.config.grid.run_keys`), read back by
:func:`lsrbench.report.config_record.keyed`."""

from __future__ import annotations

from lsrbench.config.evaluated import pooled_flops_datasets
from lsrbench.config.grid import probe_settings, run_keys, runs
from lsrbench.model.probe_names import LOGIT_STATISTICS
from lsrbench.names import POOLED, PROBE_K
from lsrbench.report.config_record import report_backbones

__all__ = ["run_metric_files", "norm_files", "log_files", "probe_files", "probes_read", "uses_probe", "logit_auto_k",
           "reference", "probe_report_settings", "bm25_metric_files"]


def run_metric_files(layout) -> list[list[str]]:
    """``[run, k, (seed,) dataset, path]`` of every model's metric file (pooled FLOPs: dataset ``POOLED``)."""
    config = layout.config
    rows = [[*key.values(), d, layout.get("evaluate", **key, dataset=d).path("metrics.tsv")]
            for key in run_keys(config) for d in config["evaluation"]["datasets"]]
    if pooled_flops_datasets(config):
        rows += [[*key.values(), POOLED, layout.get("pooled", **key).path("metrics.tsv")] for key in run_keys(config)]
    return rows


def bm25_metric_files(layout) -> list[str]:
    config = layout.config
    return ([layout.get("bm25", dataset=d).path("metrics.tsv") for d in config["evaluation"]["datasets"]]
            if config["report"]["bm25"] else [])


def norm_files(layout) -> list[list[str]]:
    return [[b, layout.get("norms", backbone=b).path("norms.json")] for b in layout.config["backbones"]]


def log_files(layout) -> list[list[str]]:
    return [[*key.values(), layout.get("train", **key).path("train_log.jsonl")] for key in run_keys(layout.config)]


def probe_files(layout) -> list[list[str]]:
    return [[b, layout.get("probe", backbone=b).path("probe.json")] for b in layout.config["backbones"]]


def uses_probe(config: dict) -> bool:
    """Whether the default target runs the step-0 probe (docs/probe.md): ``probe.with_grid`` where
    something is trained, a run of ``k: probe``, or a logit-scale statistic for ``auto_k`` or a claim."""
    statistics = [(config.get("auto_k") or {}).get("statistic")]
    statistics += [c.get("statistic") for c in (config.get("claims") or {}).get("list", [])]
    trains = not all(entry.get("evaluate_only") for entry in config["backbones"].values())
    return ((probe_settings(config)["with_grid"] and trains) or any(k == PROBE_K for _, k in runs(config))
            or any(s in LOGIT_STATISTICS for s in statistics))


def probes_read(layout, needed: bool | None = None) -> dict:
    """The probe files, where the config runs the probe (``needed``: only where the report needs them)."""
    wanted = uses_probe(layout.config) if needed is None else needed
    return {"probe_files": probe_files(layout)} if wanted else {}


def logit_auto_k(config: dict) -> bool:
    """k auto by a logit-scale statistic: Table 1 reads its value from the probes."""
    return (config.get("auto_k") or {}).get("statistic") in LOGIT_STATISTICS


def reference(config: dict) -> list[str]:
    """The paper's values shown beside ours, as an input: editing the file re-runs the report."""
    return [config["report"]["reference"]] if config["report"]["reference"] else []


def probe_report_settings(config: dict) -> dict:
    """The probe's reference backbone (``auto_k.reference``) and the statistic it crosses."""
    ref = (config.get("auto_k") or {}).get("reference")
    return {"backbones": report_backbones(config), "statistic": probe_settings(config)["statistic"],
            "reference": ref if ref in config["backbones"] else None}
