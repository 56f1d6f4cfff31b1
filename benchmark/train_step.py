"""Training step time: lsrbench's fused decoder + SPLADE max pooling (``recipe.fused_pooling``)
against sentence-transformers' ``SpladePooling``, side by side in one process.

One step = forward of a batch of query + positive + negative texts through the SparseEncoder, the
SpladeLoss(SparseMultipleNegativesRankingLoss) with both FLOPS regularisers, and backward, as the
trainer runs it (same model object, same batch, same threads); repetitions alternate which side
goes first. The two sides' losses are recorded (they agree to float rounding: same vectors).

    .venv/bin/python benchmark/train_step.py                 # results/train_step.json
    .venv/bin/python benchmark/train_step.py --quick         # results/train_step-quick.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import SHARED, command_line, machine_info, write_result  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--model", type=Path, default=SHARED / "models" / "splade-tiny-msmarco")
    ap.add_argument("--corpus", type=Path, default=SHARED / "data" / "vaswani" / "corpus.jsonl")
    ap.add_argument("--batch-size", type=int, default=16, help="triplets per step (the tiny default's recipe)")
    ap.add_argument("--max-length", type=int, default=64, help="query and document max length (tiny default)")
    ap.add_argument("--steps", type=int, default=10, help="timed steps per repetition and side")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    if args.quick:
        args.steps, args.reps = 2, 1

    import torch
    from sentence_transformers.sparse_encoder.losses import SparseMultipleNegativesRankingLoss, SpladeLoss

    from lsrbench.model.encoder import build_sparse_encoder
    from lsrbench.model.fused_pooling import fused_pooling

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = build_sparse_encoder(str(args.model), args.max_length, query_length=args.max_length,
                                 document_length=args.max_length, device="cpu")
    texts = [json.loads(line)["text"] for line in open(args.corpus, encoding="utf-8")][: 3 * args.batch_size]
    b = args.batch_size
    queries = [" ".join(t.split()[:8]) for t in texts[:b]]
    positives, negatives = texts[b : 2 * b], texts[2 * b : 3 * b]
    loss = SpladeLoss(model, loss=SparseMultipleNegativesRankingLoss(model),
                      query_regularizer_weight=5e-5, document_regularizer_weight=3e-5)
    features = [model.preprocess(queries, task="query"), model.preprocess(positives, task="document"),
                model.preprocess(negatives, task="document")]
    model.train()

    def step() -> float:
        model.zero_grad(set_to_none=True)
        parts = loss([dict(f) for f in features], None)
        total = sum(parts.values())
        total.backward()
        return float(total.detach())

    def timed(fused: bool) -> tuple[float, float]:
        ctx = fused_pooling(model) if fused else contextlib.nullcontext(False)
        with ctx as on:
            if fused and not on:
                raise SystemExit("the fused path does not apply to this model (see the warning above)")
            step()  # warm-up
            start = time.perf_counter()
            for _ in range(args.steps):
                value = step()
            return (time.perf_counter() - start) / args.steps, value

    reps = []
    for r in range(args.reps):
        order = (True, False) if r % 2 == 0 else (False, True)
        got = {}
        for fused in order:
            with torch.random.fork_rng():
                torch.manual_seed(r)  # the same dropout masks on both sides
                got["fused" if fused else "spladepooling"] = timed(fused)
        reps.append({"first": "fused" if order[0] else "spladepooling",
                     "fused_s_per_step": got["fused"][0], "spladepooling_s_per_step": got["spladepooling"][0],
                     "speedup": got["spladepooling"][0] / got["fused"][0],
                     "fused_last_loss": got["fused"][1], "spladepooling_last_loss": got["spladepooling"][1]})
    speedups = [r["speedup"] for r in reps]
    result = {
        "command": command_line(),
        "what": "one SPLADE training step (forward, SpladeLoss with FLOPS regularisers, backward): fused pooling vs SpladePooling",
        "model": str(args.model.name), "batch_triplets": b, "max_length": args.max_length,
        "steps_per_rep": args.steps, "machine": machine_info(),
        "median_speedup": statistics.median(speedups), "min_speedup": min(speedups), "max_speedup": max(speedups),
        "median_fused_s_per_step": statistics.median(r["fused_s_per_step"] for r in reps),
        "median_spladepooling_s_per_step": statistics.median(r["spladepooling_s_per_step"] for r in reps),
        "reps": reps,
    }
    path = write_result(args.output or ("train_step-quick" if args.quick else "train_step"), result)
    print(json.dumps({k: v for k, v in result.items() if k not in ("machine", "reps")}, indent=2))
    print(f"written {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
