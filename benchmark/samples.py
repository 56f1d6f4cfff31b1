"""The collections the retrieval peers run on, cached in ``benchmark/.cache/`` (gitignored), and their
statistics beside the real vectors' (``realistic.py``'s report on these cached samples).

Kinds: ``realistic`` (sampled from ``realistic.py``'s fit of SPLADE-tiny on Vaswani, random document
order), ``realistic-clustered`` (the same documents grouped by topic cluster), ``adversarial``
(``retrieval.py``'s generator: Zipf term ids, weights independent of the term). A smaller size is a
prefix of the largest cached sample (a random-order sample's prefix is a sample).

    .venv/bin/python benchmark/samples.py --sizes 100000,1000000 --output realistic-fit-peers
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))

import realistic  # noqa: E402
import retrieval  # noqa: E402

CACHE = realistic.CACHE


def collection(kind: str, n_docs: int, n_queries: int, seed: int = 0) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Documents (the first ``n_docs`` of the cached largest sample) and queries of a collection kind."""
    CACHE.mkdir(exist_ok=True)
    base = "realistic" if kind.startswith("realistic") else kind
    path = CACHE / f"{base}-{n_docs}-{seed}.npz"
    qpath = CACHE / f"{base}-queries-{n_queries}-{seed}.npz"
    bigger = sorted((p for p in CACHE.glob(f"{base}-*-{seed}.npz") if len(p.stem.split("-")) == 3 and p.stem.split("-")[1].isdigit()
                     and int(p.stem.split("-")[1]) >= n_docs), key=lambda p: int(p.stem.split("-")[1]))
    if bigger:
        D = sp.load_npz(bigger[0]).tocsr()[:n_docs]
    else:
        D = _generate(base, n_docs, seed)
        tmp = path.with_suffix(".tmp.npz")
        sp.save_npz(tmp, D, compressed=False)
        os.replace(tmp, path)
    if qpath.is_file():
        Q = sp.load_npz(qpath).tocsr()
    else:
        Q = _generate_queries(base, n_queries, seed)
        sp.save_npz(qpath, Q, compressed=False)
    if kind == "realistic-clustered":
        D = D[np.argsort(_clusters_of(D, seed), kind="stable")]
    return D, Q


def _generate(base: str, n: int, seed: int) -> sp.csr_matrix:
    t = time.perf_counter()
    if base == "realistic":
        D, clusters = realistic.sample_documents(realistic.load_fit(), n, seed, return_clusters=True)
        np.save(CACHE / f"realistic-clusters-{n}-{seed}.npy", clusters.astype(np.int16))
    else:
        rng = np.random.default_rng(seed)
        perm = rng.permutation(30_000)
        D = retrieval.zipf_rows(rng, n, 30_000, 120, 1.0, perm)
    print(f"generated {n} {base} documents in {time.perf_counter() - t:.0f} s", flush=True)
    return D


def _generate_queries(base: str, n: int, seed: int) -> sp.csr_matrix:
    if base == "realistic":
        return realistic.sample_queries(realistic.load_fit(), n, seed)
    perm = np.random.default_rng(seed).permutation(30_000)  # the documents' term-id permutation
    return retrieval.zipf_rows(np.random.default_rng([seed, 2]), n, 30_000, 40, 1.0, perm)


def _clusters_of(D: sp.csr_matrix, seed: int) -> np.ndarray:
    """Cluster labels of the cached realistic documents (saved beside them when generated)."""
    paths = sorted(CACHE.glob(f"realistic-clusters-*-{seed}.npy"), key=lambda p: int(p.stem.split("-")[2]))
    for p in paths:
        if int(p.stem.split("-")[2]) >= D.shape[0]:
            return np.load(p)[: D.shape[0]]
    raise FileNotFoundError("cluster labels of the realistic sample: regenerate it (delete benchmark/.cache/realistic-*)")


def main(argv=None) -> int:
    """``realistic.py``'s report (real vs sampled statistics, plot) on the cached realistic samples."""
    return realistic.main(argv, sampler=lambda n, n_queries, seed: collection("realistic", n, n_queries, seed))


if __name__ == "__main__":
    raise SystemExit(main())
