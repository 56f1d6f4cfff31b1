"""Peak memory of the index stage's shard assembly (``lsrbench.shards``), no model involved.

A synthetic SPLADE-like collection (``retrieval.py``'s generator: ~120 Zipf terms per document)
is cut into shards the way the index stage cuts a corpus (runs of a permutation of the rows, as
the length order is, not slices), the shards are written with ``write_shard``, and ``docs.npz`` is
assembled from them. Measured: tracemalloc's peak of numpy's allocations during the assembly,
relative to one copy of the CSR arrays (indices + data + indptr), and whether the file equals
``save_sparse`` of the whole matrix byte for byte.

    .venv/bin/python benchmark/shards.py                       # 100k documents, 10 shards
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from common import command_line, machine_info, write_result  # noqa: E402
from retrieval import zipf_rows  # noqa: E402

from lsrbench.index import shards  # noqa: E402
from lsrbench.index.sparse import save_sparse  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--shard", type=int, default=10_000)
    ap.add_argument("--vocab", type=int, default=30_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--output", default="shards")
    args = ap.parse_args(argv)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    rng = np.random.default_rng(args.seed)
    D = zipf_rows(rng, args.docs, args.vocab, 120, 1.0, rng.permutation(args.vocab))
    order = rng.permutation(args.docs)
    parts = [order[lo : lo + args.shard] for lo in range(0, args.docs, args.shard)]
    ids = [str(i) for i in range(args.docs)]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "doc_shards"
        root.mkdir()
        for j, rows in enumerate(parts):
            shards.write_shard(root / shards.shard_name(j), rows, D[rows])
        tracemalloc.start()
        t = time.perf_counter()
        shards._assemble(root, parts, args.docs, D.shape[1], ids, Path(tmp) / "docs.npz")
        seconds = time.perf_counter() - t
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        save_sparse(Path(tmp) / "whole.npz", D, ids)
        identical = (Path(tmp) / "docs.npz").read_bytes() == (Path(tmp) / "whole.npz").read_bytes()
    full = D.nnz * 8 + (args.docs + 1) * 8
    row = {"documents": args.docs, "nnz": int(D.nnz), "shards": len(parts), "shard_rows": args.shard,
           "csr_bytes": full, "assembly_peak_bytes": peak, "assembly_peak_over_csr": round(peak / full, 3),
           "assembly_seconds": round(seconds, 3), "identical_to_save_sparse": identical}
    print(row)
    path = write_result(args.output, {"benchmark": "shards", "command": command_line(), "started": started,
                                      "machine": machine_info(), "result": row})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
