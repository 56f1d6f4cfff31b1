"""Top-k retrieval peers side by side, same process, same data: lsrbench ``exact_topk``, BMP's safe mode,
pyseismic-lsr and the scipy reference, on the realistic (fitted) and the adversarial collections.

Collections (``--collections``):

* ``realistic``: sampled from the fit of SPLADE-tiny on Vaswani (``realistic.py``), documents in
  random order (no document reordering); queries sampled from the same fit;
* ``realistic-clustered``: the same documents grouped by their topic cluster (a crude stand-in for
  the graph-bisection reordering BMP's published numbers use; it only changes the document order);
* ``adversarial``: ``retrieval.py``'s generator (Zipf term ids, weights independent of the term).

The documents of smaller sizes are prefixes of the largest (a random-order sample's prefix is a
sample); the queries are the same at every size. Every system runs single-threaded (BLAS, numba,
rayon and the libraries' own thread settings at 1). Per repetition, the systems run one after the
other over all queries, in an order that alternates between repetitions (forward, then reversed);
reported: the median ms/query and its spread. Agreement with the exact float64 ranking
(``exact_topk``, itself checked equal to scipy's float64 product): overlap@k, and whether the
ranking is identical.

Systems (optional ones are skipped, with a note, when not importable; ``pip install -e .[peers]``):

* ``lsrbench``: ``InvertedIndex.from_csr`` + ``exact_topk(threads=1)`` (the score-rows first pass);
* ``lsrbench-stream``: the same index, ``exact_topk(threads=1, first_pass="stream")``;
* ``scipy``: ``D.T`` as CSR (its build), ``Q @ DT`` in float32 per block of 32 queries, argpartition;
* ``bmp`` (PyPI ``bmp``, Mallia et al. SIGIR 2024), safe mode ``alpha = beta = 1``, blocks of 32:
  its index stores 8-bit document weights (a value is cast to ``u8``: above 255 it wraps), so they
  are quantized here as ``round(w * 255 / max w)``; the searcher scales query weights to
  ``ceil(w * 32 / max_q w)`` and sums the products in 16-bit integers (a score above 65,535 wraps):
  queries whose best quantized score exceeds it are counted;
* ``seismic`` (PyPI ``pyseismic-lsr``), approximate: the fastest of a small grid of settings whose
  recall@k against the exact ranking is >= 0.99 (the grid and every result are recorded).

    .venv/bin/python benchmark/peers.py                 # 100k and 1M documents, k = 10 and 1000
    .venv/bin/python benchmark/peers.py --quick         # 20k documents, 64 queries (a smoke run)
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS", "RAYON_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import command_line, machine_info, write_result  # noqa: E402
from samples import CACHE, collection  # noqa: E402

from lsrbench.evaluate.retrieval import InvertedIndex, exact_topk  # noqa: E402

MSMARCO_PASSAGES = 8_841_823
BMP_BLOCK = 32
BMP_DOC_LEVELS = 255  # u8
BMP_QUERY_LEVELS = 32  # the searcher's MAX_TERM_WEIGHT
BMP_SCORE_MAX = 65_535  # u16 accumulator


# -- systems -------------------------------------------------------------------------------------------
class System:
    name = "?"
    exact = False

    def available(self) -> str | None:
        return None

    def build(self, D: sp.csr_matrix):
        raise NotImplementedError

    def search(self, handle, Q: sp.csr_matrix, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        raise NotImplementedError

    def nbytes(self, handle) -> int:
        raise NotImplementedError

    def close(self, handle) -> None:
        pass


class Lsrbench(System):
    """``exact_topk`` with one of its first passes (``lsrbench``: the score rows, the default;
    ``lsrbench-stream``: ``first_pass="stream"``); the same index, the same results."""

    exact = True

    def __init__(self, first_pass: str = "rows"):
        self.first_pass = first_pass
        self.name = "lsrbench" if first_pass == "rows" else f"lsrbench-{first_pass}"

    def build(self, D):
        return InvertedIndex.from_csr(D)

    def search(self, index, Q, k):
        return exact_topk(Q, index, k, threads=1, first_pass=self.first_pass)

    def nbytes(self, index):
        return index.nbytes


class Scipy(System):
    name = "scipy"

    def build(self, D):
        return D.T.tocsr()

    def search(self, DT, Q, k):
        import retrieval

        return retrieval.scipy_topk(Q, DT, k)

    def nbytes(self, DT):
        return DT.data.nbytes + DT.indices.nbytes + DT.indptr.nbytes


class Bmp(System):
    """BMP safe mode; see the module docstring for its integer formats."""

    name = "bmp"

    def __init__(self, doc_scale: float | None = None):
        self.doc_scale = doc_scale  # None: 255 / the collection's largest weight

    def available(self):
        try:
            import bmp  # noqa: F401
        except ImportError as exc:
            return f"not importable ({exc}); pip install bmp==0.2.8"
        return None

    def quantize(self, D):
        scale = self.doc_scale or BMP_DOC_LEVELS / float(D.data.max())
        q = np.minimum(np.floor(D.data.astype(np.float64) * scale + 0.5), BMP_DOC_LEVELS).astype(np.int64)
        Dq = sp.csr_matrix((q, D.indices.copy(), D.indptr.copy()), shape=D.shape)  # eliminate_zeros works in place
        Dq.eliminate_zeros()
        return Dq, scale

    def build(self, D):
        import bmp

        Dq, scale = self.quantize(D)
        folder = CACHE / f"bmp-index-{os.getpid()}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        path = folder / "index.bmp"
        names = [str(t) for t in range(D.shape[1])]
        indexer = bmp.Indexer(str(path), bsize=BMP_BLOCK, compress_range=False)
        ind, dat, ptr = Dq.indices, Dq.data, Dq.indptr
        for i in range(Dq.shape[0]):
            a, b = ptr[i], ptr[i + 1]
            indexer.add_document(str(i), dict(zip([names[t] for t in ind[a:b].tolist()], dat[a:b].tolist())))
        indexer.finish()
        searcher = bmp.Searcher(str(path))
        del Dq
        return {"searcher": searcher, "path": path, "folder": folder, "scale": scale}

    def search(self, h, Q, k):
        searcher = h["searcher"]
        out = []
        for i in range(Q.shape[0]):
            a, b = Q.indptr[i], Q.indptr[i + 1]
            if b == a:
                out.append((np.zeros(0, np.int64), np.zeros(0)))
                continue
            query = {str(t): float(w) for t, w in zip(Q.indices[a:b].tolist(), Q.data[a:b].tolist())}
            docs, scores = searcher.search(query, k=k, alpha=1.0, beta=1.0)
            out.append((np.array([int(d) for d in docs], dtype=np.int64), np.asarray(scores, dtype=np.float64)))
        return out

    def nbytes(self, h):
        return h["path"].stat().st_size

    def close(self, h):
        h["searcher"] = None
        shutil.rmtree(h["folder"], ignore_errors=True)

    @staticmethod
    def query_ints(Q):
        """The searcher's query weights: ceil(w * 32 / max w) per query (integers 1..32)."""
        Q = Q.tocsr().astype(np.float64)
        mx = np.maximum.reduceat(Q.data, Q.indptr[:-1]) if Q.nnz else np.zeros(0)
        per = np.repeat(mx, np.diff(Q.indptr))
        data = np.ceil(Q.data.astype(np.float32) * np.float32(BMP_QUERY_LEVELS) / per.astype(np.float32)).astype(np.int64)
        return sp.csr_matrix((data, Q.indices, Q.indptr), shape=Q.shape)


