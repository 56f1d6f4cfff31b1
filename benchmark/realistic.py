"""A SPLADE-like collection generator fitted to real SPLADE vectors (SPLADE-tiny on Vaswani).

The retrieval benchmark's original generator (``retrieval.py``'s ``zipf_rows``, kept as the
"adversarial" case) draws every weight from one distribution whatever the term, so frequent terms
sit in most documents with full weight. Real SPLADE vectors are not like that: frequent terms get
*low* weights. This module encodes the shared Vaswani collection (11,429 abstracts, 93 queries)
with the shared SPLADE-tiny checkpoint, fits what drives the cost of top-k retrieval, and samples
collections of any size from the fit:

* **which terms a document has**: documents come from ``C`` = 128 clusters (spherical k-means of the
  real vectors); a document of cluster ``c`` draws its terms without replacement with
  probabilities ``p[c, t]`` (the cluster's document frequencies smoothed towards the collection's),
  corrected by per-term factors calibrated so that each term's share of documents (df / N) equals
  the real one. The share is kept as the collection grows, so **df grows linearly with N**: a
  SPLADE document's vector depends on its own text only (its length in non-zeros does not depend
  on the collection), so a term's probability per document is a property of the text
  distribution, and a collection 100x larger from the same distribution has 100x the postings per
  term. Terms absent from Vaswani never occur (a larger real collection would add rare terms,
  which cost little). Clusters keep the co-occurrence of topical terms (which makes the best scores
  stand out from the rest, as in real collections); documents are stored in random order
  (``order="random"``, no document reordering) unless ``order="cluster"`` (grouped by cluster, a
  crude stand-in for the graph-bisection reordering that block-max indexes are built with);
* **document length** (non-zeros): resampled from the real lengths of the document's cluster;
* **weights per term**: each term with at least ``MIN_DF_QUANTILES`` real postings keeps its own
  weight distribution (``N_QUANTILES`` quantiles, sampled by inverse CDF with linear interpolation);
  rarer terms use the pooled distribution of their df bin. So the relation of weight and df is the
  real one, term by term;
* **queries**: length resampled from the real query lengths; terms drawn without replacement with
  probability ``p[c, t] * g(df bin of t)`` for a random cluster ``c`` (``g``: how much more or less
  likely than its document frequency says a term of that df bin is to be in a real query); query
  weights from the real query weights of the same df bin (inverse CDF).

Not modelled (stated in the README): weight correlations within a document beyond the term's own
distribution (e.g. a term weighs more in a document on its topic), document length effects on
weights, and duplicate or near-duplicate documents.

    .venv/bin/python benchmark/realistic.py           # encode (cached), fit, validate: results/realistic-fit.json + .png
    .venv/bin/python benchmark/samples.py --sizes 100000,1000000 --output realistic-fit-peers
                                                      # the same statistics of peers.py's cached collections
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, SHARED, command_line, machine_info, write_result  # noqa: E402

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
FIT_PATH = CACHE / "realistic-fit.npz"  # regenerated deterministically from the cached encoding (~40 s)
MODEL = SHARED / "models" / "splade-tiny-msmarco"
VASWANI = SHARED / "data" / "vaswani"
DOC_MAX_LENGTH = 256  # config/paper.yaml's document_max_length
QUERY_MAX_LENGTH = 32  # config/paper.yaml's query_max_length
N_QUANTILES = 33  # quantiles kept per term (0, 1/32, ..., 1)
MIN_DF_QUANTILES = 32  # a term's own weight distribution from this many real postings on
N_CLUSTERS = 128
MIN_CLUSTER_POSTINGS = 8  # a (term, cluster) pair's own weights from this many real postings on
SMOOTHING = 10.0  # pseudo-documents of the collection's distribution added to each cluster
DF_BINS = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 1 << 30])


# -- the real vectors --------------------------------------------------------------------------------
def encode_vaswani(threads: int = 1, batch_size: int = 32) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Vaswani's documents and queries encoded by SPLADE-tiny (float32 CSR); cached in benchmark/.cache."""
    CACHE.mkdir(exist_ok=True)
    d_path = CACHE / f"vaswani-splade-tiny-docs-{DOC_MAX_LENGTH}.npz"
    q_path = CACHE / f"vaswani-splade-tiny-queries-{QUERY_MAX_LENGTH}.npz"
    if d_path.is_file() and q_path.is_file():
        return sp.load_npz(d_path).tocsr(), sp.load_npz(q_path).tocsr()
    import torch

    from lsrbench.data.beir import load_beir_folder
    from lsrbench.index.encode import encode_texts as encode
    from lsrbench.model.encoder import build_sparse_encoder

    torch.set_num_threads(threads)
    ds = load_beir_folder(VASWANI)
    t = time.perf_counter()
    model = build_sparse_encoder(str(MODEL), DOC_MAX_LENGTH, query_length=QUERY_MAX_LENGTH,
                                             document_length=DOC_MAX_LENGTH, device="cpu")
    D = encode(model, list(ds.corpus.values()), "document", batch_size)
    Q = encode(model, list(ds.queries.values()), "query", batch_size)
    print(f"encoded {D.shape[0]} documents and {Q.shape[0]} queries in {time.perf_counter() - t:.0f} s", flush=True)
    for path, m in ((d_path, D), (q_path, Q)):
        tmp = path.with_suffix(".tmp.npz")
        sp.save_npz(tmp, m.astype(np.float32), compressed=True)
        os.replace(tmp, path)
    return D.tocsr(), Q.tocsr()


