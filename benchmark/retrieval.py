"""Exact top-k retrieval: lsrbench's ``exact_topk`` vs the straightforward scipy approach, side by side.

Synthetic SPLADE-like collection: documents with ~120 distinct terms, queries with ~40, term ids
drawn from a Zipf law (exponent ``--zipf``) over a 30,000-term vocabulary (ranks shuffled over
the ids, as in a real WordPiece vocabulary), weights ``log1p(Gamma(2, 0.6))`` in float32
(typical SPLADE magnitudes, independent of the term). The documents of the smaller sizes are
prefixes of the largest, and the queries are the same for every size.

Reference: ``S = Q @ D.T`` with scipy (``D.T`` converted to CSR once, as an index build) on a
block of queries, then per query ``argpartition`` for the top k and a sort of those k. It runs in
float32 (the data's dtype; the fastest way) and, to check rankings, in float64: scipy sums each
document's products in ascending term order in float64, which is how ``exact_topk`` defines its
scores, so the float64 reference and ``exact_topk`` must agree exactly (ids, order and scores).

Measured at each size: index build time of both; ms/query single-threaded (BLAS limited to one
thread) and with all cores (``threads=cores``; the reference in as many threads over query blocks);
peak memory of build and search (tracemalloc, numpy's allocations) relative to the postings'
bytes (nnz x (4-byte doc id + 4-byte weight)), and of the evaluate stage's load + build from a
docs.npz read into memory vs memory-mapped (``load_sparse(mmap=True)``; the mapped file's pages
are page cache, not counted); the growth exponents over the sizes and the
linear projection to MS MARCO's 8.8M passages. Optionally pyseismic-lsr (approximate) if importable.

    .venv/bin/python benchmark/retrieval.py            # 100k, 300k, 1M documents (~20 min on 2 cores)
    .venv/bin/python benchmark/retrieval.py --quick    # 20k, 40k, 80k (~1 min)
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import command_line, machine_info, write_result  # noqa: E402

from lsrbench.evaluate.retrieval import InvertedIndex, exact_topk  # noqa: E402
from lsrbench.index.sparse import load_sparse, save_sparse  # noqa: E402

MSMARCO_PASSAGES = 8_841_823


# -- data ------------------------------------------------------------------------------------------
def zipf_rows(rng, n_rows: int, vocab: int, target: int, a: float, perm: np.ndarray, chunk: int = 50_000) -> sp.csr_matrix:
    """``n_rows`` rows of ~``target`` distinct Zipf-distributed terms with log1p(Gamma) weights (float32 CSR)."""
    cdf = np.cumsum(1.0 / np.arange(1, vocab + 1) ** a)
    cdf /= cdf[-1]
    draws = _draws_for_distinct(cdf, target, rng)
    indptr = [np.zeros(1, dtype=np.int64)]
    indices, data = [], []
    offset = 0
    for lo in range(0, n_rows, chunk):
        m = min(chunk, n_rows - lo)
        ranks = np.searchsorted(cdf, rng.random((m, draws)))
        ids = np.sort(perm[ranks], axis=1)
        keep = np.ones_like(ids, dtype=bool)
        keep[:, 1:] = ids[:, 1:] != ids[:, :-1]
        counts = keep.sum(axis=1)
        indices.append(ids[keep].astype(np.int32))
        data.append(np.log1p(rng.gamma(2.0, 0.6, size=int(counts.sum()))).astype(np.float32))
        indptr.append(offset + np.cumsum(counts))
        offset += int(counts.sum())
    return sp.csr_matrix((np.concatenate(data), np.concatenate(indices), np.concatenate(indptr)), shape=(n_rows, vocab))


def _draws_for_distinct(cdf: np.ndarray, target: int, rng) -> int:
    """How many Zipf draws per row give ``target`` distinct terms on average (bisection on a sample)."""
    lo, hi = target, target * 20
    while lo < hi:
        mid = (lo + hi) // 2
        ranks = np.searchsorted(cdf, rng.random((400, mid)))
        distinct = np.mean([np.unique(r).size for r in ranks])
        if distinct < target:
            lo = mid + 1
        else:
            hi = mid
    return lo


# -- the reference ---------------------------------------------------------------------------------
def scipy_topk(Q: sp.csr_matrix, DT: sp.csr_matrix, k: int, block: int = 32) -> list[tuple[np.ndarray, np.ndarray]]:
    """Straightforward: S = Q @ D.T per query block, argpartition to the top k, sort those (ties by doc index)."""
    out = []
    for lo in range(0, Q.shape[0], block):
        S = (Q[lo : lo + block] @ DT).tocsr()
        for i in range(S.shape[0]):
            a, b = S.indptr[i], S.indptr[i + 1]
            docs, scores = S.indices[a:b], S.data[a:b]
            pos = scores > 0
            docs, scores = docs[pos], scores[pos]
            if docs.shape[0] > k:
                # The k-th score's ties: keep the lowest doc indices, as exact_topk does.
                cut = np.argpartition(-scores, k - 1)[:k]
                kth = scores[cut].min()
                above = np.flatnonzero(scores > kth)
                tied = np.flatnonzero(scores == kth)
                tied = tied[np.argsort(docs[tied], kind="stable")][: k - above.shape[0]]
                sel = np.concatenate([above, tied])
                docs, scores = docs[sel], scores[sel]
            order = np.lexsort((docs, -scores))
            out.append((docs[order].astype(np.int64), scores[order].astype(np.float64)))
    return out


def run_threaded(fn, Q, n_threads: int, block: int = 32):
    """Run ``fn(Q_block)`` over query blocks in ``n_threads`` threads; concatenate the results."""
    blocks = [Q[lo : lo + block] for lo in range(0, Q.shape[0], block)]
    with ThreadPoolExecutor(n_threads) as pool:
        parts = list(pool.map(fn, blocks))
    return [r for part in parts for r in part]


def same_results(a, b) -> bool:
    return len(a) == len(b) and all(np.array_equal(x[0], y[0]) and np.array_equal(x[1], y[1]) for x, y in zip(a, b))


def overlap_at_k(a, b) -> float:
    vals = [len(set(x[0].tolist()) & set(y[0].tolist())) / max(1, len(y[0])) for x, y in zip(a, b)]
    return float(np.mean(vals))


# -- measurement -----------------------------------------------------------------------------------
class blas_threads:
    def __init__(self, n):
        self.n = n

    def __enter__(self):
        from threadpoolctl import threadpool_limits

        self.ctx = threadpool_limits(limits=self.n)
        return self

    def __exit__(self, *exc):
        self.ctx.restore_original_limits()


def timed(fn, reps: int):
    """Run ``fn`` ``reps`` times; return (median seconds, all seconds, last result)."""
    times, res = [], None
    for _ in range(reps):
        gc.collect()
        t = time.perf_counter()
        res = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), times, res


def peak_memory(fn) -> tuple[int, object]:
    """Peak bytes numpy/Python allocate while ``fn`` runs (above what was allocated before)."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    res = fn()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak, res