class Seismic(System):
    name = "seismic"

    def __init__(self, build_cfg: dict, search_cfg: dict):
        self.build_cfg, self.search_cfg = build_cfg, search_cfg

    def available(self):
        try:
            import seismic  # noqa: F401
        except ImportError as exc:
            return f"not importable ({exc}); pip install pyseismic-lsr"
        return None

    def build(self, D):
        import seismic
        from seismic import SeismicDataset, SeismicIndex

        ds = SeismicDataset()
        ds.add_documents_by_id([str(i) for i in range(D.shape[0])], D.indices.astype(np.int64),
                               D.data.astype(np.float32), D.indptr.astype(np.int64))
        index = SeismicIndex.build_from_dataset(ds, **self.build_cfg, num_threads=1)
        del ds
        return {"index": index, "string": seismic.get_seismic_string()}

    def _queries(self, h, Q):
        key = id(Q)
        if h.get("qkey") != key:
            st = h["string"]
            h["qkey"] = key
            h["qids"] = np.array([str(i) for i in range(Q.shape[0])], dtype=st)
            h["comps"] = [np.array([str(t) for t in Q.indices[Q.indptr[i]:Q.indptr[i + 1]]], dtype=st) for i in range(Q.shape[0])]
            h["vals"] = [Q.data[Q.indptr[i]:Q.indptr[i + 1]].astype(np.float32) for i in range(Q.shape[0])]
        return h["qids"], h["comps"], h["vals"]

    def search(self, h, Q, k):
        qids, comps, vals = self._queries(h, Q)
        res = h["index"].batch_search(qids, comps, vals, k=k, num_threads=1, **self.search_cfg)
        by_q = {}
        for hits in res:
            if hits:
                by_q[int(hits[0][0])] = hits
        out = []
        for i in range(Q.shape[0]):
            hits = by_q.get(i, [])
            out.append((np.array([int(h_[2]) for h_ in hits], dtype=np.int64), np.array([h_[1] for h_ in hits], dtype=np.float64)))
        return out

    def nbytes(self, h):
        """The index's own space report ("Total: N Bytes"), which it prints to the process's stdout."""
        import re
        import tempfile

        sys.stdout.flush()
        saved = os.dup(1)
        with tempfile.TemporaryFile(mode="w+b") as tmp:
            os.dup2(tmp.fileno(), 1)
            try:
                h["index"].print_space_usage_byte()
            finally:
                os.dup2(saved, 1)
                os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode(errors="replace")
        m = re.search(r"Total:\s*(\d+)\s*Bytes", text)
        return int(m.group(1)) if m else -1


