"""``gpu.py``'s DAG section (the tiny default from scratch through Snakemake, ``use_gpu: true`` on a
GPU) and the short table it prints at the end."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from common import REPO, RESULTS

from lsrbench.names import METRIC_COLUMNS

CPU_METRICS = RESULTS / "tiny_default-metrics.csv"  # the CPU run's, kept by tiny_default.sh


def dag_config(work: Path, quick: bool, use_gpu: bool) -> Path:
    """The tiny default (``config/config.yaml``) with ``use_gpu`` set; ``quick``: cut to one run
    (SPLADE-tiny, k = 1, 2 steps, a 5-deep pool, 64-token documents, no claims; its MLM re-fit 2 steps), the same
    stages, a minute on a CPU; it runs to metrics.csv (:func:`tiny_default`)."""
    import yaml

    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config["use_gpu"] = use_gpu
    config["datasets_file"] = str(REPO / config["datasets_file"])
    if quick:
        config.pop("claims", None)
        backbone = {**config["backbones"]["splade-tiny"], "modes": {"shared": [1]}}
        if backbone.get("mlm_refit"):  # the re-fit stage's code path, not its 200 steps
            backbone["mlm_refit"] = {**backbone["mlm_refit"], "steps": 2, "batch_size": 8}
        config["backbones"] = {"splade-tiny": backbone}
        config["k_grid"] = [1]
        config["recipe"].update(steps=2, batch_size=4, checkpoint_steps=0)
        # short documents: the index job encodes the ~2,200 pooled documents in seconds, not half a minute
        config["evaluation"].update(pool_depth=5, query_max_length=32, document_max_length=64)
    path = work / ("config-quick.yaml" if quick else "config.yaml")
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def tiny_default(shared: Path, device: str, quick: bool, work: Path, timeout_s: float, cpu_metrics: str | None,
                 output: str) -> dict:
    """Run the tiny default (:func:`dag_config`) from an empty working directory; its
    wall time, job count and metrics.csv beside the CPU run's."""
    import pandas as pd

    work.mkdir(parents=True, exist_ok=True)
    cuda = device.startswith("cuda")
    config = dag_config(work, quick, use_gpu=cuda)
    cores = os.cpu_count() or 2
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(work),
           "--cores", str(cores), "--scheduler", "greedy"]
    if cuda:
        cmd += ["--resources", "gpu=1"]  # one GPU: its jobs one at a time (each claims it, lsrbench.pipeline.gpus)
    cmd += ["--configfile", str(config), "--config", f"mirror={shared}"]
    if quick:  # the stages' jobs and metrics.csv, what is compared; the report jobs are the CPU suite's
        cmd += ["--", "results/metrics.csv"]
    log = Path(output[: -len(".json")] + "-dag.log") if output.endswith(".json") else RESULTS / f"{output}-dag.log"
    start = time.time()
    with open(log, "w") as fh:
        rc, timed_out = _run_group(cmd, fh, timeout_s, work)
    wall = time.time() - start
    out = {"command": " ".join(cmd), "config": "config/config.yaml" + (" cut to one run (--quick)" if quick else ""),
           "cores": cores, "use_gpu": cuda, "wall_s": round(wall, 1), "returncode": rc, "timed_out": timed_out,
           "timeout_s": round(timeout_s), "log": str(log),
           "jobs_finished": sum(1 for line in log.read_text(errors="replace").splitlines() if line.startswith("Finished job"))}
    metrics = work / "results" / "metrics.csv"
    if not metrics.is_file():
        out["metrics"] = None
        return out
    got = pd.read_csv(metrics)
    ref_path = Path(cpu_metrics) if cpu_metrics else (metrics if quick else CPU_METRICS)
    out["cpu_reference"] = ("itself (--quick: the comparison's code path only)" if ref_path == metrics
                            else str(ref_path))
    if not ref_path.is_file():
        out["cpu_reference"] = f"missing: {ref_path} (bash benchmark/tiny_default.sh writes it)"
        out["metrics"] = got.to_dict(orient="records")
        return out
    out.update(compare_metrics(got, pd.read_csv(ref_path)))
    return out


