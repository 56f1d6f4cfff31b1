"""The GPU numbers of issue 21 in one command (``benchmark/gpu.sh``), side by side in one process,
written to one JSON (``benchmark/results/gpu-<device>[-quick].json``) with a short printed table:

* **encode**: docs/s of lsrbench's ``encode_texts`` vs sentence-transformers' ``encode_document``
  (same model object, texts, lengths 32 / 256, batch), fp32 and bf16 (the index stage's
  ``encode_autocast``), on SPLADE-tiny, a random BERT-base and a random ModernBERT-base (built
  from transformers' configs: no download); FLOP/s as shares of the bf16 (and fp32) matmul peak
  measured in the same run; peak GPU memory of each side; which path lsrbench took;
* **train**: one SPLADE training step under bf16 autocast, fused pooling vs ``SpladePooling``, at
  32 triplets and at the largest batch that fits for each (doubling, then bisection on OOM);
* **agree**: SPLADE-tiny on Vaswani, fp32 and bf16 on the device and fp32 on the CPU: non-zero
  overlap and relative weight differences of the vectors, nDCG@10 of each;
* **dag**: the tiny default from scratch with ``use_gpu: true`` (Snakemake, one GPU), wall time,
  its metrics.csv beside the CPU run's (``benchmark/results/tiny_default-metrics.csv``, written by
  ``tiny_default.sh``, or ``--cpu-metrics``).

No network: SPLADE-tiny and Vaswani are read from the first folder laid out like ``../shared``
among ``--shared``, ``$LSRBENCH_SHARED``, ``.gpu/shared`` (what ``benchmark/gpu_pack.sh`` copies
there to be carried), ``shared/`` and ``../shared``. ``--device cpu --quick`` runs every section
on a CPU with small random backbones, few texts and a micro DAG (the slow test suite does), and
lists what it cannot check without CUDA.

    bash benchmark/gpu.sh                      # on a GPU machine: at most ~8 minutes on one H200
    bash benchmark/gpu.sh --device cpu --quick # everywhere: the same code paths, a few minutes
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, command_line, machine_info, write_result  # noqa: E402

SECTIONS = ("encode", "train", "agree", "dag")
NEEDED = ("models/splade-tiny-msmarco/model.safetensors", "models/splade-tiny-msmarco/tokenizer.json",
          "data/vaswani/corpus.jsonl", "data/vaswani/queries.jsonl", "data/vaswani/qrels/test.tsv")
NOT_CHECKED_ON_CPU = [
    "peak GPU memory (torch.cuda.max_memory_allocated) of every case",
    "the largest training batch that fits (the search stops at --max-batch: a CPU has no OOM to find)",
    "bf16 on tensor cores, CUDA's SDPA attention kernels and their FLOP counts",
    "whether the fast encode path's probe passes under CUDA bf16 autocast (lsrbench_path per case)",
    "the tiny default with use_gpu: true (GPU claims by the job runner, --resources gpu=1)",
    "full-size random BERT-base and ModernBERT-base (--quick uses 2-layer ones of the same families)",
]


def find_shared(explicit: str | None) -> tuple[Path | None, list[str]]:
    """The first candidate folder holding every file of ``NEEDED``; else None and what was missing where."""
    candidates = [explicit, os.environ.get("LSRBENCH_SHARED"), REPO / ".gpu" / "shared", REPO / "shared",
                  REPO.parent / "shared"]
    notes = []
    for c in candidates:
        if not c:
            continue
        missing = [f for f in NEEDED if not (Path(c) / f).is_file()]
        if not missing:
            return Path(c).resolve(), notes
        notes.append(f"{c}: missing {', '.join(missing)}")
    return None, notes


PACKAGES = ("torch", "transformers", "sentence_transformers", "datasets", "accelerate", "numba", "numpy", "scipy",
            "pandas", "pyarrow", "ir_measures", "snakemake", "tabulate", "yaml")


def environment() -> dict:
    """Each package the sections import: its version, or why it does not import (said at the start,
    so a missing wheel is one line, not a traceback in the middle of a section)."""
    import importlib

    out = {}
    for name in PACKAGES:
        try:
            out[name] = getattr(importlib.import_module(name), "__version__", "?")
        except Exception as exc:  # noqa: BLE001 - any failure to import is what to report
            out[name] = f"NOT IMPORTABLE: {type(exc).__name__}: {exc}"
    return out


def peaks(device: str, quick: bool) -> dict:
    """Best matmul TFLOP/s of square products in bf16 and fp32 (``encode.mm_peak``), measured now."""
    import torch

    from encode import mm_peak

    sizes = (256, 512) if quick else ((4096, 8192) if device.startswith("cuda") else (1024, 2048))
    out = {}
    for name, dtype in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        got = mm_peak(device, dtype, sizes=sizes, reps=3 if quick else 10)
        out[name] = round(got["peak_gflops"] / 1000, 6)
        out[f"{name}_detail_gflops"] = got
    out["cuda_matmul_allow_tf32"] = bool(torch.backends.cuda.matmul.allow_tf32) if device.startswith("cuda") else None
    return out


def _models(args, shared: Path, tmp: Path) -> list[tuple[str, Path]]:
    from gpu_cases import random_backbone

    tiny = shared / "models" / "splade-tiny-msmarco"
    out = [("splade-tiny", tiny)]
    for name in ("bert-base", "modernbert-base"):
        out.append((f"random {name}" + (" (2-layer, --quick)" if args.quick else ""),
                    random_backbone(name, args.quick, tiny, tmp / name)))
    return out


def section_encode(args, shared: Path, device: str, result: dict, tmp: Path) -> list:
    from gpu_cases import encode_case, load_texts, vector_agreement

    from lsrbench.model.encoder import build_sparse_encoder

    texts = load_texts(shared / "data" / "vaswani" / "corpus.jsonl", args.docs)
    cases = []
    for name, folder in _models(args, shared, tmp):
        for length in args.lengths:
            model = build_sparse_encoder(str(folder), length, device=device)
            by_precision = {}
            for precision in ("fp32", "bf16"):
                case = encode_case(f"{name}, length {length}", model, texts, args.batch, precision, args.reps,
                                   device, result["peaks_tflops"])
                by_precision[precision] = case.pop("_vectors")
                cases.append(case)
                print(f"  encode {case['case']} {precision}: {case['docs_per_s_lsrbench']} vs "
                      f"{case['docs_per_s_sentence_transformers']} docs/s ({case['speedup_median']}x, "
                      f"path {case['lsrbench_path']})", flush=True)
            cases[-1]["bf16_vs_fp32_lsrbench"] = vector_agreement(by_precision["bf16"], by_precision["fp32"])
            del model
    return cases


def section_train(args, shared: Path, device: str, result: dict, tmp: Path) -> list:
    from gpu_cases import load_texts, train_case

    from lsrbench.model.encoder import build_sparse_encoder

    texts = load_texts(shared / "data" / "vaswani" / "corpus.jsonl", 0)
    cases = []
    for name, folder in _models(args, shared, tmp):
        model = build_sparse_encoder(str(folder), args.train_lengths[1], query_length=args.train_lengths[0],
                                     document_length=args.train_lengths[1], device=device)
        case = train_case(name, model, texts, args.train_batch, args.train_steps, args.max_batch, device)
        case["lengths"] = list(args.train_lengths)
        cases.append(case)
        print(f"  train {name}: {case['speedup']}x; largest batch fused "
              f"{case['sides']['fused']['largest_batch'].get('largest')}, SpladePooling "
              f"{case['sides']['spladepooling']['largest_batch'].get('largest')}", flush=True)
        del model
    return cases


def section_agree(args, shared: Path, device: str, result: dict, tmp: Path) -> dict:
    from gpu_cases import vaswani_agreement

    out = vaswani_agreement(shared / "models" / "splade-tiny-msmarco", shared / "data" / "vaswani", device,
                            args.agree_docs, args.batch, args.agree_length)
    print("  agree: nDCG@10 " + ", ".join(f"{k} {v['nDCG@10']:.4f}" for k, v in out["runs"].items()), flush=True)
    return out


def section_dag(args, shared: Path, device: str, result: dict, tmp: Path) -> dict:
    from gpu_dag import tiny_default

    remaining = args.budget_s - (time.time() - result["_start"])
    out = tiny_default(shared, device, args.quick, tmp / "dag", max(60.0, remaining - 15), args.cpu_metrics,
                       args.output)
    if out["returncode"] != 0:
        result["dag"] = out  # what it got to, kept beside the error
        raise RuntimeError(f"the tiny default {'timed out' if out['timed_out'] else 'failed'}: see {out['log']}")
    return out


def main(argv=None) -> int:
    args = _arguments(argv)
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        print("gpu.py: error: --device cuda but torch sees no CUDA device", file=sys.stderr)
        return 2
    shared, notes = find_shared(args.shared)
    if shared is None:
        print("gpu.py: error: SPLADE-tiny and Vaswani not found (run `bash benchmark/gpu_pack.sh` where ../shared "
              "exists and carry .gpu/):\n  " + "\n  ".join(notes), file=sys.stderr)
        return 2
    args.output = args.output or f"gpu-{'cuda' if device.startswith('cuda') else 'cpu'}" + ("-quick" if args.quick else "")
    result = {"benchmark": "gpu", "command": command_line(), "device": device, "quick": args.quick,
              "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine_info(),
              "shared": str(shared), "settings": {k: v for k, v in vars(args).items() if k != "output"},
              "not_checked": [] if device.startswith("cuda") else NOT_CHECKED_ON_CPU, "errors": {}, "_start": time.time()}
    print(f"gpu.py: device {device}, data from {shared}", flush=True)
    result["environment"] = environment()
    for name, version in result["environment"].items():
        if version.startswith("NOT IMPORTABLE"):
            print(f"gpu.py: warning: {name} {version} (carry its wheel: benchmark/gpu_wheels.txt)", file=sys.stderr)
    result["peaks_tflops"] = peaks(device, args.quick)
    print(f"  matmul peaks (TFLOP/s): bf16 {result['peaks_tflops']['bf16']}, fp32 {result['peaks_tflops']['fp32']}")
    import tempfile

    runners = {"encode": section_encode, "train": section_train, "agree": section_agree, "dag": section_dag}
    with tempfile.TemporaryDirectory(prefix="lsrbench-gpu-") as tmp:
        for name in args.sections:
            started = time.time()
            try:
                result[name] = runners[name](args, shared, device, result, Path(tmp))
            except Exception as exc:  # noqa: BLE001 - one broken section must not lose the others' numbers
                result["errors"][name] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-3000:]}"
                print(f"gpu.py: section {name} failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            result.setdefault("section_seconds", {})[name] = round(time.time() - started, 1)
            _write(args.output, result)
    from gpu_dag import summary

    print(summary(result))
    path = _write(args.output, result)
    print(f"wrote {path}")
    return 1 if result["errors"] else 0


def _write(name: str, result: dict) -> Path:
    """``results/<name>.json``, or the path ``name`` when it ends in ``.json``."""
    payload = json.loads(json.dumps({k: v for k, v in result.items() if not k.startswith("_")}, default=_jsonable))
    payload["elapsed_s"] = round(time.time() - result["_start"], 1)
    if not name.endswith(".json"):
        return write_result(name, payload)
    Path(name).write_text(json.dumps(payload, indent=2) + "\n")
    return Path(name)


def _jsonable(value):
    import numpy as np

    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    raise TypeError(f"not JSON: {type(value).__name__}")


def _arguments(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda when torch sees one)")
    ap.add_argument("--quick", action="store_true", help="small backbones, few texts, a micro DAG (CI's slow suite)")
    ap.add_argument("--shared", default=None, help="the folder with models/splade-tiny-msmarco and data/vaswani")
    ap.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated subset of {','.join(SECTIONS)}")
    ap.add_argument("--output", default=None, help="results/<name>.json (default gpu-<device>[-quick]), or a path *.json")
    ap.add_argument("--budget-s", type=float, default=None,
                    help="wall-clock budget (default 480 on a GPU, 3600 on a CPU); the DAG gets what is left")
    ap.add_argument("--cpu-metrics", default=None, help="the CPU tiny default's metrics.csv to compare with")
    ap.add_argument("--docs", type=int, default=None, help="texts per encode case")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--batch", type=int, default=None, help="encode batch (default 128 on CUDA, the paper's)")
    args = ap.parse_args(argv)
    args.sections = [s for s in args.sections.split(",") if s]
    unknown = sorted(set(args.sections) - set(SECTIONS))
    if unknown:
        ap.error(f"--sections: unknown {', '.join(unknown)}")
    import torch

    cuda = args.device.startswith("cuda") if args.device else torch.cuda.is_available()
    # --quick: a CPU's bf16 matmuls can be ~20x slower than its fp32 ones (no AMX kernels), so few, short texts.
    args.budget_s = args.budget_s or (480.0 if cuda else 3600.0)
    args.lengths = (16, 32) if args.quick else (32, 256)
    args.docs = args.docs or (16 if args.quick else 2048)
    args.reps = args.reps or (1 if args.quick else 3)
    args.batch = args.batch or (8 if args.quick else (128 if cuda else 32))
    args.train_lengths = (16, 32) if args.quick else (32, 256)  # the paper recipe's query / document lengths
    # --quick: 2 triplets, then one doubling to the limit 4 (the search's code path, at a quarter of 4 -> 8's steps)
    args.train_batch, args.train_steps = (2, 1) if args.quick else (32, 3)
    args.max_batch = 4 if args.quick else 4096
    args.agree_docs, args.agree_length = (48, 64) if args.quick else (0, 256)  # 0: the whole collection
    return args


if __name__ == "__main__":
    raise SystemExit(main())
