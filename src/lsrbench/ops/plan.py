"""``lsrbench plan``: what a config's grid will cost before it is submitted: jobs per rule from Snakemake's dry
run, dataset sizes, per-job compute from the calibration (start-up plus work), and the bill
(:mod:`lsrbench.ops.bill`)."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from lsrbench.config.evaluated import pool_depth_of
from lsrbench.names import split_run_name
from lsrbench.ops.bill import backbone_bill, bill_totals, read_records

log = logging.getLogger(__name__)

__all__ = ["make_plan", "plan_text", "estimate_jobs", "DEFAULT_FLOPS", "default_records", "check_publishable"]

# FLOPs assumed for a trained run's evaluate (SPLADE v2: about 1-4 on MS MARCO); an untrained
# head's would overstate the search.
DEFAULT_FLOPS = 4.0
TRAIN_RULES, INDEX_RULES, EVALUATE_RULES = ("train",), ("index", "index_queries"), ("evaluate",)


def make_plan(config: dict, config_files: list[str], *, command_line: dict | None = None, snakefile: str | None = None,
              workdir: str = ".", remaining: bool = False, calibrate_models: bool = True, steps: int = 3,
              passages: int = 256, batch: int | None = None, assume_flops: float = DEFAULT_FLOPS,
              threads: int | None = None, records: str | None = None, gpu: str = "H100", gpus: int = 8) -> dict:
    """The plan of the checked ``config`` loaded from ``config_files`` (with ``command_line``, the
    ``--config`` values), as data (see :func:`plan_text`)."""
    from lsrbench.dag.dryrun import dry_run, find_snakefile, job_counts, planned_jobs

    output = dry_run(find_snakefile(snakefile), config_files, workdir, forceall=not remaining,
                     config=command_line or None)
    jobs = planned_jobs(output)
    from lsrbench.dag.layout import Layout
    from lsrbench.stages import all_stages

    layout = Layout(config, str(Path(workdir) / "results"), stages=all_stages())  # where finished dataset jobs put their records
    datasets = _datasets(layout)
    calibrations = (_calibrations(config, config_files[-1], steps, passages, batch, layout, threads)
                    if calibrate_models else {})
    backbones = {name: estimate_jobs(config, name, jobs, datasets, calibrations.get(name), assume_flops)
                 for name in config["backbones"]}
    found = read_records(records)
    bills = {name: backbone_bill(config, name, _stage_jobs(jobs, name), datasets, found, gpu)
             for name in config["backbones"]}
    return {"config_files": list(config_files), "scope": "remaining jobs" if remaining else "whole grid",
            "jobs": job_counts(output), "datasets": datasets, "backbones": backbones, "totals": _totals(backbones),
            "assume_flops": assume_flops, "steps": config["recipe"]["steps"],
            "recipe_batch": config["recipe"]["batch_size"], "bill": bills, "bill_totals": bill_totals(bills),
            "records": {k: (v or {}).get("_path") for k, v in found.items() if k != "folder"}, "gpu": gpu, "gpus": gpus,
            "smoke_paper_batch": (found["smoke"] or {}).get("paper_batch")}


def check_publishable(plan: dict, plan_file: str) -> None:
    """One-line InputError when a calibration of ``plan`` was disturbed or does not say: its costs are not
    published."""
    from lsrbench.errors import InputError

    for name, b in plan.get("backbones", {}).items():
        c = b.get("calibration") or {}
        if not c or "error" in c:
            continue  # not calibrated: the page says 'not estimated'
        if c.get("noisy") is None:
            raise InputError(plan_file, f"backbones.{name}.calibration", "made before calibrations recorded whether "
                             "they were disturbed; make the plan again on a quiet machine (lsrbench plan --json)")
        if c["noisy"]:
            raise InputError(plan_file, f"backbones.{name}.calibration.noisy", f"calibrated under load ({'; '.join(c['noisy'])}): "
                             "its costs are not published; make the plan again on a quiet machine (lsrbench plan --json)")


def _stage_jobs(jobs: list, backbone: str) -> dict:
    mine = [(rule, w) for rule, w in jobs if "run" in w and split_run_name(w["run"])[0] == backbone]
    return {"train": [w for rule, w in mine if rule in TRAIN_RULES], "index": [(r, w) for r, w in mine if r in INDEX_RULES],
            "evaluate": [w for rule, w in mine if rule in EVALUATE_RULES]}


def default_records() -> str | None:
    """The checkout's benchmark/results (calibration records of the bill), None for an install without one."""
    from lsrbench.config.layers import workflow_dir

    folder = workflow_dir() / "benchmark" / "results"
    return str(folder) if folder.is_dir() else None


def _totals(backbones: dict) -> dict:
    total = {}
    for key in ("train", "index", "evaluate"):
        hours = [b[f"{key}_hours"] for b in backbones.values() if b[f"{key}_hours"] is not None]
        total[key] = sum(hours) if hours else None
    return total


