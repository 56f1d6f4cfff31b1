"""The real-size smoke's record (``benchmark/real_size_smoke.py``): the paper's batch from the batches
that ran (the linear fit, and the note on why and how sure), and records of one setting merged or
resumed (a run cut short, or families run side by side)."""

from __future__ import annotations

import json

from common import REPO, write_result

SETTINGS = ("threads", "steps", "batches", "recipe", "evaluation", "collection")  # what records to merge share


def linear_fit(xs: list[float], ys: list[float]) -> dict | None:
    """Least-squares ``y = intercept + slope * x`` over the measured points (None with fewer than two)."""
    if len(set(xs)) < 2:
        return None
    n, mx, my = len(xs), sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return {"intercept": my - slope * mx, "slope": slope, "points": n}


def paper_batch_note(batches: list[int], paper_batch: int) -> dict:
    """What the record's values at the paper's batch are: measured, or how they were scaled from
    the batches that ran, why, and the uncertainty that adds (``lsrbench plan`` prints it)."""
    if paper_batch in batches:
        return {"batch": paper_batch, "trained_at": batches, "how": "measured at the paper's batch"}
    return {
        "batch": paper_batch, "trained_at": batches,
        "why": (f"the paper's batch ({paper_batch} triplets: {paper_batch} queries of 32 and {2 * paper_batch} "
                "documents of 256 tokens) in fp32 on one CPU needs more memory than the shared 24 GiB machine had: "
                "a training at that batch was killed by the kernel at 16.8 GiB resident while others' jobs held "
                "the rest"),
        "how": (f"linear in the batch through the measured batches {', '.join(map(str, batches))}: peak memory = fixed (model, "
                "gradients, AdamW's two moments, the runtime) + per triplet (the activations kept for backward, "
                "linear at fixed lengths: every smoke text fills its maximum length); step CPU seconds = fixed "
                "(the optimiser's update, the head's) + per triplet"),
        "uncertainty": (f"{paper_batch / max(batches):g}x beyond the largest measured batch; {len(batches)} points, so "
                        "no residual measures the line's error; each step time is one steady step (the second) "
                        "per batch on shared cores; allocator slack and a larger batch's better matmul efficiency "
                        "are not in the line (memory: likely a floor by the slack; time: likely a ceiling). A second "
                        "memory estimate is in each family's fits: the line through the largest measured batch "
                        "and the fixed memory expected (the norm job's peak + 12 bytes per parameter for gradients "
                        "and AdamW's moments); the two estimates' difference is a measure of the line's error"),
    }


def annotate(result: dict) -> dict:
    """Derived from the recorded values only: the note on the paper's batch, and beside each family's
    memory line the fixed memory a training should start from (the norm job's peak, which holds the
    fp32 model and the runtime, + 12 bytes per parameter: gradients and AdamW's two moments) and the
    paper batch's peak on the line through that and the largest measured batch (a second estimate)."""
    result["paper_batch"] = paper_batch_note(result["batches"], result["recipe"]["batch_size"])
    batch = result["recipe"]["batch_size"]
    for family in result["families"].values():
        train = family["stages"]["train"]
        fit = (train["paper_batch"].get("fits") or {}).get("peak_rss_gib")
        if fit is None or "norm" not in family["stages"]:
            continue
        fixed = family["stages"]["norm"]["peak_rss_gib"] + family["parameters"] * 12 / 2**30
        largest = max(train["batches"], key=int)
        slope = (train["batches"][largest]["peak_rss_gib"] - fixed) / int(largest)
        fit["expected_intercept_gib"] = round(fixed, 3)
        fit["at_paper_batch_through_expected_intercept"] = round(fixed + slope * batch, 2)
    return result