# -- the fit -------------------------------------------------------------------------------------------
def _df_bin(df: np.ndarray) -> np.ndarray:
    """Index of ``df``'s bin in ``DF_BINS`` (powers of two: [1,2), [2,4), ...)."""
    return np.clip(np.searchsorted(DF_BINS, df, side="right") - 1, 0, DF_BINS.size - 2)


def _quantiles(values: np.ndarray) -> np.ndarray:
    return np.quantile(values, np.linspace(0.0, 1.0, N_QUANTILES)).astype(np.float32)


def _spherical_kmeans(X: sp.csr_matrix, c: int, rng, iters: int = 20) -> np.ndarray:
    """Cluster labels of the L2-normalised rows of ``X`` (cosine k-means, random documents as seeds)."""
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    Xn = sp.diags(1.0 / np.maximum(norms, 1e-12)) @ X
    centers = Xn[rng.choice(X.shape[0], c, replace=False)].toarray()
    labels = np.zeros(X.shape[0], dtype=np.int64)
    for _ in range(iters):
        labels = np.asarray((Xn @ centers.T).argmax(axis=1)).ravel()
        for j in range(c):
            members = labels == j
            v = np.asarray(Xn[members].sum(axis=0)).ravel() if members.any() else Xn[rng.integers(X.shape[0])].toarray().ravel()
            centers[j] = v / max(np.linalg.norm(v), 1e-12)
    return labels


