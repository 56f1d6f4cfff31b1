"""Which ways of shrinking the paper grid's encode bill keep every output byte-identical (on this CPU)?

For SPLADE-tiny on the first Vaswani documents (length 256, batch 32, the index stage's own
``EncodePlan`` order), each candidate's vectors are compared byte for byte with today's:

* ``token_budget``: batches cut by a token budget (batch x padded length <= 32 x 256) instead of a
  fixed count, in the same length order;
* ``batch_64``: a larger fixed batch (64);
* ``alone``: every document encoded by itself (no padding): would a text's vector be the same in
  any batch? (the premise of sharing rows between corpora that overlap without being equal:
  FEVER / Climate-FEVER, NanoBEIR inside BEIR, duplicate texts);
* ``superset``: the same documents inside a corpus with one more document (FEVER's 5,416,568 vs
  Climate-FEVER's 5,416,593), whose length order shifts every later batch;
* ``host_savings``: the next batch tokenised in a thread and non-zeros found on the device
  (``FastSplade.prefetch`` / ``nonzero_on_device``, on by default on a GPU);
* twins: the x10 head twin of the tiny default rescaled by k = 10 (and by the auto k of its
  norms), and a x16 twin at k = 16, against the original at k = 1, weight by weight: where the
  weights are byte-identical, the twin's training and index are the original's.

Nothing is timed. Writes ``results/identity[-quick].json``.

    .venv/bin/python benchmark/identity.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import SHARED, command_line, machine_info, write_result  # noqa: E402
from encode import load_texts  # noqa: E402

MODEL = SHARED / "models" / "splade-tiny-msmarco"
LENGTH, BATCH = 256, 32


def rows_identical(a, b) -> dict:
    """Per row: same column indices and the same float32 bytes."""
    same = 0
    for i in range(a.shape[0]):
        ra, rb = a.indptr[i : i + 2], b.indptr[i : i + 2]
        ia, ib = a.indices[ra[0] : ra[1]], b.indices[rb[0] : rb[1]]
        va, vb = a.data[ra[0] : ra[1]], b.data[rb[0] : rb[1]]
        same += bool(np.array_equal(ia, ib) and va.tobytes() == vb.tobytes())
    diff = (a - b).tocsr()
    return {"rows": int(a.shape[0]), "rows_byte_identical": same, "share": round(same / max(1, a.shape[0]), 4),
            "max_abs_difference": float(np.abs(diff.data).max()) if diff.nnz else 0.0,
            "same_nonzero_set": bool(((a != 0) != (b != 0)).nnz == 0)}


def encode_in_batches(model, texts: list[str], batches: list[list[int]]):
    """Rows of ``texts`` encoded in exactly these batches (lists of row indices), in input order."""
    import scipy.sparse as sp

    from lsrbench.index.fast_splade import FastSplade

    fast = FastSplade.build(model, "document", max(len(b) for b in batches))  # each call below: one batch
    parts = [fast.encode([texts[i] for i in b]) for b in batches]
    order = np.concatenate([np.asarray(b) for b in batches])
    return sp.vstack(parts, format="csr")[np.argsort(order, kind="stable")]


def token_budget_batches(model, texts: list[str], order: np.ndarray, budget: int) -> list[list[int]]:
    """``order`` (longest first) cut so that batch size x its longest text's tokens <= budget."""
    tokens = model.preprocess(texts, task="document")["attention_mask"].sum(dim=1).tolist()
    batches, current, longest = [], [], 0
    for i in order.tolist():
        if current and max(longest, tokens[i]) * (len(current) + 1) > budget:
            batches.append(current)
            current, longest = [], 0
        current.append(i)
        longest = max(longest, tokens[i])
    return batches + ([current] if current else [])


def twins() -> dict:
    """Head weights of twins rescaled back vs the original's, entry by entry."""
    import torch

    from lsrbench.model.encoder import build_sparse_encoder
    from lsrbench.model.rescale import mlm_head

    def head(**kw):
        return mlm_head(build_sparse_encoder(str(MODEL), LENGTH, device="cpu", **kw)[0].auto_model).weight.detach()

    original = head()
    out = {}
    norm = float(torch.linalg.norm(original))
    for name, scale, k in (("x10 at k=10", 10.0, 10.0), ("x16 at k=16", 16.0, 16.0)):
        w = head(head_scale=scale, k=k)
        out[name] = {"entries_byte_identical_share": round(float((w == original).float().mean()), 6),
                     "all_identical": bool(torch.equal(w, original))}
    scaled = head(head_scale=10.0)
    auto = float(torch.linalg.norm(scaled)) / norm  # the auto k of the Frobenius norms (lsrbench.model.auto_k)
    w = head(head_scale=10.0, k=auto)
    out[f"x10 at k=auto ({auto!r})"] = {"entries_byte_identical_share": round(float((w == original).float().mean()), 6),
                                        "all_identical": bool(torch.equal(w, original))}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=512)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    import torch

    from lsrbench.index.encode import EncodePlan
    from lsrbench.index.fast_splade import FastSplade
    from lsrbench.model.encoder import build_sparse_encoder

    torch.set_num_threads(1)
    n = 64 if args.quick else args.docs
    texts = load_texts(SHARED / "data" / "vaswani" / "corpus.jsonl", n + 1)
    extra, texts = texts[-1], texts[:-1]
    model = build_sparse_encoder(str(MODEL), LENGTH, device="cpu")
    plan = EncodePlan(model, texts, "document", BATCH)
    base = plan.encode_all()
    order = plan.order
    fixed = [order[i : i + BATCH].tolist() for i in range(0, n, BATCH)]
    assert rows_identical(encode_in_batches(model, texts, fixed), base)["share"] == 1.0  # the harness itself
    res = {"token_budget": rows_identical(encode_in_batches(model, texts, token_budget_batches(model, texts, order, BATCH * LENGTH)), base),
           "batch_64": rows_identical(EncodePlan(model, texts, "document", 64).encode_all(), base),
           "alone": rows_identical(encode_in_batches(model, texts, [[i] for i in range(n)]), base)}
    bigger = EncodePlan(model, [extra] + texts, "document", BATCH).encode_all()[1:]
    res["superset"] = rows_identical(bigger, base)
    FastSplade.prefetch = FastSplade.nonzero_on_device = True
    try:
        res["host_savings"] = rows_identical(EncodePlan(model, texts, "document", BATCH).encode_all(), base)
    finally:
        FastSplade.prefetch = FastSplade.nonzero_on_device = None
    res["twins"] = twins()
    name = "identity" + ("-quick" if args.quick else "")
    path = write_result(name, {"benchmark": "identity", "command": command_line(), "machine": machine_info(),
                               "model": "splade-tiny-msmarco", "documents": n, "length": LENGTH, "batch": BATCH,
                               "torch_threads": 1, "results": res})
    for key, value in res.items():
        print(key, value)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