# -- agreement -----------------------------------------------------------------------------------------
def overlap(res, exact, k) -> float:
    vals = []
    for (a, _), (b, _) in zip(res, exact):
        want = set(b[:k].tolist())
        vals.append(len(want & set(a[:k].tolist())) / max(1, len(want)))
    return float(np.mean(vals))


def identical(res, exact) -> bool:
    return all(np.array_equal(a, b) and np.array_equal(s, t) for (a, s), (b, t) in zip(res, exact))


def bmp_integer_report(D: sp.csr_matrix, Q: sp.csr_matrix, k: int, bmp_res, scale: float) -> dict:
    """What BMP's integers cost: its quantized scores exactly (int64), the queries whose best quantized
    score passes 65,535 (the u16 accumulator wraps), and the overlap of BMP's own results with the
    exact top-k of the quantized scores (is it safe for its own scores)."""
    Q = Q[: len(bmp_res)]  # the queries BMP was timed on (--slow-queries)
    Dq, _ = Bmp(scale).quantize(D)
    Qi = Bmp.query_ints(Q)
    over_best, over_any_topk, own_overlap = 0, 0, []
    DqT = Dq.T.tocsr()
    for lo in range(0, Q.shape[0], 16):
        S = (Qi[lo:lo + 16] @ DqT).toarray()
        for j in range(S.shape[0]):
            row = S[j]
            kk = min(k, int((row > 0).sum()))
            if kk == 0:
                own_overlap.append(1.0)
                continue
            top = np.argpartition(-row, kk - 1)[:kk]
            kth = row[top].min()
            if row.max() > BMP_SCORE_MAX:
                over_best += 1
            if kth > BMP_SCORE_MAX or (row > BMP_SCORE_MAX).any():
                over_any_topk += 1
            got = bmp_res[lo + j][0][:k]
            # ties at the k-th quantized score: any of them is a correct answer
            ok = np.sum(row[got] >= kth) if got.size else 0
            own_overlap.append(min(1.0, ok / kk))
    return {"doc_scale": scale, "queries": int(Q.shape[0]),
            "queries_best_quantized_score_over_65535": over_best,
            "queries_with_any_document_over_65535": over_any_topk,
            "overlap_with_exact_topk_of_its_own_quantized_scores": round(float(np.mean(own_overlap)), 4)}


# -- memory probe (a child process per system: its own peak RSS) --------------------------------------
def _rss_kib(field: str) -> int:
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return -1