def fit(D: sp.csr_matrix, Q: sp.csr_matrix, seed: int = 0) -> dict:
    """Fit the generator to real documents ``D`` and queries ``Q`` (float32 CSR, same vocabulary)."""
    rng = np.random.default_rng(seed)
    D, Q = D.tocsr(), Q.tocsr()
    n, vocab = D.shape
    df = np.bincount(D.indices, minlength=vocab)
    labels = _spherical_kmeans(D, N_CLUSTERS, rng)
    # Per cluster: document frequencies, smoothed towards the collection's (SMOOTHING pseudo-documents).
    members = sp.csr_matrix((np.ones(n), (labels, np.arange(n))), shape=(N_CLUSTERS, n))
    counts = (members @ (D != 0).astype(np.float64)).toarray()  # (C, V) document frequencies
    sizes = np.bincount(labels, minlength=N_CLUSTERS).astype(np.float64)
    share = df / n
    p_cluster = (counts + SMOOTHING * share) / (sizes + SMOOTHING)[:, None]
    # Weights: each term's quantiles when it has enough postings, else its df bin's pooled quantiles.
    Dc = D.tocsc()
    Dc.sort_indices()
    own = np.flatnonzero(df >= MIN_DF_QUANTILES)
    term_q = np.stack([_quantiles(Dc.data[Dc.indptr[t]:Dc.indptr[t + 1]]) for t in own]) if own.size else np.zeros((0, N_QUANTILES), np.float32)
    bins = _df_bin(np.maximum(df, 1))
    post_bins = bins[D.indices]
    bin_q = np.stack([_quantiles(D.data[post_bins == b]) if np.any(post_bins == b) else np.zeros(N_QUANTILES, np.float32)
                      for b in range(DF_BINS.size - 1)])
    # Queries: their df-bin preference relative to document frequency, and their weights per bin.
    q_terms, q_w = Q.indices[df[Q.indices] > 0], Q.data[df[Q.indices] > 0]
    q_bins = bins[q_terms]
    observed = np.bincount(q_bins, minlength=DF_BINS.size - 1).astype(np.float64)
    expected = np.bincount(bins, weights=df, minlength=DF_BINS.size - 1) / df.sum() * q_terms.size
    q_pref = np.where(expected > 0, (observed + 0.5) / (expected + 0.5), 1.0)
    q_bin_q = []
    for b in range(DF_BINS.size - 1):
        sel = q_w[q_bins == b]
        if sel.size < 8:  # too few real query weights in this bin: pool with its neighbours
            near = np.abs(q_bins - b) <= 2
            sel = q_w[near] if near.any() else q_w
        q_bin_q.append(_quantiles(sel))
    # Weights per (term, cluster): the real postings of the term in the cluster's documents, sorted,
    # sampled by their interpolated empirical quantile function (a term weighs more in documents on its
    # topic; this keeps that), when the cluster has at least MIN_CLUSTER_POSTINGS of them.
    post_cluster = labels[np.repeat(np.arange(n), np.diff(D.indptr))]
    key = D.indices.astype(np.int64) * N_CLUSTERS + post_cluster
    order = np.lexsort((D.data, key))
    ct_ptr = np.searchsorted(key[order], np.arange(vocab * N_CLUSTERS + 1))
    params = {
        "ct_ptr": ct_ptr.astype(np.int64), "ct_weights": D.data[order].astype(np.float32),
        "n_docs_real": np.int64(n), "vocab": np.int64(vocab), "seed": np.int64(seed),
        "df": df.astype(np.int32), "cluster_sizes": sizes, "p_cluster": p_cluster.astype(np.float32),
        "doc_lengths": np.diff(D.indptr).astype(np.int32), "doc_clusters": labels.astype(np.int16),
        "own_terms": own.astype(np.int32), "term_quantiles": term_q, "bin_quantiles": bin_q,
        "query_lengths": np.diff(Q.indptr).astype(np.int32), "query_pref": q_pref, "query_bin_quantiles": np.stack(q_bin_q),
    }
    params["term_factor"] = _calibrate_docs(params, rng)
    params["query_pref"] = _calibrate_queries(params, Q, rng)
    return params