def at_paper_batch(trains: dict, batch: int) -> dict:
    """Peak memory and step seconds at the paper's batch: measured when it was run, else the linear
    fit over the measured batches (activations and compute grow with the batch's tokens; the model,
    its optimiser state and the update over the head do not), extrapolated and marked so."""
    keys = {"peak_rss_gib": "peak_rss_gib", "step_seconds": "steady_step_seconds",
            "step_cpu_seconds": "steady_step_cpu_seconds"}
    if batch in trains:
        t = trains[batch]
        return {"batch": batch, "how": "measured", **{k: t[v] for k, v in keys.items() if v in t}}
    batches = sorted(trains)
    fits = {k: linear_fit(batches, [trains[b][v] for b in batches]) for k, v in keys.items()
            if all(trains[b].get(v) is not None for b in batches)}
    if not fits or any(f is None for f in fits.values()):
        return {"batch": batch, "how": "not measured (one batch size only)"}
    return {"batch": batch, "how": f"extrapolated: linear fit over the measured batches {batches}",
            **{k: round(f["intercept"] + f["slope"] * batch, 2) for k, f in fits.items()}, "fits": fits}


def not_one_clean_commit(commits: list[str | None]) -> str | None:
    """Why runs at these commits (``machine_info``'s git: a hash, ``+dirty`` when the tree had changes)
    do not make one record: none recorded, a dirty tree, or more than one commit; None when they do."""
    if not commits or any(not c for c in commits):
        return "a run without its commit"
    dirty = sorted({c for c in commits if c.endswith("+dirty")})
    if dirty:
        return f"a dirty working tree ({', '.join(c.removesuffix('+dirty')[:12] + '+dirty' for c in dirty)})"
    if len(set(commits)) > 1:
        return f"{len(set(commits))} commits ({', '.join(sorted(c[:12] for c in set(commits)))})"
    return None


def merge_records(name: str, parts: list[str]) -> int:
    """Write record ``name``: the first part's settings and machine, every part's families and runs
    (parts of other settings refused)."""
    records = [json.loads((REPO / "benchmark" / "results" / f"{part}.json").read_text()) for part in parts]
    for record in records:  # a record's top-level peak is its last run's
        if record.get("runs") and "matmul_peak_gflops" in record:
            record["runs"][-1].setdefault("matmul_peak_gflops", record["matmul_peak_gflops"])
    merged = records[0]
    merged["runs"] = list(merged.get("runs") or [])
    for part, record in zip(parts[1:], records[1:]):
        if any(record.get(k) != merged.get(k) for k in SETTINGS):
            raise SystemExit(f"real_size_smoke: --merge: {part} ran other settings than {parts[0]} ({', '.join(SETTINGS)})")
        merged["families"].update({m: f for m, f in record["families"].items() if m not in merged["families"]})
        merged["runs"] += record.get("runs") or []
    why = not_one_clean_commit([run.get("git") for run in merged["runs"]])
    if why:
        raise SystemExit(f"real_size_smoke: --merge: {', '.join(parts)} are not one record: {why}")
    print(f"real_size_smoke: wrote {write_result(name, annotate(merged))}")
    return 0


def resumed_runs(name: str, result: dict) -> list:
    """Carry the families of an earlier run of the same settings (its record file) into ``result``;
    the earlier runs' list, the first one's rebuilt from its top-level command when it had none."""
    path = REPO / "benchmark" / "results" / f"{name}.json"
    if not path.exists():
        return []
    earlier = json.loads(path.read_text())
    if any(earlier.get(k) != result[k] for k in SETTINGS if k in result):
        raise SystemExit(f"real_size_smoke: --resume: {path} ran other settings ({', '.join(SETTINGS)}); run without --resume")
    why = not_one_clean_commit([run.get("git") for run in earlier.get("runs") or [earlier["machine"]]]
                               + [result["machine"].get("git")])
    if why:
        raise SystemExit(f"real_size_smoke: --resume: {path} and this run are not one record: {why}; run without --resume")
    result["families"].update(earlier.get("families", {}))
    result["skipped"].update(earlier.get("skipped", {}))
    return earlier.get("runs") or [{"command": earlier["command"], "git": earlier["machine"].get("git"),
                                    "families": list(earlier.get("families", {}))}]
