"""Effectiveness of bf16 encoding: the tiny default's SPLADE-tiny (the shared checkpoint, as the
k = 1 run starts) encoded in fp32 and under bf16 autocast, side by side in one process, on the
tiny default's pooled Vaswani subset (judged documents plus each query's top-50 BM25 candidates)
at the evaluation lengths (256), through the index and evaluate stages' own functions
(``index_dataset``, ``evaluate_vectors``). Not a timing: the difference in nDCG@10 / RR@10 /
R@1000, the paired per-query nDCG@10 differences, and how far the vectors move
(sentence-transformers' evaluator encodes in fp32; paper-scale encoding runs bf16 on GPUs).

    .venv/bin/python benchmark/bf16_encoding.py            # ~5 min on 2 cores
    .venv/bin/python benchmark/bf16_encoding.py --quick    # 20 queries, ~1 min
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import SHARED, command_line, machine_info, write_result  # noqa: E402
from lsrbench.model.encoder import build_sparse_encoder  # noqa: E402
from lsrbench.evaluate.evaluation import evaluate_vectors  # noqa: E402
from lsrbench.index.indexing import index_dataset  # noqa: E402
from lsrbench.data.beir import load_beir_folder  # noqa: E402
from lsrbench.index.sparse import load_sparse  # noqa: E402
from lsrbench.data.bm25 import pooled_subset  # noqa: E402

MEASURES = ["nDCG@10", "RR@10", "R@1000"]


def evaluated_subset(quick: bool):
    """The tiny default's evaluated Vaswani: pooled_subset(depth 50), as its pool stage builds it
    (--quick: of its first 20 queries only)."""
    dataset = load_beir_folder(SHARED / "data" / "vaswani")
    if quick:
        from dataclasses import replace

        keep = sorted(dataset.queries)[:20]
        dataset = replace(dataset, queries={q: dataset.queries[q] for q in keep},
                          qrels={q: dataset.qrels[q] for q in keep})
    return pooled_subset(dataset, 50)


def encode_and_score(model_dir: str, dataset, precision: str, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    info = index_dataset(model_dir, dataset, 32, str(out / "queries.npz"), str(out / "docs.npz"),
                                     precision=precision, query_max_length=256, document_max_length=256)
    docs, doc_ids = load_sparse(str(out / "docs.npz"))
    queries, query_ids = load_sparse(str(out / "queries.npz"))
    scored = evaluate_vectors(dataset, docs, doc_ids, queries, query_ids, top_k=1000, measures=MEASURES,
                                          skip_identical_ids=False)
    return {"precision": info["precision"], "rows": dict(scored["rows"]), "docs": docs, "queries": queries,
            "per_query": {q: v for q, m, v in scored["per_query"] if m == "nDCG@10"}}


def vector_change(a, b) -> dict:
    """How far bf16 vectors (b) are from fp32 ones (a): max |difference|, and the active terms."""
    diff = abs(a - b)
    both = a.multiply(b) != 0
    return {"max_abs_diff": float(diff.max()), "max_weight": float(a.max()),
            "active_fp32": int(a.nnz), "active_bf16": int(b.nnz), "active_in_both": int(both.nnz)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    import logging

    import numpy as np

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    dataset = evaluated_subset(args.quick)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(tmp) / "model"
        build_sparse_encoder(str(SHARED / "models" / "splade-tiny-msmarco"), 64, query_length=64,
                                         document_length=64, device="cpu").save_pretrained(str(model_dir))
        runs = {p: encode_and_score(str(model_dir), dataset, p, Path(tmp) / p) for p in ("fp32", "bf16")}
    fp32, bf16 = runs["fp32"], runs["bf16"]
    assert bf16["precision"] == "bf16", bf16["precision"]
    diffs = np.array([bf16["per_query"][q] - fp32["per_query"][q] for q in sorted(fp32["per_query"])])
    result = {
        "command": command_line(), "machine": machine_info(), "quick": args.quick,
        "data": {"documents": len(dataset.corpus), "queries": len(dataset.queries), "pool_depth": 50,
                 "max_length": 256},
        "fp32": {m: fp32["rows"][m] for m in MEASURES}, "bf16": {m: bf16["rows"][m] for m in MEASURES},
        "bf16_minus_fp32": {m: bf16["rows"][m] - fp32["rows"][m] for m in MEASURES},
        "per_query_ndcg10_diff": {"queries_changed": int((diffs != 0).sum()), "min": float(diffs.min()),
                                  "max": float(diffs.max()), "mean_abs": float(np.abs(diffs).mean())},
        "documents": vector_change(fp32["docs"], bf16["docs"]),
        "queries": vector_change(fp32["queries"], bf16["queries"]),
    }
    path = write_result("bf16_encoding-quick" if args.quick else "bf16_encoding", result)
    for m in MEASURES:
        print(f"{m}: fp32 {result['fp32'][m]:.4f}  bf16 {result['bf16'][m]:.4f}  "
              f"bf16 - fp32 {result['bf16_minus_fp32'][m]:+.4f}")
    print(f"written {path}")


if __name__ == "__main__":
    main()