def _successive(weights_cdf: np.ndarray, lengths: np.ndarray, rng, oversample: float = 3.0) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``lengths[i]`` distinct ids drawn one after another with replacement from the categorical
    distribution whose CDF is ``weights_cdf``, duplicates skipped (weighted sampling without replacement).
    Returns (ids in row order, ids sorted within each row; indptr)."""
    m = lengths.shape[0]
    draws = max(1, int(np.ceil(oversample * lengths.max())))
    ids = np.searchsorted(weights_cdf, rng.random((m, draws)) * weights_cdf[-1], side="right")
    ids = np.minimum(ids, weights_cdf.shape[0] - 1)
    vocab = weights_cdf.shape[0]
    keys = (np.arange(m, dtype=np.int64)[:, None] * vocab + ids).ravel()
    _, first = np.unique(keys, return_index=True)  # first draw of each (row, id)
    first.sort()  # in row, then draw order
    rows = first // draws
    starts = np.searchsorted(rows, np.arange(m))
    rank = np.arange(first.size) - starts[rows]
    keep = rank < lengths[rows]
    first = first[keep]
    rows = rows[keep]
    out = ids.ravel()[first]
    counts = np.bincount(rows, minlength=m)
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return out, indptr


def _sample_rows(params: dict, n: int, rng, kind: str, term_factor=None, query_pref=None):
    """Term ids (CSR structure, rows unsorted) of ``n`` documents or queries and their clusters."""
    sizes = params["cluster_sizes"]
    clusters = rng.choice(sizes.size, size=n, p=sizes / sizes.sum())
    factor = params["term_factor"] if term_factor is None else term_factor
    if kind == "query":
        pref = params["query_pref"] if query_pref is None else query_pref
        factor = factor * pref[_df_bin(np.maximum(params["df"], 1))]
    lengths_src = params["doc_lengths"] if kind == "document" else params["query_lengths"]
    indptr = np.zeros(n + 1, dtype=np.int64)
    lengths = np.empty(n, dtype=np.int64)
    if kind == "document":  # a document's length is one of its cluster's real lengths
        for c in range(sizes.size):
            sel = np.flatnonzero(clusters == c)
            pool = lengths_src[params["doc_clusters"] == c]
            lengths[sel] = rng.choice(pool, size=sel.size)
    else:
        lengths[:] = rng.choice(lengths_src, size=n)
    np.cumsum(lengths, out=indptr[1:])  # upper bound; rows may come out shorter (counted)
    order = np.argsort(clusters, kind="stable")
    ids_all, ptr_all = [], []
    rows_done = np.zeros(0, dtype=np.int64)
    for c in range(sizes.size):
        sel = order[np.searchsorted(clusters[order], c):np.searchsorted(clusters[order], c, side="right")]
        w = params["p_cluster"][c].astype(np.float64) * factor
        cdf = np.cumsum(w)
        sel = sel[np.argsort(lengths[sel], kind="stable")]  # similar lengths per chunk: fewer wasted draws
        for lo in range(0, sel.size, 8192):
            rows = sel[lo:lo + 8192]
            ids, ptr = _successive(cdf, lengths[rows], rng)
            ids_all.append(ids)
            ptr_all.append(np.diff(ptr))
            rows_done = np.concatenate([rows_done, rows])
    counts = np.zeros(n, dtype=np.int64)
    counts[rows_done] = np.concatenate(ptr_all)
    # Reassemble in row order.
    ids = np.concatenate(ids_all) if ids_all else np.zeros(0, np.int64)
    src_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.concatenate(ptr_all), out=src_ptr[1:])
    out_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=out_ptr[1:])
    pos = np.empty(n, dtype=np.int64)
    pos[rows_done] = np.arange(n)  # position of each row in the sampling order
    starts = src_ptr[pos]
    gather = np.repeat(starts - out_ptr[:-1], counts) + np.arange(out_ptr[-1])
    return ids[gather], out_ptr, clusters, lengths


def _weights(params: dict, terms: np.ndarray, rng, kind: str, clusters: np.ndarray | None = None) -> np.ndarray:
    """Weights of postings of ``terms`` (documents: in documents of ``clusters``): the interpolated
    empirical quantile function of the term's real weights in that cluster when it has at least
    MIN_CLUSTER_POSTINGS, else of the term's (or its df bin's) quantiles; queries: their df bin's."""
    u0 = rng.random(terms.shape[0])
    u = u0 * (N_QUANTILES - 1)
    lo = np.minimum(u.astype(np.int64), N_QUANTILES - 2)
    frac = (u - lo).astype(np.float32)
    bins = _df_bin(np.maximum(params["df"], 1))[terms]
    if kind == "query":
        table = params["query_bin_quantiles"]
        a, b = table[bins, lo], table[bins, lo + 1]
    else:
        slot = np.full(params["df"].shape[0], -1, dtype=np.int64)
        slot[params["own_terms"]] = np.arange(params["own_terms"].shape[0])
        s = slot[terms]
        mine = s >= 0
        a = np.where(mine, params["term_quantiles"][np.maximum(s, 0), lo], params["bin_quantiles"][bins, lo])
        b = np.where(mine, params["term_quantiles"][np.maximum(s, 0), lo + 1], params["bin_quantiles"][bins, lo + 1])
    w = a + (b - a) * frac
    if kind != "query" and clusters is not None:
        key = terms.astype(np.int64) * N_CLUSTERS + clusters
        start = params["ct_ptr"][key]
        size = params["ct_ptr"][key + 1] - start
        mine = size >= MIN_CLUSTER_POSTINGS
        pos = u0[mine] * (size[mine] - 1)
        lo = np.minimum(pos.astype(np.int64), size[mine] - 2)
        f = (pos - lo).astype(np.float32)
        vals = params["ct_weights"]
        a, b = vals[start[mine] + lo], vals[start[mine] + lo + 1]
        w[mine] = a + (b - a) * f
    return np.maximum(w, np.float32(1e-6)).astype(np.float32)  # SPLADE weights are > 0


def _csr(ids, indptr, data, n, vocab) -> sp.csr_matrix:
    m = sp.csr_matrix((data, ids.astype(np.int32), indptr), shape=(n, vocab))
    m.sort_indices()
    return m