def memory_probe(kind: str, n_docs: int, n_queries: int, k: int, system: str, seismic_cfg: str | None) -> dict:
    D, Q = collection(kind, n_docs, n_queries)
    sysobj = make_system(system, json.loads(seismic_cfg) if seismic_cfg else None)
    # Warm-up on a slice (imports, numba's compiled kernels), so that only the index and search count.
    h = sysobj.build(D[: min(D.shape[0], 4096)])
    sysobj.search(h, Q[:2], k)
    sysobj.close(h)
    del h
    gc.collect()
    try:  # reset the peak RSS (Linux >= 4.0) so the loading above does not count
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass
    base = _rss_kib("VmRSS")
    h = sysobj.build(D)
    after_build = _rss_kib("VmHWM")
    sysobj.search(h, Q, k)
    peak = _rss_kib("VmHWM")
    sysobj.close(h)
    postings = D.nnz * 8
    return {"system": system, "documents": n_docs, "k": k, "rss_base_mib": round(base / 1024, 1),
            "peak_build_mib": round((after_build - base) / 1024, 1), "peak_build_and_search_mib": round((peak - base) / 1024, 1),
            "peak_over_postings_bytes": round((peak - base) * 1024 / postings, 3)}


def make_system(name: str, seismic_cfg: dict | None = None) -> System:
    if name == "lsrbench":
        return Lsrbench()
    if name == "lsrbench-stream":
        return Lsrbench("stream")
    if name == "scipy":
        return Scipy()
    if name == "bmp":
        return Bmp()
    if name == "seismic":
        cfg = seismic_cfg or {"build": {}, "search": {}}
        return Seismic(cfg["build"], cfg["search"])
    raise ValueError(name)


# -- the run -------------------------------------------------------------------------------------------
def seismic_grid(n_docs: int, k: int) -> list[tuple[dict, list[dict]]]:
    """Seismic settings tried (fastest with recall >= 0.99 is reported): n_postings (postings kept per
    term) proportional to the collection, as recall depends on the share of each list kept."""
    scale = max(1.0, n_docs / 100_000)
    if k <= 10:  # (a first grid, n_postings 2000 / energy 0.4 / heap_factor 0.8-1.0, peaked at recall 0.94)
        return [({"n_postings": int(4000 * scale), "centroid_fraction": 0.1, "summary_energy": 0.5},
                 [{"query_cut": 10, "heap_factor": 0.6}, {"query_cut": 20, "heap_factor": 0.5}, {"query_cut": 30, "heap_factor": 0.3}])]
    return [({"n_postings": int(8000 * scale), "centroid_fraction": 0.1, "summary_energy": 0.5},
             [{"query_cut": 20, "heap_factor": 0.9}, {"query_cut": 20, "heap_factor": 0.8}, {"query_cut": 40, "heap_factor": 1.0}])]


def timed_build(system: System, D):
    gc.collect()
    t = time.perf_counter()
    h = system.build(D)
    return h, time.perf_counter() - t