def fit_exponent(sizes, values) -> float | None:
    if len(sizes) < 2 or any(v <= 0 for v in values):
        return None
    return float(np.polyfit(np.log(sizes), np.log(values), 1)[0])


def seismic_reference(D: sp.csr_matrix, Q: sp.csr_matrix, k: int, exact, cores: int, settings) -> dict:
    """pyseismic-lsr (approximate), if importable: build time, ms/query and recall@k against ``exact``."""
    try:
        import seismic
        from seismic import SeismicDataset, SeismicIndex
    except ImportError as exc:
        return {"available": False, "reason": f"not importable: {exc}"}
    out = {"available": True, "version": getattr(seismic, "__version__", None), "documents": D.shape[0], "runs": []}
    try:
        from importlib.metadata import version

        out["version"] = version("pyseismic-lsr")
    except Exception:  # noqa: BLE001
        pass
    try:
        ds = SeismicDataset(dim=D.shape[1])
    except TypeError:
        ds = SeismicDataset()
    ds.add_documents_by_id([str(i) for i in range(D.shape[0])], D.indices.astype(np.int64),
                           D.data.astype(np.float32), D.indptr.astype(np.int64))
    string_type = seismic.get_seismic_string()
    qids = np.array([str(i) for i in range(Q.shape[0])], dtype=string_type)
    comps = [np.array([str(t) for t in Q.indices[Q.indptr[i]:Q.indptr[i + 1]]], dtype=string_type) for i in range(Q.shape[0])]
    vals = [Q.data[Q.indptr[i]:Q.indptr[i + 1]].astype(np.float32) for i in range(Q.shape[0])]
    for build_cfg, search_cfgs in settings:
        t = time.perf_counter()
        index = SeismicIndex.build_from_dataset(ds, **build_cfg, num_threads=cores)
        build_s = time.perf_counter() - t
        for search_cfg in search_cfgs:
            row = {"build": build_cfg, "search": search_cfg, "build_s_allcores": round(build_s, 2)}
            for label, threads in (("1thread", 1), ("allcores", cores)):
                index.batch_search(qids[:4], comps[:4], vals[:4], k=k, num_threads=threads, **search_cfg)
                t = time.perf_counter()
                res = index.batch_search(qids, comps, vals, k=k, num_threads=threads, **search_cfg)
                row[f"ms_per_query_{label}"] = round(1000 * (time.perf_counter() - t) / Q.shape[0], 3)
            by_query = {int(hits[0][0]): hits for hits in res if hits}  # results carry their query id
            recalls = []
            for qi, (ids, _) in enumerate(exact):
                want = set(ids.tolist())
                got = {int(h[2]) for h in by_query.get(qi, [])}
                recalls.append(len(want & got) / max(1, len(want)))
            row[f"recall_at_{k}_vs_exact"] = round(float(np.mean(recalls)), 4)
            out["runs"].append(row)
            print(f"  seismic {row}", flush=True)
        del index
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", default="100000,300000,1000000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--scipy-queries", type=int, default=None, help="queries timed for the reference (default: all)")
    ap.add_argument("--k", type=int, default=1000)
    ap.add_argument("--vocab", type=int, default=30_000)
    ap.add_argument("--doc-terms", type=int, default=120)
    ap.add_argument("--query-terms", type=int, default=40)
    ap.add_argument("--zipf", type=float, default=1.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--output", default=None)
    ap.add_argument("--no-seismic", dest="seismic", action="store_false", help="skip the pyseismic-lsr reference")
    ap.add_argument("--seismic-docs", type=int, default=100_000,
                    help="documents for the pyseismic-lsr reference (its build is slow: ~1 min per 100k here)")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.queries, args.reps = "20000,40000,80000", 64, 2
    sizes = sorted(int(s) for s in args.sizes.split(","))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    load_before = os.getloadavg()[0]

    rng = np.random.default_rng(args.seed)
    perm = rng.permutation(args.vocab)
    t = time.perf_counter()
    D_all = zipf_rows(rng, sizes[-1], args.vocab, args.doc_terms, args.zipf, perm)
    Q = zipf_rows(rng, args.queries, args.vocab, args.query_terms, args.zipf, perm)
    print(f"generated {D_all.shape[0]} docs ({D_all.nnz / D_all.shape[0]:.1f} terms/doc), {Q.shape[0]} queries "
          f"({Q.nnz / Q.shape[0]:.1f} terms/query) in {time.perf_counter() - t:.1f}s", flush=True)
    n_ref = min(args.scipy_queries or Q.shape[0], Q.shape[0])
    Q_ref = Q[:n_ref]

    rows = []
    for n in sizes:
        D = D_all[:n]
        postings_bytes = D.nnz * 8
        df = np.bincount(D.indices, minlength=args.vocab)
        touched = float(np.mean([df[Q.indices[Q.indptr[i]:Q.indptr[i + 1]]].sum() for i in range(Q.shape[0])]))
        row = {"documents": n, "nnz": int(D.nnz), "postings_bytes": postings_bytes,
               "postings_touched_per_query": round(touched), "touched_fraction_of_docs": round(touched / n, 3)}
        print(f"\n== {n} documents: {D.nnz} postings ({postings_bytes / 2**20:.0f} MiB), "
              f"{touched / n:.2f} x n_docs postings touched per query", flush=True)

        # Index builds (single-threaded work in both cases).
        with blas_threads(1):
            row["build_s_lsrbench"], _, index = timed(lambda: InvertedIndex.from_csr(D), 1)
            row["build_s_scipy"], _, DT = timed(lambda: D.T.tocsr(), 1)
        row["dense_terms"] = int(index.dense_terms.size)
        row["index_bytes_over_postings"] = round(index.nbytes / postings_bytes, 3)

        # Exactness first: the float64 reference equals exact_topk bit for bit.
        DT64 = DT.astype(np.float64)
        ours = exact_topk(Q_ref, index, args.k)
        ref64 = scipy_topk(Q_ref.astype(np.float64), DT64, args.k)
        row["identical_to_scipy_float64"] = same_results(ours, ref64)
        del DT64, ref64
        gc.collect()

        # Single-threaded: BLAS limited to one thread, no thread pool.
        with blas_threads(1):
            t_ours, all_ours, _ = timed(lambda: exact_topk(Q, index, args.k), args.reps)
            t_ref, all_ref, ref32 = timed(lambda: scipy_topk(Q_ref, DT, args.k), max(1, args.reps - 1))
        row["ms_per_query_1thread_lsrbench"] = round(1000 * t_ours / Q.shape[0], 3)
        row["ms_per_query_1thread_scipy"] = round(1000 * t_ref / n_ref, 3)
        row["speedup_1thread"] = round(row["ms_per_query_1thread_scipy"] / row["ms_per_query_1thread_lsrbench"], 2)
        row["scipy_float32_overlap_at_k"] = round(overlap_at_k(ref32, ours[:n_ref]), 6)
        row["scipy_float32_identical"] = same_results(ref32, ours[:n_ref])
        # All cores.
        t_ours_mt, _, res_mt = timed(lambda: exact_topk(Q, index, args.k, threads=cores), args.reps)
        with blas_threads(1):
            t_ref_mt, _, _ = timed(lambda: run_threaded(lambda b: scipy_topk(b, DT, args.k), Q_ref, cores),
                                   max(1, args.reps - 1))
        row["ms_per_query_allcores_lsrbench"] = round(1000 * t_ours_mt / Q.shape[0], 3)
        row["ms_per_query_allcores_scipy"] = round(1000 * t_ref_mt / n_ref, 3)
        row["speedup_allcores"] = round(row["ms_per_query_allcores_scipy"] / row["ms_per_query_allcores_lsrbench"], 2)
        row["threaded_identical"] = same_results(res_mt, ours) if n_ref == Q.shape[0] else None
        row["seconds_lsrbench_1thread_reps"] = [round(x, 3) for x in all_ours]
        row["seconds_scipy_1thread_reps"] = [round(x, 3) for x in all_ref]
        del DT, ref32, res_mt
        gc.collect()

        # Memory (separate, untimed): peak of the build, and of searching with the index held.
        del index
        gc.collect()
        with blas_threads(1):
            build_peak, index = peak_memory(lambda: InvertedIndex.from_csr(D))
            search_peak, _ = peak_memory(lambda: exact_topk(Q, index, args.k))
        held = index.nbytes
        row["peak_build_over_postings"] = round(build_peak / postings_bytes, 3)
        row["index_plus_search_peak_over_postings"] = round((held + search_peak) / postings_bytes, 3)
        del index
        gc.collect()
        # The evaluate stage: docs.npz loaded (read into memory, or memory-mapped as the stage does)
        # and the index built from it; the matrix is alive during the build.
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "docs.npz"
            save_sparse(path, D, [str(i) for i in range(n)])
            for mode, mmap in (("read", False), ("mmap", True)):
                peak, index = peak_memory(lambda: InvertedIndex.from_csr(load_sparse(path, mmap=mmap)[0]))
                row[f"peak_load_and_build_over_postings_{mode}"] = round(peak / postings_bytes, 3)
                del index
                gc.collect()
        print({k: v for k, v in row.items() if not k.startswith("seconds")}, flush=True)
        rows.append(row)

    growth = {}
    ns = [r["documents"] for r in rows]
    for key in ("build_s_lsrbench", "ms_per_query_1thread_lsrbench", "ms_per_query_1thread_scipy", "build_s_scipy"):
        growth[key] = fit_exponent(ns, [r[key] for r in rows])
        growth[key] = None if growth[key] is None else round(growth[key], 3)
    last = rows[-1]
    scale = MSMARCO_PASSAGES / last["documents"]
    projection = {
        "documents": MSMARCO_PASSAGES, "from_documents": last["documents"], "method": "linear in the number of documents",
        "ms_per_query_1thread_lsrbench": round(last["ms_per_query_1thread_lsrbench"] * scale, 1),
        "ms_per_query_allcores_lsrbench": round(last["ms_per_query_allcores_lsrbench"] * scale, 1),
        "ms_per_query_1thread_scipy": round(last["ms_per_query_1thread_scipy"] * scale, 1),
        "build_s_lsrbench": round(last["build_s_lsrbench"] * scale, 1),
        "postings_gib": round(last["postings_bytes"] * scale / 2**30, 2),
        "index_plus_search_peak_gib": round(last["index_plus_search_peak_over_postings"] * last["postings_bytes"] * scale / 2**30, 2),
    }
    if args.seismic:
        D_s = D_all[: min(args.seismic_docs or D_all.shape[0], D_all.shape[0])]
        exact = exact_topk(Q, InvertedIndex.from_csr(D_s), args.k)
        n_post = args.k * 4
        settings = [
            ({"n_postings": n_post, "centroid_fraction": 0.1, "summary_energy": 0.4},
             [{"query_cut": 20, "heap_factor": 0.8}, {"query_cut": 40, "heap_factor": 0.9}]),
            ({"n_postings": n_post * 4, "centroid_fraction": 0.1, "summary_energy": 0.5},
             [{"query_cut": 40, "heap_factor": 0.9}, {"query_cut": 40, "heap_factor": 1.0}]),
        ]
        seismic = seismic_reference(D_s, Q, args.k, exact, cores, settings)
        del exact
    else:
        seismic = {"available": None, "reason": "not run (--no-seismic)"}
    name = args.output or ("retrieval" + ("-quick" if args.quick else ""))
    path = write_result(name, {
        "benchmark": "retrieval", "command": command_line(), "started": started, "machine": machine_info(),
        "data": {"vocab": args.vocab, "doc_terms_target": args.doc_terms, "query_terms_target": args.query_terms,
                 "zipf_exponent": args.zipf, "weights": "log1p(Gamma(2, 0.6)) float32", "queries": Q.shape[0],
                 "reference_queries": n_ref, "k": args.k, "seed": args.seed,
                 "doc_terms_mean": round(D_all.nnz / D_all.shape[0], 2), "query_terms_mean": round(Q.nnz / Q.shape[0], 2)},
        "cores": cores, "load_average_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "sizes": rows, "growth_exponents": growth, "projection": projection, "seismic": seismic,
    })
    print(f"\ngrowth exponents {growth}\nprojection {projection}\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