def sample_documents(params: dict, n: int, seed: int, order: str = "random", chunk: int = 200_000,
                     return_clusters: bool = False):
    """``n`` documents from the fit (float32 CSR). ``order="cluster"`` groups them by cluster.
    With ``return_clusters``, also each document's cluster (in the returned order)."""
    rng = np.random.default_rng([seed, 1])
    parts, clusters = [], []
    for lo in range(0, n, chunk):
        m = min(chunk, n - lo)
        ids, ptr, cl, _ = _sample_rows(params, m, rng, "document")
        w = _weights(params, ids, rng, "document", np.repeat(cl, np.diff(ptr)))
        parts.append(_csr(ids, ptr, w, m, int(params["vocab"])))
        clusters.append(cl)
    D = sp.vstack(parts, format="csr") if len(parts) > 1 else parts[0]
    clusters = np.concatenate(clusters)
    if order == "cluster":
        perm = np.argsort(clusters, kind="stable")
        D, clusters = D[perm], clusters[perm]
    elif order != "random":
        raise ValueError(f"order must be 'random' or 'cluster', got {order!r}")
    return (D, clusters) if return_clusters else D


def sample_queries(params: dict, n: int, seed: int) -> sp.csr_matrix:
    rng = np.random.default_rng([seed, 2])
    ids, ptr, _, _ = _sample_rows(params, n, rng, "query")
    return _csr(ids, ptr, _weights(params, ids, rng, "query"), n, int(params["vocab"]))


def _calibrate_docs(params: dict, rng, sample: int = 40_000, rounds: int = 5) -> np.ndarray:
    """Per-term factors making each term's share of sampled documents its real df / N."""
    share = params["df"] / float(params["n_docs_real"])
    factor = np.ones(share.shape[0])
    for _ in range(rounds):
        ids, ptr, _, _ = _sample_rows(params, sample, rng, "document", term_factor=factor)
        got = np.bincount(ids, minlength=share.shape[0]) / sample
        expect = share * sample
        # Terms expected often enough to be measured; the rest take the median correction.
        sure = expect >= 30
        ratio = np.ones_like(factor)
        ratio[sure] = share[sure] / np.maximum(got[sure], 1.0 / sample)
        ratio[~sure] = np.median(ratio[sure]) if sure.any() else 1.0
        factor *= ratio
    return factor


def _calibrate_queries(params: dict, Q: sp.csr_matrix, rng, sample: int = 4_000, rounds: int = 4) -> np.ndarray:
    """The df-bin preference of query terms, corrected so sampled queries' bin shares are the real ones."""
    df = params["df"]
    bins = _df_bin(np.maximum(df, 1))
    q_terms = Q.indices[df[Q.indices] > 0]
    target = np.bincount(bins[q_terms], minlength=DF_BINS.size - 1) / max(1, q_terms.size)
    pref = params["query_pref"].copy()
    for _ in range(rounds):
        ids, _, _, _ = _sample_rows(params, sample, rng, "query", query_pref=pref)
        got = np.bincount(bins[ids], minlength=DF_BINS.size - 1) / max(1, ids.size)
        pref *= np.where((target > 0) & (got > 0), target / np.maximum(got, 1e-12), 1.0)
    return pref


def load_fit(refit: bool = False) -> dict:
    """The fitted parameters (benchmark/.cache/realistic-fit.npz), fitted from the cached encoding when absent."""
    if FIT_PATH.is_file() and not refit:
        with np.load(FIT_PATH) as z:
            return {k: z[k] for k in z.files}
    D, Q = encode_vaswani()
    params = fit(D, Q)
    tmp = FIT_PATH.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, **params)
    os.replace(tmp, FIT_PATH)
    return params


# -- validation: the statistics that drive retrieval cost, real vs sampled ------------------------------
SHARE_BINS = [(1 / 16, 1.01), (1 / 256, 1 / 16), (1 / 4096, 1 / 256), (0.0, 1 / 4096)]  # df / N


def _bin_label(lo, hi) -> str:
    def f(x):
        return "0" if x == 0 else ("1" if x > 1 else f"1/{round(1 / x)}")
    return f"[{f(lo)}, {f(hi)})"


