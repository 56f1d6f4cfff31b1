"""The bill of ``lsrbench plan`` as Markdown: a row per backbone, the totals and the assumptions."""

from __future__ import annotations

import pandas as pd

from lsrbench.ops.bill import DOC_TERMS, QUERY_TERMS, SHARES

__all__ = ["bill_lines", "total_line", "gpu_hours_band", "backbone_band"]


def _h(value) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if value < 1000 else f"{value:,.0f}"


def _hours(hours: dict | None) -> str:
    return " / ".join(_h(v) for v in hours.values()) if hours else "-"


def _bytes(n) -> str:
    if n is None:
        return "-"
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n / 1e3:.3g} kB"


def _smoke(smoke: dict | None) -> str:
    if not smoke:
        return "-"
    at = smoke["paper_batch"]
    if "peak_rss_gib" not in at:
        return at["how"]
    batches = ", ".join(str(b) for b in smoke.get("trained_at") or [])
    how = "measured" if at["how"] == "measured" else f"extrapolated from batches {batches}"
    seconds = at.get("step_cpu_seconds", at.get("step_seconds"))
    return f"{seconds:.3g} s, {at['peak_rss_gib']:.3g} GiB ({how})"


def _row(name: str, b: dict) -> dict:
    disk = b.get("disk") or {}
    hours = b.get("gpu_hours") or {}
    return {"backbone": name, "shape from": b["shape"],
            "params": f"{b['parameters'] / 1e6:.1f}M" if b.get("parameters") else "-",
            "train GPU-h": _hours(hours.get("train")), "index GPU-h": _hours(hours.get("index")),
            "evaluate CPU-h": _h(b.get("evaluate_cpu_hours")),
            "disk: models": _bytes(disk.get("train")), "checkpoint while training": _bytes(disk.get("train_checkpoint")),
            "disk: index": _bytes(disk.get("index")), "disk: run files": _bytes(disk.get("evaluate")),
            "CPU smoke at the paper's batch: s/step (CPU), peak memory": _smoke(b.get("smoke"))}


def _header(plan: dict) -> str:
    rates = [b["rate"] for b in plan["bill"].values() if b.get("rate")]
    measured = sorted({stage for r in rates for stage in r["measured_shares"]})
    shares = " / ".join(f"at {s:.0%}" for s in SHARES)
    return (f"GPU-hours: at 100 % of the bf16 peak (the floor) / {shares} of it (assumed)"
            + (f"; {', '.join(measured)}: at the measured share instead" if measured else ""))


def backbone_band(bill: dict) -> tuple[float, float, set[str]] | None:
    """One backbone's train + index GPU-hours, low and high (a measured share down to half of it, else
    :data:`SHARES`), and how each stage got them ("measured", "assumed"); None where it was not sized."""
    low = high = 0.0
    hows: set[str] = set()
    for stage in ("train", "index"):
        hours = (bill.get("gpu_hours") or {}).get(stage)
        if not hours:
            continue
        if "at measured" in hours:
            low, high = low + hours["at measured"], high + 2 * hours["at measured"]
            hows.add("measured")
        else:
            low, high = low + hours[f"at {SHARES[0]:g}"], high + hours[f"at {SHARES[-1]:g}"]
            hows.add("assumed")
    return (low, high, hows) if hows else None


def gpu_hours_band(plan: dict) -> tuple[float, float, str] | None:
    """Summed train and index GPU-hours of every backbone (:func:`backbone_band`), low and high, and the
    band's source."""
    bands = [band for band in map(backbone_band, plan["bill"].values()) if band]
    if not bands:
        return None
    low, high = sum(b[0] for b in bands), sum(b[1] for b in bands)
    hows = set().union(*(b[2] for b in bands))
    measured, assumed = "measured" in hows, "assumed" in hows
    how = ("measured share of the peak (benchmark/gpu.sh record) to half of it (assumed)" if measured and not assumed
           else f"{' to '.join(f'{s:.0%}' for s in SHARES)} of the bf16 peak, assumed: no benchmark/gpu.sh record"
           if not measured else "measured share where a gpu.sh record has the family, else assumed")
    return low, high, how


def total_line(plan: dict) -> str | None:
    """The plan's first line (total GPU-hours, disk, days on N GPUs), then the band's source and one collapsed
    run's index."""
    band = gpu_hours_band(plan)
    if band is None:
        return None
    low, high, how = band
    disk = plan["bill_totals"]["disk"]
    kept = sum(n for part, n in disk.items() if part != "index_one_run_every_term")
    gpus = plan.get("gpus") or 1
    line = (f"total: {_h(low)}-{_h(high)} GPU-hours ({plan['gpu']}), {kept / 1e12:.3g} TB disk, about "
            f"{high / gpus / 24:.2g} days on {gpus} GPUs (the band: {how}; days at its high end")
    if disk.get("index_one_run_every_term"):
        line += (f"; one run collapsed to every vocabulary term would need {_bytes(disk['index_one_run_every_term'])} "
                 "for its documents' index alone: the index stage stops it on its sample")
    return line + ")"


