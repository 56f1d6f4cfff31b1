"""Document encoding: lsrbench's fast encoder vs sentence-transformers, side by side in one process.

For each case the same model, texts, max length, batch size, device and threads go through
``SparseEncoder.encode_document`` (the reference, timed as it is: it returns a torch sparse
tensor) and through ``lsrbench.encode.encode_texts`` (timed up to the finished scipy CSR,
including its probe check). Repetitions alternate which side runs first; the ratio is the median
of the per-repetition ratios. The outputs are compared (same non-zero set, max |difference|,
bit-identity). The FLOPs of one encode are counted (``torch.utils.flop_counter`` for the matrix
products, plus attention ``4 B T^2 H`` per layer from the padded batch shapes) and the achieved
FLOP/s is given as a fraction of this machine's ``torch.mm`` peak (same dtype, same threads).

    .venv/bin/python benchmark/encode.py            # full: ~15 min on 2 cores
    .venv/bin/python benchmark/encode.py --quick    # smoke run, ~1 min
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from common import SHARED, command_line, machine_info, write_result  # noqa: E402


def load_texts(corpus: Path, n: int) -> list[str]:
    """The first ``n`` documents of a BEIR corpus (title + text as BEIR loaders join them); all if n <= 0."""
    texts = []
    with open(corpus, encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            title, text = d.get("title") or "", d.get("text") or ""
            texts.append(f"{title} {text}".strip() if title else text)
            if 0 < n <= len(texts):
                break
    return texts


def mm_peak(device: str, dtype, sizes=(1024, 2048, 4096), reps: int = 3) -> dict:
    """Best GFLOP/s of square torch.mm, and of a decoder-shaped product, at the current thread count."""
    import torch

    out = {}
    best = 0.0
    for n in sizes:
        a = torch.randn(n, n, dtype=dtype, device=device)
        b = torch.randn(n, n, dtype=dtype, device=device)
        torch.mm(a, b)
        _sync(device)
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            torch.mm(a, b)
            _sync(device)
            times.append(time.perf_counter() - t)
        g = 2 * n**3 / min(times) / 1e9
        out[f"square_{n}_gflops"] = round(g, 1)
        best = max(best, g)
    out["peak_gflops"] = round(best, 1)
    return out


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def count_flops(model, texts: list[str], batch_size: int, run=None) -> dict:
    """FLOPs of one fast encode (``run()``, default ``encode_texts``): torch's counter of every matrix
    product, plus attention ``4 B T^2 H`` per layer from the padded batch shapes where the counter
    saw no attention product (fused CPU attention kernels are not counted; CUDA's SDPA kernels and
    the math path's ``bmm`` are, and were counted twice here before issue 21)."""
    import numpy as np
    from torch.utils.flop_counter import FlopCounterMode

    from lsrbench.index.encode import encode_texts

    with FlopCounterMode(display=False) as counter:
        (run or (lambda: encode_texts(model, texts, "document", batch_size)))()
    ops = sorted(str(op) for op in counter.get_flop_counts().get("Global", {}))
    matmul = int(counter.get_total_flops())
    cfg = model[0].auto_model.config
    hidden, layers = int(cfg.hidden_size), int(cfg.num_hidden_layers)
    order = np.argsort([-model._input_length(s) for s in texts])
    attention, tokens, padded = 0, 0, 0
    for start in range(0, len(texts), batch_size):
        feats = model.preprocess([texts[i] for i in order[start : start + batch_size]], task="document")
        b, t = feats["attention_mask"].shape
        attention += layers * 4 * b * t * t * hidden
        tokens += int(feats["attention_mask"].sum())
        padded += b * t
    added = 0 if any("bmm" in op or "attention" in op for op in ops) else attention
    return {"matmul_flops": matmul, "attention_flops": attention, "attention_added": added,
            "total_flops": matmul + added, "ops": ops,
            "tokens": tokens, "padded_tokens": padded, "padding_fraction": round(1 - tokens / padded, 4)}


def compare(ours, theirs) -> dict:
    import numpy as np

    theirs = theirs.coalesce().cpu()
    idx = theirs.indices().numpy()
    vals = theirs.values().float().numpy()
    keep = vals != 0
    import scipy.sparse as sp

    ref = sp.csr_matrix((vals[keep], (idx[0][keep], idx[1][keep])), shape=tuple(theirs.shape), dtype=np.float32)
    ref.sum_duplicates()
    same_structure = bool(ours.shape == ref.shape and np.array_equal(ours.indptr, ref.indptr)
                          and np.array_equal(ours.indices, ref.indices))
    max_diff = float(np.abs(ours.data - ref.data).max()) if same_structure and ours.nnz else None
    return {"same_nonzero_set": same_structure, "max_abs_diff": max_diff,
            "bit_identical": bool(same_structure and np.array_equal(ours.data, ref.data)), "nnz": int(ours.nnz)}


def run_case(name: str, model, texts: list[str], batch_size: int, reps: int, device: str, peak: float) -> dict:
    import torch

    from lsrbench.index.encode import encode_texts, fast_path_available

    assert fast_path_available(model), f"{name}: the fast path does not apply"
    warm = texts[: min(len(texts), 2 * batch_size)]
    model.encode_document(warm, batch_size=batch_size)
    encode_texts(model, warm, "document", batch_size)

    def st():
        out = model.encode_document(texts, batch_size=batch_size, convert_to_sparse_tensor=True)
        _sync(device)
        return out

    def ours():
        return encode_texts(model, texts, "document", batch_size)

    t_st, t_ours = [], []
    out_st = out_ours = None
    for r in range(reps):
        pair = [("st", st), ("ours", ours)] if r % 2 == 0 else [("ours", ours), ("st", st)]
        for who, fn in pair:
            t = time.perf_counter()
            res = fn()
            dt = time.perf_counter() - t
            (t_st if who == "st" else t_ours).append(dt)
            if who == "st":
                out_st = res
            else:
                out_ours = res
        print(f"  [{name}] rep {r + 1}/{reps}: sentence-transformers {t_st[-1]:.2f}s, lsrbench {t_ours[-1]:.2f}s "
              f"({t_st[-1] / t_ours[-1]:.2f}x)", flush=True)
    ratios = [a / b for a, b in zip(t_st, t_ours)]
    flops = count_flops(model, texts, batch_size)
    med_ours, med_st = statistics.median(t_ours), statistics.median(t_st)
    cfg = model[0].auto_model.config
    result = {
        "case": name,
        "model": {"architecture": type(model[0].auto_model).__name__, "hidden": cfg.hidden_size,
                  "layers": cfg.num_hidden_layers, "vocab": cfg.vocab_size,
                  "parameters": sum(p.numel() for p in model[0].auto_model.parameters())},
        "documents": len(texts), "max_length": model[0].document_length or model[0].max_seq_length,
        "batch_size": batch_size, "device": device, "torch_threads": torch.get_num_threads(), "reps": reps,
        "seconds_sentence_transformers": [round(x, 3) for x in t_st],
        "seconds_lsrbench": [round(x, 3) for x in t_ours],
        "docs_per_s_sentence_transformers": round(len(texts) / med_st, 1),
        "docs_per_s_lsrbench": round(len(texts) / med_ours, 1),
        "speedup_median": round(statistics.median(ratios), 3),
        "speedup_min": round(min(ratios), 3), "speedup_max": round(max(ratios), 3),
        "output": compare(out_ours, out_st),
        "flops": flops,
        "achieved_gflops_lsrbench": round(flops["total_flops"] / med_ours / 1e9, 1),
        "achieved_gflops_sentence_transformers": round(flops["total_flops"] / med_st / 1e9, 1),
    }
    result["fraction_of_mm_peak_lsrbench"] = round(result["achieved_gflops_lsrbench"] / peak, 3)
    result["fraction_of_mm_peak_sentence_transformers"] = round(result["achieved_gflops_sentence_transformers"] / peak, 3)
    print(f"  [{name}] {result['docs_per_s_lsrbench']} vs {result['docs_per_s_sentence_transformers']} docs/s: "
          f"{result['speedup_median']}x (min {result['speedup_min']}, max {result['speedup_max']}); "
          f"{result['fraction_of_mm_peak_lsrbench']:.0%} of mm peak; output {result['output']}", flush=True)
    return result


def bert_base_random(tokenizer_from: Path, folder: Path) -> Path:
    """A randomly initialised BERT-base-sized BertForMaskedLM (12 x 768, vocab 30522) with a real tokenizer."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    BertForMaskedLM(BertConfig(vocab_size=30522)).save_pretrained(folder)
    for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (tokenizer_from / f).is_file():
            shutil.copy(tokenizer_from / f, folder / f)
    return folder


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small smoke run (few documents, one repetition)")
    ap.add_argument("--model", type=Path, default=SHARED / "models" / "splade-tiny-msmarco")
    ap.add_argument("--corpus", type=Path, default=SHARED / "data" / "vaswani" / "corpus.jsonl")
    ap.add_argument("--docs", type=int, default=0, help="documents for the tiny model (0 = the whole corpus)")
    ap.add_argument("--base-docs", type=int, default=256, help="passages for the BERT-base-sized model")
    ap.add_argument("--max-lengths", default="256,64", help="document max lengths for the tiny model")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--device", default=None, help="cpu or cuda (default: cuda when present)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's own, all cores)")
    ap.add_argument("--skip-base", action="store_true")
    ap.add_argument("--output", default=None, help="results/<name>.json (default encode[-quick][-cuda])")
    args = ap.parse_args(argv)
    if args.quick:
        args.docs, args.base_docs, args.reps, args.max_lengths = args.docs or 400, min(args.base_docs, 24), 1, "128"

    import os

    import torch
    import transformers

    from lsrbench.model.encoder import build_sparse_encoder

    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    load_before = os.getloadavg()
    if args.threads:
        torch.set_num_threads(args.threads)
    transformers.logging.set_verbosity_error()
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    print(f"device {device}, torch threads {torch.get_num_threads()}", flush=True)
    peak = mm_peak(device, torch.float32)
    print(f"torch.mm float32 peak: {peak}", flush=True)
    texts = load_texts(args.corpus, args.docs)
    cases = []
    for max_len in [int(x) for x in args.max_lengths.split(",")]:
        model = build_sparse_encoder(str(args.model), max_len, device=device)
        cases.append(run_case(f"splade-tiny max_length={max_len}", model, texts, args.batch_size, args.reps, device,
                              peak["peak_gflops"]))
        del model
    if not args.skip_base:
        with tempfile.TemporaryDirectory() as tmp:
            folder = bert_base_random(args.model, Path(tmp))
            model = build_sparse_encoder(str(folder), 256, device=device)
            base_texts = load_texts(args.corpus, args.base_docs)
            cases.append(run_case("random BERT-base max_length=256", model, base_texts, args.batch_size,
                                  max(1, args.reps), device, peak["peak_gflops"]))
    # The peak again after the cases: on a shared machine one measurement can catch the other
    # core busy; the fractions use the better of the two.
    peak_after = mm_peak(device, torch.float32)
    best = max(peak["peak_gflops"], peak_after["peak_gflops"])
    if best > peak["peak_gflops"]:
        for case in cases:
            case["fraction_of_mm_peak_lsrbench"] = round(case["achieved_gflops_lsrbench"] / best, 3)
            case["fraction_of_mm_peak_sentence_transformers"] = round(case["achieved_gflops_sentence_transformers"] / best, 3)
    peak = {"before": peak, "after": peak_after, "peak_gflops": best}
    name = args.output or ("encode" + ("-quick" if args.quick else "") + ("-cuda" if device.startswith("cuda") else "")
                           + (f"-{args.threads}thread" if args.threads else ""))
    path = write_result(name, {
        "benchmark": "encode", "command": command_line(), "started": started,
        "load_average_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "machine": machine_info(), "mm_peak_float32": peak, "corpus": str(args.corpus), "cases": cases,
    })
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
