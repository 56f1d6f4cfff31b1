"""The paper grid's bill on one H200-class GPU, per stage (issue 21 part 2): train and index in
GPU-hours, evaluate in CPU core-hours, each number marked measured or estimated.

* Jobs, documents and queries: ``lsrbench plan --configfile config/paper.yaml --no-calibration``
  (its JSON), split per dataset with the DAG's own corpus sharing (``docs_dataset``) and checked
  against the plan's per-backbone totals.
* FLOPs: ``lsrbench.index.roofline`` (``torch.utils.flop_counter`` on each backbone's published
  shape, meta device): per document at its dataset's published mean length (BEIR Table 1, x1.3
  tokens per word, capped at the evaluation's 256), per training step at the recipe's batch and
  lengths (documents at 256 tokens: the padded length of a 64-passage batch is near its longest).
* Hours: with ``benchmark/results/gpu-cuda.json`` (``gpu.sh`` on a GPU), the measured bf16 peak
  and, for the backbones measured there (SPLADE-tiny-free: random BERT-base, ModernBERT-base), the
  measured rates (encode: achieved TFLOP/s at length 256; train: s/step at 32 triplets), applied
  to the same family; otherwise FLOPs / the datasheet's dense bf16 peak: the roofline, a lower
  bound (real time = bound / the achieved share of the peak, which gpu.sh measures).
* Evaluate: queries x the exact search's measured CPU ms/query (``results/peers-1m.json``,
  realistic collection, k = 1000, one core), linear in the collection's size; no GPU.

    .venv/bin/python benchmark/grid_cost.py    # results/grid_cost.json, Markdown tables on stdout
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, RESULTS, command_line, write_result  # noqa: E402

from lsrbench.data.sizes import PUBLISHED_MEAN_WORDS  # noqa: E402
from lsrbench.index import roofline  # noqa: E402

FAMILY = {"bert": "bert-base", "distilbert": "bert-base", "albert": "bert-base", "gte-mlm": "bert-base",
          "roberta": "bert-base", "modernbert": "modernbert-base", "ettin": "modernbert-base"}


def plan(config: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "plan.json"
        subprocess.run([sys.executable, "-m", "lsrbench.cli", "plan", "--configfile", str(config), "--no-calibration",
                        "--json", str(out)], check=True, cwd=REPO, stdout=subprocess.DEVNULL)
        return json.loads(out.read_text())


def encoded_datasets(config_path: Path, datasets: list[str]) -> list[str]:
    """The datasets whose documents an index job encodes (a dataset sharing another's corpus has none)."""
    import yaml

    from lsrbench.dag.evaluated import docs_dataset  # the DAG's corpus sharing

    config = yaml.safe_load(config_path.read_text())
    registry = yaml.safe_load((REPO / config["datasets_file"]).read_text())
    minimal = {"evaluation": config["evaluation"], "_datasets": {d: registry[d] for d in datasets}}
    return [d for d in datasets if docs_dataset(minimal, d) == d]


def measured(gpu: dict | None) -> dict:
    """Per family: the achieved encode TFLOP/s (lsrbench, bf16, length 256) and train s/step at 32."""
    out = {}
    for case in (gpu or {}).get("encode") or []:
        for fam in ("bert-base", "modernbert-base"):
            if f"random {fam}, length 256" == case["case"] and case["precision"] == "bf16":
                out.setdefault(fam, {})["encode_tflops"] = case["tflops_lsrbench"]
    for case in (gpu or {}).get("train") or []:
        for fam in ("bert-base", "modernbert-base"):
            if case["case"] == f"random {fam}" and case["batch_triplets"] == 32:
                out.setdefault(fam, {})["train_s_per_step"] = case["sides"]["fused"]["s_per_step"]
    return out


def search_ms(n_docs: int, peers: dict) -> float:
    """CPU ms/query of exact top-1000 over ``n_docs`` documents: the measured realistic rate at 1M,
    linear in N, never below the measured 100k rate (fixed per-query costs)."""
    return max(peers["100k"], peers["1m"] * n_docs / 1e6)


def backbone_cost(name: str, p: dict, datasets: list[str], encoded: list[str], recipe: dict, evaluation: dict,
                  peak: float, rates: dict, peers: dict) -> dict:
    b, sizes = p["backbones"][name], p["datasets"]
    runs = b["train_jobs"]
    doc_len, q_len = evaluation["document_max_length"], evaluation["query_max_length"]
    docs = {d: sizes[d]["evaluated_documents"] for d in encoded}
    assert runs * sum(docs.values()) == b["documents"], (name, runs * sum(docs.values()), b["documents"])
    index_flops = runs * sum(n * roofline.forward_flops(name, roofline.document_tokens(PUBLISHED_MEAN_WORDS[d][1], doc_len))["total"]
                             for d, n in docs.items())
    query_flops = runs * sum(sizes[d]["queries"] * roofline.forward_flops(
        name, roofline.document_tokens(PUBLISHED_MEAN_WORDS[d][0], q_len))["total"] for d in datasets)
    step = roofline.train_step_flops(name, recipe["batch_size"], recipe["query_max_length"], recipe["document_max_length"])
    train_flops = runs * recipe["steps"] * step
    rate = rates.get(FAMILY[name], {})
    row = {"runs": runs, "documents": b["documents"], "train_flops": train_flops, "index_flops": index_flops + query_flops,
           "train_step_flops": step}
    if "train_s_per_step" in rate and name in ("bert", "modernbert"):
        row["train_hours"], row["train_how"] = runs * recipe["steps"] * rate["train_s_per_step"] / 3600, "measured"
    else:
        row["train_hours"], row["train_how"] = roofline.stage_hours(train_flops, peak), "estimated (roofline)"
    if "encode_tflops" in rate:
        row["index_hours"] = (index_flops + query_flops) / (rate["encode_tflops"] * 1e12) / 3600
        row["index_how"] = "measured rate" if name in ("bert", "modernbert") else f"estimated ({FAMILY[name]}'s measured rate)"
    else:
        row["index_hours"], row["index_how"] = roofline.stage_hours(index_flops + query_flops, peak), "estimated (roofline)"
    row["evaluate_cpu_hours"] = runs * sum(sizes[d]["queries"] * search_ms(sizes[d]["evaluated_documents"], peers)
                                           for d in datasets) / 1000 / 3600
    return row


def _peers_rates() -> dict:
    out = {}
    for key, name in (("100k", "peers-100k"), ("1m", "peers-1m")):
        d = json.loads((RESULTS / f"{name}.json").read_text())
        row = next(r for r in d["rows"] if r["collection"] == "realistic")
        out[key] = row["k"]["1000"]["systems"]["lsrbench"]["ms_per_query"]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configfile", default="config/paper.yaml")
    ap.add_argument("--gpu-json", default=str(RESULTS / "gpu-cuda.json"))
    ap.add_argument("--datasheet", default="H200", choices=sorted(roofline.DATASHEET_BF16_TFLOPS))
    args = ap.parse_args(argv)
    import yaml

    config_path = REPO / args.configfile
    config = yaml.safe_load(config_path.read_text())
    p = plan(config_path)
    gpu = json.loads(Path(args.gpu_json).read_text()) if Path(args.gpu_json).is_file() else None
    if gpu and gpu.get("peaks_tflops", {}).get("bf16"):
        peak, peak_how = gpu["peaks_tflops"]["bf16"], f"measured bf16 matmul peak ({args.gpu_json})"
    else:
        peak, peak_how = roofline.DATASHEET_BF16_TFLOPS[args.datasheet]
        peak_how = f"datasheet: {peak_how}"
    datasets = config["evaluation"]["datasets"]
    encoded = encoded_datasets(config_path, datasets)
    rates, peers = measured(gpu), _peers_rates()
    rows = {name: backbone_cost(name, p, datasets, encoded, config["recipe"], config["evaluation"], peak, rates, peers)
            for name in config["backbones"]}
    result = {"benchmark": "grid_cost", "command": command_line(), "config": args.configfile, "peak_tflops": peak,
              "peak": peak_how, "gpu_json": args.gpu_json if gpu else None, "measured_rates": rates,
              "search_ms_per_query_cpu": peers, "jobs": p["jobs"], "encoded_datasets": encoded, "backbones": rows,
              "totals": {k: sum(r[k] for r in rows.values()) for k in ("train_flops", "index_flops", "train_hours",
                                                                        "index_hours", "evaluate_cpu_hours", "documents")}}
    write_result("grid_cost", result)
    print(markdown(result))
    return 0


def markdown(r: dict) -> str:
    t, jobs = r["totals"], r["jobs"]
    hows = lambda key: ", ".join(sorted({b[key] for b in r["backbones"].values()}))  # noqa: E731
    lines = ["| stage | jobs | work | FLOPs | GPU-hours | how |", "|---|---|---|---|---|---|",
             f"| train | {jobs['train']} | 16,000 steps x 32 triplets each | {t['train_flops']:.3g} | **{t['train_hours']:.2f}** | {hows('train_how')} |",
             f"| index | {jobs['index']} + {jobs['index_queries']} | {t['documents']:,} documents + queries | {t['index_flops']:.3g} | **{t['index_hours']:.2f}** | {hows('index_how')} |",
             f"| evaluate | {jobs['evaluate']} | exact top-1000 on CPUs | - | 0 (**{t['evaluate_cpu_hours']:.1f}** CPU core-hours) | estimated (measured CPU rate, linear in N) |",
             "", "| backbone | runs | documents | train step FLOPs | train GPU-h | index GPU-h | evaluate CPU-h |",
             "|---|---|---|---|---|---|---|"]
    for name, b in r["backbones"].items():
        lines.append(f"| {name} | {b['runs']} | {b['documents']:,} | {b['train_step_flops']:.3g} | {b['train_hours']:.3f} "
                     f"| {b['index_hours']:.3f} | {b['evaluate_cpu_hours']:.2f} |")
    lines.append(f"\nPeak: {r['peak_tflops']} TFLOP/s ({r['peak']}).")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