def bill_lines(plan: dict) -> list[str]:
    """The bill section of the plan."""
    rows = [_row(name, b) for name, b in plan["bill"].items()]
    total = plan["bill_totals"]
    rows.append({"backbone": f"total ({total['backbones']} sized)", "shape from": "", "params": "",
                 "train GPU-h": _hours(total["gpu_hours"].get("train")),
                 "index GPU-h": _hours(total["gpu_hours"].get("index")),
                 "evaluate CPU-h": _h(total["evaluate_cpu_hours"]), "disk: models": _bytes(total["disk"].get("train")),
                 "checkpoint while training": "", "disk: index": _bytes(total["disk"].get("index")),
                 "disk: run files": _bytes(total["disk"].get("evaluate")),
                 "CPU smoke at the paper's batch: s/step (CPU), peak memory": ""})
    lines = [f"## The bill: GPU-hours and disk per backbone ({plan['gpu']})", "", _header(plan), "",
             pd.DataFrame(rows).to_markdown(index=False, disable_numparse=True), "", "### Assumptions and uncertainty",
             ""]
    return lines + [f"- {line}" for line in _bill_assumptions(plan)]


def _spread(plan: dict) -> str:
    """The CPU smoke's achieved FLOP/s per family and their spread: how far FLOPs alone misjudge one
    family's time against another's."""
    seen = {b["shape"]: b["smoke"]["achieved_gflops"] for b in plan["bill"].values()
            if b.get("smoke") and b["smoke"].get("achieved_gflops")}
    if not seen:
        return ("no CPU smoke record (benchmark/real_size_smoke.py): how well FLOPs predict each family's time is "
                "not measured")
    lo, hi = min(seen.values()), max(seen.values())
    return (f"FLOPs as the cost of a family: the CPU smoke (real sizes, the paper's lengths) reached {lo:.3g}-{hi:.3g} "
            f"GFLOP/s over {len(seen)} families, a spread of x{hi / lo:.2f}: one family's hours against another's are "
            "uncertain by about that factor (FLOPs miss the memory-bound work: normalisations, activations, the "
            "optimiser's update of the vocabulary-wide head)")


def _smoke_batch(note: dict | None) -> str:
    if not note:
        return "Measured at the paper's batch, or extrapolated linearly from the smaller batches the record ran."
    if "why" not in note:
        return f"Measured at the paper's batch ({note['batch']})."
    return (f"It trained at batches {', '.join(map(str, note['trained_at']))}, not the paper's {note['batch']}: "
            f"{note['why']}. Scaled: {note['how']}. Uncertainty: {note['uncertainty']}.")


def _bill_assumptions(plan: dict) -> list[str]:
    bills = [b for b in plan["bill"].values() if b.get("rate")]
    rate = bills[0]["rate"] if bills else None
    records = plan.get("records") or {}
    return [
        "FLOPs are counted (torch's flop_counter on the meta device) on each backbone's config: its folder's "
        "config.json, else the published one (lsrbench.model.public_configs, sources cited there); a backbone "
        "marked approximate is counted at another architecture's widths.",
        f"Training: {plan['steps']} steps of {plan['recipe_batch']} triplets, queries and documents at the recipe's "
        "maximum lengths (an upper bound: a batch is padded to its longest text); backward = 2x every matmul of "
        "the forward but the fused pooling's decoder.",
        "Index: each dataset's documents and queries at its published mean length (BEIR Table 1 words x 1.3 tokens "
        "per word + 2, capped at the evaluation's maximum; a dataset without one at the maximum): +-20 % on the "
        "encode FLOPs from the words-to-tokens factor alone.",
        (f"GPU rate: {rate['peak']}; " if rate else "") + "no GPU share of the peak is measured without a gpu.sh "
        f"record (benchmark/gpu.sh, gpu-cuda.json in --records): the hours at {', '.join(f'{s:.0%}' for s in SHARES)} "
        "of the peak are an assumed bracket, the 100 % column a floor. CPU seconds are not translated to GPU "
        "seconds: a CPU's share of its own peak says little about a GPU's.",
        _spread(plan),
        "CPU smoke: a training step's CPU seconds (the job's wall seconds x the share of a core it got: shared "
        "cores) and its peak resident set at the paper's batch (fp32, one thread); a GPU job with bf16 autocast "
        "keeps activations in half the bytes, so its device memory is about this or less. " + _smoke_batch(plan.get("smoke_paper_batch")),
        f"Evaluate: queries x the exact search's CPU ms per query ({records.get('peers') or 'no peers-1m.json record'}: "
        "a realistic 1M-document collection at top 1000, linear in the collection's size, one core); a trained "
        "model's vectors may be denser than that collection's.",
        f"Disk: a model is its parameters x 4 bytes (fp32 safetensors); a resumable checkpoint adds AdamW's two "
        f"moments (3x the model) while its job runs; vectors at {DOC_TERMS} non-zero terms per document and "
        f"{QUERY_TERMS} per query (assumed for a trained SPLADE model; x0.5-x2 plausible: a finished docs.npz "
        "has the real count) x 8 bytes; run files at top_k lines per query.",
        "Not counted: downloads, the dataset, triplets, norm, probe, bm25 and report jobs (I/O-bound or seconds), "
        "the corpora on disk (their published sizes), the bytes of each run's logs.",
        f"Records read: {', '.join(f'{k}: {v}' for k, v in records.items() if v) or 'none'} (--records).",
    ]