def _run_group(cmd: list[str], log, timeout_s: float, cwd: Path) -> tuple[int | None, bool]:
    """Run ``cmd`` in its own process group; past ``timeout_s`` the whole group (Snakemake and every
    job it started) is terminated, then killed: no job outlives the section or its working directory."""
    import signal

    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True)
    try:
        return proc.wait(timeout=timeout_s), False
    except subprocess.TimeoutExpired:
        for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=wait)
                break
            except (ProcessLookupError, subprocess.TimeoutExpired):
                continue
        return None, True


def compare_metrics(gpu, cpu) -> dict:
    """The two runs' metrics side by side on (backbone, k, dataset, measure): every row, and the
    largest |difference| per measure."""
    keys = [c for c in METRIC_COLUMNS if c != "value"]
    both = gpu.merge(cpu, on=keys, how="outer", suffixes=("_gpu", "_cpu"), indicator=True)
    both["difference"] = both["value_gpu"] - both["value_cpu"]
    per_measure = both.groupby("measure")["difference"].agg(lambda d: float(d.abs().max()))
    return {"metrics": both.drop(columns="_merge").to_dict(orient="records"),
            "rows_only_in_one": int((both["_merge"] != "both").sum()),
            "max_abs_difference_per_measure": {m: round(v, 6) for m, v in per_measure.items()}}


def summary(result: dict) -> str:
    """The short table printed at the end (tabulate; the JSON has everything)."""
    from tabulate import tabulate

    gib = 2**30
    parts = []
    rows = [[c["case"], c["precision"], c["lsrbench_path"], c["docs_per_s_sentence_transformers"], c["docs_per_s_lsrbench"],
             c["speedup_median"], _pct(c["share_of_bf16_peak_lsrbench"]), _pct(c["share_of_bf16_peak_sentence_transformers"]),
             _mem(c["peak_memory_bytes"].get("lsrbench"), gib), _mem(c["peak_memory_bytes"].get("sentence_transformers"), gib),
             "yes" if c["output_vs_sentence_transformers"]["same_nonzero_set"] else "no"]
            for c in result.get("encode") or []]
    if rows:
        parts.append(tabulate(rows, headers=["encode", "prec", "path", "ST docs/s", "lsr docs/s", "x", "lsr %bf16 peak",
                                             "ST %bf16 peak", "lsr GiB", "ST GiB", "same nnz"]))
    rows = []
    for c in result.get("train") or []:
        for side, s in c["sides"].items():
            big = s["largest_batch"]
            rows.append([c["case"], side, s["s_per_step"], _mem(s["peak_memory_bytes"], gib), big.get("largest"),
                         big.get("triplets_per_s"), _mem(big.get("peak_memory_bytes"), gib)])
    if rows:
        parts.append(tabulate(rows, headers=["train (bf16)", "pooling", f"s/step @{result['settings']['train_batch']}",
                                             "GiB", "largest batch", "triplets/s there", "GiB there"]))
    agree = result.get("agree")
    if agree:
        rows = [[k, v["device"], v["precision"], f"{v['nDCG@10']:.4f}"] for k, v in agree["runs"].items()]
        a = agree["bf16_vs_fp32_documents"]
        parts.append(tabulate(rows, headers=["Vaswani (SPLADE-tiny)", "device", "precision", "nDCG@10"])
                     + f"\nbf16 vs fp32 documents: non-zero overlap {a['nonzero_overlap_jaccard']}, max relative "
                       f"difference {a['max_relative_difference']} (p99.9 {a['p999_relative_difference']})")
    dag = result.get("dag")
    if dag:
        parts.append(f"tiny default ({'use_gpu: true' if dag['use_gpu'] else 'CPU'}): {dag['wall_s']} s, returncode "
                     f"{dag['returncode']}, {dag['jobs_finished']} jobs; largest |metric difference| vs "
                     f"{dag.get('cpu_reference')}: {dag.get('max_abs_difference_per_measure')}")
    if result.get("not_checked"):
        parts.append("Not checked without CUDA:\n- " + "\n- ".join(result["not_checked"]))
    if result.get("errors"):
        parts.append("FAILED sections: " + ", ".join(result["errors"]))
    return "\n\n".join(parts)


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _mem(x, unit) -> str:
    return "-" if x is None else f"{x / unit:.2f}"