def run_size(kind: str, n: int, args, out: dict) -> dict:
    D, Q = collection(kind, n, args.queries)
    nq = Q.shape[0]
    df = np.bincount(D.indices, minlength=D.shape[1])
    touched = np.add.reduceat(df[Q.indices], Q.indptr[:-1]) if Q.nnz else np.zeros(nq)
    touched[np.diff(Q.indptr) == 0] = 0  # reduceat gives the next row's first value for an empty row
    row = {"collection": kind, "documents": n, "queries": nq, "nnz": int(D.nnz), "postings_bytes": int(D.nnz * 8),
           "postings_touched_per_query_over_n": round(float(np.mean(touched)) / n, 3),
           "systems": {}, "k": {}}
    del df
    print(f"\n== {kind}, {n} documents ({D.nnz / n:.1f} nnz/doc), {nq} queries ({Q.nnz / nq:.1f} nnz/query)", flush=True)
    systems = [s for s in args.systems.split(",")]
    handles, objs = {}, {}
    for name in systems:
        obj = make_system(name) if name != "seismic" else None
        if obj is not None and (why := obj.available()):
            row["systems"][name] = {"skipped": why}
            continue
        if name == "seismic":
            if (why := Seismic({}, {}).available()):
                row["systems"][name] = {"skipped": why}
            continue  # built per k below (its settings depend on k)
        if name.startswith("lsrbench-") and "lsrbench" in handles:  # the same index as lsrbench's
            h, build_s = handles["lsrbench"], row["systems"]["lsrbench"]["build_s"]
        else:
            h, build_s = timed_build(obj, D)
        handles[name], objs[name] = h, obj
        row["systems"][name] = {"build_s": round(build_s, 2), "index_bytes": int(obj.nbytes(h)),
                                "index_bytes_over_postings": round(obj.nbytes(h) / (D.nnz * 8), 3)}
        print(f"  built {name} in {build_s:.1f} s", flush=True)
    for k in args.ks:
        exact = objs["lsrbench"].search(handles["lsrbench"], Q, k) if "lsrbench" in objs else None
        kr = {"systems": {}}
        # Exactness of the reference: exact_topk vs scipy's float64 product, ranks and scores.
        if exact is not None and args.check_float64:
            import retrieval

            DT64 = D.T.tocsr().astype(np.float64)
            kr["lsrbench_identical_to_scipy_float64"] = identical(exact, retrieval.scipy_topk(Q.astype(np.float64), DT64, k))
            del DT64
            gc.collect()
        active = [s for s in systems if s in objs]
        # Seismic: pick the fastest setting with recall >= 0.99 (each timed once here, then like the rest).
        if "seismic" in systems and "seismic" not in row["systems"] and exact is not None and n <= args.seismic_max_docs:
            tried, best = [], None
            for build_cfg, search_cfgs in seismic_grid(n, k):
                sobj = Seismic(build_cfg, {})
                h, build_s = timed_build(sobj, D)
                for sc in search_cfgs:
                    sobj.search_cfg = sc
                    sobj.search(h, Q[:8], k)
                    t = time.perf_counter()
                    res = sobj.search(h, Q, k)
                    ms = 1000 * (time.perf_counter() - t) / nq
                    rec = overlap(res, exact, k)
                    tried.append({"build": build_cfg, "search": sc, "build_s": round(build_s, 1), "ms_per_query": round(ms, 3),
                                  f"recall_at_{k}": round(rec, 4), "index_bytes": sobj.nbytes(h)})
                    print(f"  seismic {tried[-1]}", flush=True)
                    if rec >= 0.99 and (best is None or ms < best[0]):
                        best = (ms, build_cfg, sc, build_s)
                if best is not None and best[1] is build_cfg:
                    sobj.search_cfg = best[2]
                    handles["seismic"], objs["seismic"] = h, sobj
                else:
                    del h
                    gc.collect()
            kr["seismic_grid"] = tried
            if best is not None:
                active.append("seismic")
                kr["seismic_chosen"] = {"build": best[1], "search": best[2], "build_s": round(best[3], 2)}
            else:
                kr["seismic_chosen"] = None
        elif "seismic" in systems and n > args.seismic_max_docs:
            kr["seismic_skipped"] = f"not run above {args.seismic_max_docs} documents (--seismic-max-docs: its build time)"
        times = {s: [] for s in active}  # CPU time of the process (every system runs one thread)
        walls = {s: [] for s in active}
        results = {}
        for name in active:  # warm-up (numba compilation, caches)
            objs[name].search(handles[name], Q[:8], k)
        for rep in range(args.reps):
            order = active if rep % 2 == 0 else active[::-1]
            for name in order:
                nq_s = nq if name not in ("scipy", "bmp") else min(nq, args.slow_queries or nq)
                gc.collect()
                t, c = time.perf_counter(), time.process_time()
                res = objs[name].search(handles[name], Q[:nq_s], k)
                times[name].append(1000 * (time.process_time() - c) / nq_s)
                walls[name].append(1000 * (time.perf_counter() - t) / nq_s)
                results[name] = res
        for name in active:
            ts = times[name]
            ws = walls[name]
            r = {"ms_per_query": round(statistics.median(ts), 3), "ms_per_query_min_max": [round(min(ts), 3), round(max(ts), 3)],
                 "ms_per_query_reps": [round(x, 3) for x in ts], "wall_ms_per_query": round(statistics.median(ws), 3),
                 "wall_ms_per_query_reps": [round(x, 3) for x in ws], "queries_timed": len(results[name])}
            if exact is not None:
                r[f"overlap_at_{k}_vs_exact"] = round(overlap(results[name], exact[: len(results[name])], k), 5)
                r["identical_to_exact"] = identical(results[name], exact[: len(results[name])])
                r["same_documents_in_order"] = all(np.array_equal(a, b) for (a, _), (b, _) in zip(results[name], exact))
            if name == "seismic":
                r.update(kr.get("seismic_chosen") or {})
                r["index_bytes"] = objs[name].nbytes(handles[name])
            kr["systems"][name] = r
        if "bmp" in objs and exact is not None:
            kr["bmp_integers"] = bmp_integer_report(D, Q, k, results["bmp"], handles["bmp"]["scale"])
        if "lsrbench" in times:
            base = statistics.median(times["lsrbench"])
            for name in active:
                kr["systems"][name]["time_over_lsrbench"] = round(statistics.median(times[name]) / base, 3)
                # per-repetition ratios (same repetition, adjacent in time): their spread
                ratios = [a / b for a, b in zip(times[name], times["lsrbench"])]
                kr["systems"][name]["time_over_lsrbench_min_max"] = [round(min(ratios), 3), round(max(ratios), 3)]
        print(f"  k={k}: " + ", ".join(f"{s} {kr['systems'][s]['ms_per_query']} ms/q (overlap {kr['systems'][s].get(f'overlap_at_{k}_vs_exact')})"
                                       for s in active), flush=True)
        if "bmp_integers" in kr:
            print(f"  bmp integers: {kr['bmp_integers']}", flush=True)
        row["k"][str(k)] = kr
        if "seismic" in objs:
            objs["seismic"].close(handles.pop("seismic"))
            objs.pop("seismic")
            gc.collect()
    for name, h in handles.items():
        objs[name].close(h)
    del handles
    gc.collect()
    if args.memory:
        row["memory"] = {}
        for name in [s for s in systems if s in ("lsrbench", "lsrbench-stream", "scipy", "bmp") and "skipped" not in row["systems"].get(s, {})]:
            cmd = [sys.executable, __file__, "--memory-probe", name, "--collections", kind, "--sizes", str(n),
                   "--queries", str(args.queries), "--ks", str(max(args.ks))]
            pr = subprocess.run(cmd, capture_output=True, text=True)
            try:
                row["memory"][name] = json.loads(pr.stdout.strip().splitlines()[-1])
            except (IndexError, json.JSONDecodeError):
                row["memory"][name] = {"error": pr.stderr[-2000:]}
            print(f"  memory {name}: {row['memory'][name]}", flush=True)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--collections", default="realistic,adversarial")
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--slow-queries", type=int, default=None, help="queries timed for scipy and bmp (default: all)")
    ap.add_argument("--ks", default="10,1000")
    ap.add_argument("--systems", default="lsrbench,lsrbench-stream,bmp,seismic,scipy")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seismic-max-docs", type=int, default=100_000)
    ap.add_argument("--no-memory", dest="memory", action="store_false")
    ap.add_argument("--no-float64-check", dest="check_float64", action="store_false")
    ap.add_argument("--output", default=None)
    ap.add_argument("--memory-probe", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.queries, args.reps = "20000", 64, 2
    args.ks = [int(x) for x in str(args.ks).split(",")]
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.memory_probe:
        print(json.dumps(memory_probe(args.collections, sizes[0], args.queries, args.ks[0], args.memory_probe, None)))
        return 0
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    load_before = os.getloadavg()
    name = args.output or ("peers" + ("-quick" if args.quick else ""))
    payload = {"benchmark": "peers", "command": command_line(), "started": started, "machine": machine_info(),
               "threads": {v: os.environ.get(v) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                                          "NUMBA_NUM_THREADS", "RAYON_NUM_THREADS")},
               "versions": _versions(), "bmp": {"block": BMP_BLOCK, "alpha": 1.0, "beta": 1.0, "doc_levels": BMP_DOC_LEVELS,
                                                "query_levels": BMP_QUERY_LEVELS, "score_max": BMP_SCORE_MAX},
               "load_average_before": [round(x, 2) for x in load_before], "rows": []}
    for kind in args.collections.split(","):
        for n in sizes:
            payload["rows"].append(run_size(kind, n, args, payload))
            payload["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
            write_result(name, payload)  # after every size: a partial record survives an interrupted run
    print(f"wrote {write_result(name, payload)}")
    return 0


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("bmp", "pyseismic-lsr", "numba", "numpy", "scipy"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out


if __name__ == "__main__":
    raise SystemExit(main())
