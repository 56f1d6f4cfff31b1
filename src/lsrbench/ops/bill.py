"""The bill of a grid before it runs (``lsrbench plan``): per backbone, GPU-hours of train and index (FLOPs over
a measured or assumed share of the peak), evaluate CPU-hours and disk per stage. No CPU time is scaled to a GPU.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

log = logging.getLogger(__name__)

__all__ = ["SHARES", "DOC_TERMS", "QUERY_TERMS", "read_records", "backbone_bill", "bill_totals"]

# Shares of the bf16 peak assumed where no GPU record measured one: a bracket, not a measurement.
SHARES = (0.5, 0.25)
# Non-zeros per trained passage and query, assumed for disk, with a factor-2 bracket.
DOC_TERMS, QUERY_TERMS = 200, 30
RUN_LINE_BYTES = 45  # a TREC run line ("q Q0 d rank score tag") where no smoke record measured it


def read_records(folder: str | Path | None) -> dict:
    """The calibration records in ``folder`` (benchmark/results): the CPU smoke, a GPU record, the
    search rate; each absent one None."""
    folder = Path(folder) if folder else None

    def load(name):
        path = folder / name if folder else None
        if path is None or not path.is_file():
            return None
        try:
            return {**json.loads(path.read_text(encoding="utf-8")), "_path": str(path)}
        except ValueError:
            log.warning("%s: not JSON, left out", path)
            return None

    return {"smoke": load("real_size_smoke.json"), "gpu": load("gpu-cuda.json"), "peers": load("peers-1m.json"),
            "peers_small": load("peers-100k.json"), "folder": str(folder) if folder else None}


def _search_ms(records: dict, documents: int) -> float | None:
    """CPU ms per query of the exact top-1000 search over ``documents``: the 1M rate, linear in N, never below
    the 100k rate."""
    def rate(record):
        row = next((r for r in record["rows"] if r["collection"] == "realistic"), None) if record else None
        return row["k"]["1000"]["systems"]["lsrbench"]["ms_per_query"] if row else None

    big, small = rate(records["peers"]), rate(records["peers_small"])
    if big is None:
        return None
    return max(small or 0.0, big * documents / 1e6)


def _tokens(config: dict, dataset: str) -> tuple[int, int]:
    from lsrbench.data.sizes import PUBLISHED_MEAN_WORDS
    from lsrbench.index.roofline import document_tokens

    ev = config["evaluation"]
    words = PUBLISHED_MEAN_WORDS.get(dataset)
    if words is None:
        return ev["query_max_length"], ev["document_max_length"]
    return document_tokens(words[0], ev["query_max_length"]), document_tokens(words[1], ev["document_max_length"])


def _flops(config: dict, model: str, train_jobs: int, index: list, sizes: dict) -> dict:
    from lsrbench.dag.evaluated import docs_dataset
    from lsrbench.index.roofline import forward_flops, train_step_flops

    recipe = config["recipe"]
    step = train_step_flops(model, recipe["batch_size"], recipe["query_max_length"], recipe["document_max_length"])
    total = 0
    for rule, w in index:
        q_tokens, d_tokens = _tokens(config, w["dataset"])
        docs, queries = sizes[w["dataset"]]
        total += queries * forward_flops(model, q_tokens)["total"]
        if rule == "index":
            total += docs * forward_flops(model, _tokens(config, docs_dataset(config, w["dataset"]))[1])["total"]
    return {"train_step": step, "train": train_jobs * recipe["steps"] * step, "index": total}


def _rate(records: dict, family_of_model: str, gpu: str) -> dict:
    """The GPU rate the hours use: a GPU record's peak and shares, else the datasheet peak and the assumed
    bracket."""
    from lsrbench.index.roofline import DATASHEET_BF16_TFLOPS

    record = records.get("gpu")
    if record and (record.get("peaks_tflops") or {}).get("bf16"):
        peak, how = record["peaks_tflops"]["bf16"], f"measured bf16 matmul peak ({record['_path']})"
    else:
        peak, how = DATASHEET_BF16_TFLOPS[gpu][0], f"datasheet: {DATASHEET_BF16_TFLOPS[gpu][1]}"
    measured = {}
    for case in (record or {}).get("encode") or []:
        if case.get("precision") == "bf16" and case.get("case") == f"random {family_of_model}, length 256":
            measured["index"] = case["tflops_lsrbench"] / peak
    for case in (record or {}).get("train") or []:
        if case.get("case") == f"random {family_of_model}" and case.get("batch_triplets") == 32:
            from lsrbench.index.roofline import train_step_flops

            shape = "modernbert" if family_of_model == "modernbert-base" else "bert"
            flops = train_step_flops(shape, 32, 32, 256)
            measured["train"] = flops / (case["sides"]["fused"]["s_per_step"] * peak * 1e12)
    return {"peak_tflops": peak, "peak": how, "measured_shares": measured}


def _hours(flops: float, rate: dict, stage: str) -> dict:
    from lsrbench.index.roofline import stage_hours

    out = {"bound": stage_hours(flops, rate["peak_tflops"])}
    share = rate["measured_shares"].get(stage)
    shares = {"measured": share} if share else {f"{s:g}": s for s in SHARES}
    out.update({f"at {name}": stage_hours(flops, rate["peak_tflops"], s) for name, s in shares.items()})
    return out


def _smoke_family(records: dict, model: str) -> dict | None:
    smoke = records.get("smoke") or {}
    return (smoke.get("families") or {}).get(model)


def _line_bytes(records: dict) -> tuple[float, str]:
    smoke = records.get("smoke") or {}
    collection = smoke.get("collection") or {}
    lines = collection.get("queries", 0) * min(smoke.get("evaluation", {}).get("top_k", 0), collection.get("documents", 0))
    sizes = [f["stages"]["evaluate"]["output_bytes"] for f in (smoke.get("families") or {}).values()]
    if lines and sizes:
        return max(sizes) / lines, f"measured: the smoke's evaluate folders, {max(sizes):,} bytes for {lines:,} lines"
    return float(RUN_LINE_BYTES), f"assumed ({RUN_LINE_BYTES} bytes)"


def _disk(config: dict, params: int, jobs: dict, sizes: dict, records: dict, vocab: int | None = None) -> dict:
    """Bytes each stage of one backbone keeps, one training's checkpoint, and one collapsed run's document index
    (``vocab`` given)."""
    from lsrbench.index.density import npz_bytes

    model = params * 4
    index_bytes = sum(npz_bytes(sizes[w["dataset"]][1], QUERY_TERMS) for _, w in jobs["index"])
    documents = [(w, sizes[w["dataset"]][0]) for rule, w in jobs["index"] if rule == "index"]
    index_bytes += sum(npz_bytes(n, DOC_TERMS) for _, n in documents)
    runs = len({(w["run"], w["k"], w.get("seed")) for w, _ in documents}) or 1
    collapsed = npz_bytes(sum(n for _, n in documents) / runs, vocab) if vocab and documents else None
    per_line, _ = _line_bytes(records)
    top_k = config["evaluation"]["top_k"]
    from lsrbench.dag.evaluated import docs_dataset

    lines = sum(sizes[w["dataset"]][1] * min(top_k, sizes[docs_dataset(config, w["dataset"])][0]) for w in jobs["evaluate"])
    return {"train": len(jobs["train"]) * model, "train_checkpoint": 3 * model if config["recipe"]["checkpoint_steps"] else 0,
            "index": int(index_bytes), "evaluate": int(lines * per_line),
            "index_one_run_every_term": None if collapsed is None else int(collapsed)}


def _local_entry(config: dict, backbone: str) -> dict:
    from lsrbench.model.checkpoint import local_model_folder

    entry = config["backbones"][backbone]
    try:
        folder = local_model_folder(entry, config.get("mirror"), config["cache_dir"], "the config", backbone)
    except Exception:  # noqa: BLE001 - a bad path is check-config's to report; here it is only not sized
        folder = None
    return {**entry, "model": folder} if folder else entry


def backbone_bill(config: dict, backbone: str, jobs: dict, datasets: dict, records: dict, gpu: str = "H100") -> dict:
    """The bill of one backbone: shape, FLOPs, GPU-hours, evaluate CPU-hours, disk per stage and its family's
    smoke record; ``jobs``: the dry run's jobs by stage."""
    from lsrbench.index import roofline
    from lsrbench.model.public_configs import backbone_config

    entry = _local_entry(config, backbone)
    sizes = {name: (d["evaluated_documents"] or 0, d["queries"] or 0) for name, d in datasets.items()}
    shape, where = backbone_config(entry)
    ref = str(entry["model"])
    out = {"shape": where, "parameters": None, "flops": None, "gpu_hours": None, "disk": None, "smoke": None}
    try:
        shape, where = roofline.shape_of(ref)
        params = roofline.parameters(ref)
        flops = _flops(config, ref, len(jobs["train"]), jobs["index"], sizes)
    except Exception as exc:  # noqa: BLE001 - any model that cannot be built on the meta device is not sized
        out["shape"] = f"{where} ({type(exc).__name__}: {' '.join(str(exc).split())[:160]})"
        return out
    family = "modernbert-base" if shape.get("model_type") == "modernbert" else "bert-base"
    rate = _rate(records, family, gpu)
    out.update(shape=where, parameters=params, flops=flops, rate=rate,
               gpu_hours={stage: _hours(flops[stage], rate, stage) for stage in ("train", "index")},
               disk=_disk(config, params, jobs, sizes, records, shape.get("vocab_size")), smoke=_smoke_summary(_smoke_family(records, str(config["backbones"][backbone]["model"]))))
    top = config["evaluation"]["top_k"]
    per_query = [(sizes[w["dataset"]][1], _search_ms(records, sizes[w["dataset"]][0])) for w in jobs["evaluate"]]
    out["evaluate_cpu_hours"] = (None if any(ms is None for _, ms in per_query)
                                 else sum(q * ms for q, ms in per_query) / 1000 / 3600)
    out["top_k"] = top
    return out