def _datasets(layout) -> dict:
    """Size of every evaluated dataset: documents, evaluated documents (pooled: counted, else queries x depth),
    queries, and their source."""
    from lsrbench.data.sizes import dataset_size

    config = layout.config
    pool = pool_depth_of(config)
    out = {}
    for name in config["evaluation"]["datasets"]:
        info = (layout.get("pool", dataset=name).path("eval.json") if pool
                else layout.get("data", dataset=name).path("info.json"))
        size = dataset_size(name, config.get("mirror"), info)
        evaluated = size["evaluated_documents"]
        if evaluated is None and size["documents"] is not None:
            evaluated = min(size["documents"], size["queries"] * pool) if pool else size["documents"]
        out[name] = {**size, "evaluated_documents": evaluated}
    return out


def _calibrations(config: dict, config_file: str, steps: int, passages: int, batch, layout, threads=None) -> dict:
    from lsrbench.ops.calibrate import calibrate, calibration_texts, find_local_model

    def folders(name):  # what the index jobs encode (the pooled subset), then the whole collection
        pooled = [layout.get("pool", dataset=name).path("eval")] if pool_depth_of(config) else []
        return pooled + [layout.get("data", dataset=name).path("full")]

    docs, queries, texts = calibration_texts(config, passages, folders)
    done: dict[str, dict] = {}
    out = {}
    for name, entry in config["backbones"].items():
        path, why = find_local_model(entry, config.get("mirror"), config["cache_dir"], name, config_file)
        if path is None:
            out[name] = {"error": why}
            continue
        if path not in done:
            log.info("calibrating %s (%s)", name, path)
            done[path] = calibrate(path, entry, config["recipe"], config["evaluation"], docs, queries, texts,
                                   steps=steps, batch=batch, threads=threads).as_dict()
        out[name] = done[path]
    return out


def estimate_jobs(config: dict, backbone: str, jobs: list, datasets: dict, calibration: dict | None, flops: float) -> dict:
    """Jobs, work and hours of one backbone's train, index and evaluate jobs with ``calibration``."""
    from lsrbench.dag.evaluated import docs_dataset

    mine = [(rule, w) for rule, w in jobs if "run" in w and split_run_name(w["run"])[0] == backbone]
    train = [w for rule, w in mine if rule in TRAIN_RULES]
    index = [(rule, w) for rule, w in mine if rule in INDEX_RULES]
    evaluate = [w for rule, w in mine if rule in EVALUATE_RULES]
    sizes = {name: (d["evaluated_documents"] or 0, d["queries"] or 0) for name, d in datasets.items()}
    documents = sum(sizes[w["dataset"]][0] for rule, w in index if rule == "index")
    queries = sum(sizes[w["dataset"]][1] for _, w in index)
    postings = sum(sizes[docs_dataset(config, w["dataset"])][0] * sizes[w["dataset"]][1] for w in evaluate) * flops
    top_k = config["evaluation"]["top_k"]
    lines = sum(min(top_k, sizes[docs_dataset(config, w["dataset"])][0]) * sizes[w["dataset"]][1] for w in evaluate)
    out = {"train_jobs": len(train), "index_jobs": len(index), "evaluate_jobs": len(evaluate),
           "documents": documents, "queries": queries, "postings": postings, "result_lines": lines,
           "calibration": calibration,
           "train_hours": None, "index_hours": None, "evaluate_hours": None}
    if not calibration or "error" in calibration:
        return out
    recipe, starts = config["recipe"], _startups(calibration)
    if calibration["train_step_seconds"] is not None:
        per_step = calibration["train_step_seconds"] * recipe["batch_size"] / calibration["train_batch"]
        out["train_hours"] = len(train) * (recipe["steps"] * per_step + starts["train"]) / 3600
    calls = sum(2 if rule == "index" else 1 for rule, _ in index)  # documents and queries: one encode call each
    out["index_hours"] = (documents * calibration["document_seconds"] + queries * calibration["query_seconds"]
                          + calls * calibration.get("encode_call_seconds", 0.0) + len(index) * starts["index"]) / 3600
    if calibration["posting_seconds"] is not None:
        out["evaluate_hours"] = (postings * calibration["posting_seconds"] + lines * (calibration.get("result_seconds") or 0.0)
                                 + len(evaluate) * starts["evaluate"]) / 3600
    return out


def _startups(calibration: dict) -> dict:
    return {stage: calibration.get(f"{stage}_startup_seconds") or 0.0 for stage in ("train", "index", "evaluate")}