def collection_stats(D: sp.csr_matrix, Q: sp.csr_matrix | None = None, ks=(10, 1000), block: int = 32,
                     max_docs_scored: int = 20_000) -> dict:
    """What drives the cost of top-k retrieval, for the validation table (see the README)."""
    D = D.tocsr()
    n, vocab = D.shape
    lengths = np.diff(D.indptr)
    df = np.bincount(D.indices, minlength=vocab)
    share = df / n
    ranked = np.sort(share)[::-1]
    post_share = share[D.indices]
    out = {
        "documents": int(n), "doc_nnz_mean": round(float(lengths.mean()), 2),
        "doc_nnz_p5_p50_p95": [int(x) for x in np.percentile(lengths, [5, 50, 95])],
        "terms_with_postings": int((df > 0).sum()),
        "df_over_n_at_rank": {str(r): round(float(ranked[r - 1]), 4) for r in (1, 10, 100, 1000, 5000) if r <= vocab},
        "weight_mean": round(float(D.data.mean()), 4),
        "corr_log_df_weight": round(float(np.corrcoef(np.log(df[D.indices]), D.data)[0, 1]), 4),
        "by_df_share": {},
    }
    for lo, hi in SHARE_BINS:
        m = (post_share >= lo) & (post_share < hi)
        tm = (share >= lo) & (share < hi) & (df > 0)
        out["by_df_share"][_bin_label(lo, hi)] = {
            "terms": int(tm.sum()), "postings_share": round(float(m.mean()), 4),
            "weight_mean": round(float(D.data[m].mean()), 4) if m.any() else None,
            "weight_p50_p99": [round(float(x), 3) for x in np.percentile(D.data[m], [50, 99])] if m.any() else None,
        }
    if Q is None:
        return out
    Q = Q.tocsr()
    q_len = np.diff(Q.indptr)
    q_share = share[Q.indices]
    out.update({
        "queries": int(Q.shape[0]), "query_nnz_mean": round(float(q_len.mean()), 2),
        "query_nnz_p5_p50_p95": [int(x) for x in np.percentile(q_len, [5, 50, 95])],
        "query_weight_mean": round(float(Q.data.mean()), 4),
        "postings_touched_per_query_over_n": round(float(np.mean([df[Q.indices[Q.indptr[i]:Q.indptr[i + 1]]].sum()
                                                                   for i in range(Q.shape[0])]) / n), 3),
        "query_terms_by_df_share": {_bin_label(lo, hi): round(float(((q_share >= lo) & (q_share < hi)).mean()), 3)
                                    for lo, hi in SHARE_BINS},
        "query_weight_by_df_share": {_bin_label(lo, hi): (round(float(Q.data[(q_share >= lo) & (q_share < hi)].mean()), 3)
                                                          if ((q_share >= lo) & (q_share < hi)).any() else None)
                                     for lo, hi in SHARE_BINS},
    })
    # Score distribution (exact, dense; on at most max_docs_scored documents): how far the k-th
    # score is below the best, how many documents score > 0, and the share of blocks of `block`
    # consecutive documents whose block-max upper bound (sum over query terms of q * the block's
    # max weight) reaches the k-th score: the blocks a safe block-max method must score.
    m = min(n, max_docs_scored)
    Dm = D[:m]
    S = (Q.astype(np.float64) @ Dm.T.astype(np.float64)).toarray()
    n_blocks = m // block
    Dcsc = Dm[: n_blocks * block].tocsc()
    # block maxima per term: (n_blocks, vocab) sparse via the block id of each posting
    coo = Dm[: n_blocks * block].tocoo()
    bm = sp.coo_matrix((coo.data.astype(np.float64), (coo.row // block, coo.col)), shape=(n_blocks, vocab))
    bm = bm.tocsr()
    bm.sum_duplicates()  # sums; need max instead:
    order = np.lexsort((coo.data, coo.col, coo.row // block))
    r, c, v = (coo.row // block)[order], coo.col[order], coo.data[order]
    last = np.ones(r.size, dtype=bool)
    last[:-1] = (r[1:] != r[:-1]) | (c[1:] != c[:-1])
    bm = sp.csr_matrix((v[last].astype(np.float64), (r[last], c[last])), shape=(n_blocks, vocab))
    ub = (Q.astype(np.float64) @ bm.T).toarray()  # (queries, blocks)
    del Dcsc
    for k in ks:
        if k >= m:
            continue
        kth = -np.partition(-S, k - 1, axis=1)[:, k - 1]
        best = S.max(axis=1)
        ok = best > 0
        out[f"k{k}"] = {
            "kth_over_best_mean": round(float(np.mean(kth[ok] / best[ok])), 4),
            "docs_scoring_over_kth_half": round(float(np.mean((S >= 0.5 * kth[:, None]).sum(axis=1) / m)), 4),
            "blocks_to_score_share": round(float(np.mean((ub >= kth[:, None]).sum(axis=1) / n_blocks)), 4),
        }
    out["docs_with_positive_score_share"] = round(float(np.mean((S > 0).sum(axis=1) / m)), 4)
    out["scored_documents"] = int(m)
    return out


def _plot(path: Path, real: sp.csr_matrix, samples: dict[str, sp.csr_matrix]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))
    for label, M, style in [("Vaswani, SPLADE-tiny (real)", real, "k-")] + [(k, v, s) for (k, v), s in zip(samples.items(), ["C0--", "C1:", "C2-."])]:
        n = M.shape[0]
        df = np.bincount(M.indices, minlength=M.shape[1])
        share = np.sort(df[df > 0] / n)[::-1]
        ax[0].loglog(np.arange(1, share.size + 1), share, style, label=label)
        post = df[M.indices] / n
        edges = np.logspace(np.log10(max(post.min(), 1e-7)), 0, 25)
        idx = np.digitize(post, edges)
        xs, ys = [], []
        for b in np.unique(idx):
            sel = idx == b
            if sel.sum() >= 50:
                xs.append(np.median(post[sel]))
                ys.append(M.data[sel].mean())
        ax[1].semilogx(xs, ys, style, label=label)
        ax[2].hist(np.diff(M.indptr), bins=np.arange(0, 330, 10), density=True, histtype="step",
                   color=style[:2] if style[0] == "C" else "k", label=label)
    ax[0].set(xlabel="term rank by document frequency", ylabel="df / N", title="document frequency curve")
    ax[1].set(xlabel="df / N of the posting's term", ylabel="mean weight", title="weight vs document frequency")
    ax[2].set(xlabel="non-zeros per document", ylabel="density", title="document lengths")
    ax[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None, sampler=None) -> int:
    """Fit (cached), sample and compare; ``sampler(n, n_queries, seed) -> (D, Q)`` replaces the
    sampling (``samples.py`` passes its cached collections)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--refit", action="store_true", help="fit again even if benchmark/.cache/realistic-fit.npz exists")
    ap.add_argument("--sizes", default="11429,100000", help="sampled collection sizes to compare (documents)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--output", default=None)
    ap.add_argument("--quick", action="store_true", help="compare at the real size only (results/realistic-fit-quick.*)")
    args = ap.parse_args(argv)
    args.cached = sampler is not None
    if args.quick:
        args.sizes = "11429"
    args.output = args.output or ("realistic-fit" + ("-quick" if args.quick else ""))
    D, Q = encode_vaswani()
    params = load_fit(args.refit)
    real = collection_stats(D, Q)
    rows = {"real": real}
    # The real documents in random order: what block bounds give without Vaswani's own order.
    rows["real_shuffled"] = collection_stats(D[np.random.default_rng(args.seed).permutation(D.shape[0])], Q)
    samples = {}
    for n in (int(s) for s in args.sizes.split(",")):
        t = time.perf_counter()
        if args.cached:  # the peers benchmark's collection (prefix of its cached largest sample)
            Ds, Qs = sampler(n, args.queries, args.seed)
        else:
            Ds = sample_documents(params, n, args.seed)
            Qs = sample_queries(params, args.queries, args.seed)
        gen_s = time.perf_counter() - t
        st = collection_stats(Ds, Qs)
        st["generation_s"] = round(gen_s, 1)
        rows[f"sampled_{n}"] = st
        if n == D.shape[0] and not args.cached:  # the real queries against the sampled documents (term ids are the real ones)
            rows[f"sampled_{n}_real_queries"] = collection_stats(Ds, Q)
        if len(samples) < 3:
            samples[f"sampled, {n:,} documents"] = Ds
        print(n, json.dumps(st)[:400], flush=True)
    png = RESULTS / f"{args.output}.png"
    RESULTS.mkdir(exist_ok=True)
    _plot(png, D, samples)
    path = write_result(args.output, {"benchmark": "realistic-fit", "command": command_line(),
                                          "machine": machine_info(),
                                          "model": str(MODEL.relative_to(SHARED.parent)), "data": str(VASWANI.relative_to(SHARED.parent)),
                                          "doc_max_length": DOC_MAX_LENGTH, "query_max_length": QUERY_MAX_LENGTH,
                                          "clusters": N_CLUSTERS, "smoothing": SMOOTHING, "stats": rows, "plot": png.name})
    print(f"wrote {path} and {png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