def _smoke_summary(family: dict | None) -> dict | None:
    """A family's CPU smoke as the plan shows it: peak memory and step seconds at the paper's batch, FLOP/s per
    CPU second the job got."""
    if not family:
        return None
    train = family["stages"]["train"]
    largest = train["batches"][max(train["batches"], key=int)]
    cpu = largest.get("steady_step_cpu_seconds")
    achieved = largest["step_flops"] / cpu / 1e9 if cpu else largest.get("achieved_gflops")
    return {"paper_batch": train["paper_batch"], "trained_at": sorted(int(b) for b in train["batches"]),
            "achieved_gflops": achieved,
            "index_documents_per_second": family["stages"]["index"].get("documents_per_second")}


def bill_totals(bills: dict) -> dict:
    """Sums over the backbones that could be sized (each stage, each share)."""
    sized = [b for b in bills.values() if b.get("gpu_hours")]
    total: dict = {"gpu_hours": {}, "disk": {}, "evaluate_cpu_hours": None, "backbones": len(sized)}
    for b in sized:
        for stage, hours in b["gpu_hours"].items():
            for at, h in hours.items():
                total["gpu_hours"].setdefault(stage, {}).setdefault(at, 0.0)
                total["gpu_hours"][stage][at] += h
        for part, n in b["disk"].items():
            if part == "index_one_run_every_term" and n:
                total["disk"][part] = max(total["disk"].get(part, 0), n)
            elif part not in ("train_checkpoint", "index_one_run_every_term"):
                total["disk"][part] = total["disk"].get(part, 0) + n
    cpu = [b["evaluate_cpu_hours"] for b in sized if b["evaluate_cpu_hours"] is not None]
    total["evaluate_cpu_hours"] = sum(cpu) if cpu else None
    return total