def plan_text(plan: dict) -> str:
    """The plan as Markdown tables: jobs per rule, dataset sizes, compute per backbone, assumptions."""
    from lsrbench.ops.bill_text import total_line

    total = total_line(plan) if plan.get("bill") else None
    lines = ([total, ""] if total else []) + [f"# lsrbench plan: {', '.join(plan['config_files'])} ({plan['scope']})", "",
                                              "## Jobs per rule (Snakemake's dry run)", ""]
    jobs = pd.DataFrame(sorted(plan["jobs"].items(), key=lambda kv: kv[0] == "total"), columns=["rule", "jobs"])
    lines += [jobs.to_markdown(index=False), "", "## Datasets", ""]
    sizes = pd.DataFrame([{"dataset": n, "documents": d["documents"], "evaluated documents": d["evaluated_documents"],
                           "queries": d["queries"], "from": d["source"]} for n, d in plan["datasets"].items()])
    lines += [sizes.to_markdown(index=False, floatfmt=".0f"), "", "## Compute", ""]
    lines += [_compute_table(plan), "", "## Assumptions", ""]
    lines += [f"- {line}" for line in _assumptions(plan)]
    if plan.get("bill"):
        from lsrbench.ops.bill_text import bill_lines

        lines += ["", *bill_lines(plan)]
    return "\n".join(lines) + "\n"


def _compute_table(plan: dict) -> str:
    rows = []
    for name, b in plan["backbones"].items():
        c = b["calibration"] or {}
        calibrated = bool(c) and "error" not in c
        rows.append({
            "backbone": name,
            "calibrated on": (f"{c['device']}: {c['source']}" + (f" (disturbed: {'; '.join(c['noisy'])})" if c.get("noisy") else "")
                              if calibrated else c.get("error", "not calibrated")),
            "train jobs": b["train_jobs"],
            "s/step": _num(c.get("train_step_seconds")) + (f" (batch {c['train_batch']})" if calibrated else ""),
            "train h": _num(b["train_hours"]),
            "index jobs": b["index_jobs"], "documents": f"{b['documents']:,}",
            "docs/s": _num(1 / c["document_seconds"] if calibrated and c["document_seconds"] else None),
            "index h": _num(b["index_hours"]),
            "evaluate jobs": b["evaluate_jobs"], "evaluate CPU-h": _num(b["evaluate_hours"]),
            "start-up s/job (model, evaluate)": (f"{_num(c.get('train_startup_seconds'))}, "
                                                 f"{_num(c.get('evaluate_startup_seconds'))}" if calibrated else "-"),
        })
    total = plan["totals"]
    rows.append({"backbone": "total (calibrated rows)", "calibrated on": "", "s/step": "", "docs/s": "",
                 "start-up s/job (model, evaluate)": "",
                 **{key: sum(r[key] for r in rows) for key in ("train jobs", "index jobs", "evaluate jobs")},
                 "documents": f"{sum(b['documents'] for b in plan['backbones'].values()):,}",
                 "train h": _num(total["train"]), "index h": _num(total["index"]),
                 "evaluate CPU-h": _num(total["evaluate"])})
    return pd.DataFrame(rows).to_markdown(index=False, disable_numparse=True)


def _num(value) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if value < 1000 else f"{value:,.0f}"


def _assumptions(plan: dict) -> list[str]:
    devices = sorted({b["calibration"]["device"] for b in plan["backbones"].values()
                      if b["calibration"] and "error" not in b["calibration"]})
    texts = sorted({b["calibration"]["texts"] for b in plan["backbones"].values()
                    if b["calibration"] and "error" not in b["calibration"]})
    return [
        f"Hours are device-hours on the device the calibration ran on ({', '.join(devices) or 'none'}): run "
        "`lsrbench plan` on a node like the ones that will run the jobs (train and index on a GPU: GPU-hours; "
        "evaluate runs on CPUs).",
        "Each train, index and evaluate job also pays its start-up once (interpreter, imports, model load: "
        "measured in a fresh interpreter), with the torch threads a job gets (one per local job; --threads).",
        f"train: {plan['steps']} steps per run x seconds per step, measured over a few steps after a warm-up step at "
        f"the recipe's batch of {plan['recipe_batch']} (scaled linearly when --train-batch timed another); "
        "data-parallel training divides the wall time, not the device-hours.",
        "index: documents (the evaluated corpus of each index job) and queries x seconds per text, plus the fixed "
        f"cost of each encode call, measured on {'; '.join(texts) or 'no passages'} at the evaluation's token "
        "lengths; real corpora differ in length (up to document_max_length tokens).",
        f"evaluate: queries x documents x FLOPs x seconds per posting of the exact search, with FLOPs = "
        f"{plan['assume_flops']:g} assumed for a trained model (--flops), the search timed on the untrained "
        "calibration model's vectors; plus queries x top_k retrieved lines x seconds per line (ir_measures, the "
        "TREC run file).",
        "Not estimated: dataset downloads and preparation, triplets, norm, bm25, pooled FLOPs and reports "
        "(I/O-bound or seconds).",
        "A backbone that is not on disk (no mirror copy, not in the hub cache) is not calibrated: "
        "`lsrbench prefetch --configfile ... --mirror DIR`, then `lsrbench plan --mirror DIR`.",
    ]
