"""The pruned exact search (dense rows, float32 first pass, exact rescoring) equals brute force bit for bit.

Brute force here is scipy's float64 sparse product ``Q @ D.T``, which sums each document's
products in ascending term order, as ``exact_topk`` defines its scores, then a full sort by
(score desc, doc index asc) keeping positive scores.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from lsrbench.evaluate.inverted_index import InvertedIndex
from lsrbench.evaluate.retrieval import exact_topk, search
from helpers.retrieval import assert_same_topk as _assert_same, brute_force as _brute_force


def _zipf_corpus(rng, n_rows, vocab, per_row, discrete, a=1.1):
    p = 1.0 / np.arange(1, vocab + 1) ** a
    p /= p.sum()
    perm = rng.permutation(vocab)  # frequent terms are not the low ids
    rows, cols = [], []
    for i in range(n_rows):
        n = max(1, int(rng.integers(per_row // 2, per_row * 3 // 2 + 1)))
        terms = np.unique(perm[rng.choice(vocab, size=n, p=p)])
        rows.append(np.full(terms.shape[0], i))
        cols.append(terms)
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    if discrete:  # few distinct weights: many exact ties
        vals = rng.choice(np.array([0.5, 1.0, 1.5, 2.0], dtype=np.float32), size=rows.shape[0])
    else:
        vals = np.log1p(rng.gamma(2.0, 0.6, size=rows.shape[0])).astype(np.float32)
    return sp.csr_matrix((vals, (rows, cols)), shape=(n_rows, vocab), dtype=np.float32)




@pytest.fixture(scope="module")
def corpora():
    rng = np.random.default_rng(11)
    out = {}
    for discrete in (True, False):
        D = _zipf_corpus(rng, 4000, 300, 24, discrete)
        Q = _zipf_corpus(rng, 24, 300, 8, discrete)
        out[discrete] = (Q, D)
    return out


@pytest.mark.parametrize("discrete", [True, False])
@pytest.mark.parametrize("dense", ["auto", None, "top40"])
def test_pruned_search_equals_brute_force(corpora, discrete, dense):
    Q, D = corpora[discrete]
    if dense == "top40":
        dense = np.argsort(-np.bincount(D.indices, minlength=D.shape[1]))[:40].tolist()
    index = InvertedIndex.from_csr(D, dense=dense)
    if dense == "auto":
        assert index.dense_terms.size > 0  # 4,000 documents: the frequent terms go dense
    for k in (1, 10, 100, 900):
        want = _brute_force(Q, D, k)
        _assert_same(exact_topk(Q, index, k), want)
        _assert_same(exact_topk(Q, index, k, threads=2, query_block=5), want)
    # Ties at the cut really happen with discrete weights.
    if discrete:
        s = _brute_force(Q, D, 100)[0][1]
        assert len(np.unique(s)) < len(s)


def test_pruned_search_with_exclusions(corpora):
    Q, D = corpora[True]
    rng = np.random.default_rng(3)
    top = _brute_force(Q, D, 50)
    # Exclude some of each query's own top documents, so the exclusion matters.
    exclude = [set(rng.choice(ids[:20], size=5, replace=False).tolist()) if len(ids) >= 20 else None for ids, _ in top]
    index = InvertedIndex.from_csr(D)
    _assert_same(exact_topk(Q, index, 50, exclude), _brute_force(Q, D, 50, exclude))


def test_dense_index_round_trip_and_memory(corpora):
    _, D = corpora[False]
    index = InvertedIndex.from_csr(D)
    plain = InvertedIndex.from_csr(D, dense=None)
    for t in range(D.shape[1]):
        a, b = index.postings(t), plain.postings(t)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
    assert index.weights.shape[0] + np.count_nonzero(index.dense_weights) == D.nnz
    # The auto rule keeps the index within 1.25x the postings' bytes (plus small per-term arrays).
    postings = D.nnz * (D.data.itemsize + D.indices.itemsize)
    assert index.doc_indices.nbytes + index.weights.nbytes + index.dense_weights.nbytes <= 1.25 * postings


def test_search_with_dense_index_matches_plain(corpora):
    Q, D = corpora[False]
    doc_ids = [f"d{i}" for i in range(D.shape[0])]
    qids = [f"q{i}" for i in range(Q.shape[0])]
    got = search(Q, qids, D, doc_ids, top_k=25, threads=2)
    want = _brute_force(Q, D, 25)
    for qid, (idx, scores) in zip(qids, want):
        assert got[qid] == [(doc_ids[j], float(s)) for j, s in zip(idx, scores)]


def test_pruning_is_really_used(corpora, monkeypatch):
    """On 4,000 documents with k = 10 every query goes through the pruned path, not the exhaustive one."""
    import lsrbench.evaluate.retrieval as r

    Q, D = corpora[False]
    calls = []
    exhaustive = r._exhaustive
    monkeypatch.setattr(r, "_exhaustive", lambda *a, **kw: calls.append(1) or exhaustive(*a, **kw))
    got = exact_topk(Q, InvertedIndex.from_csr(D), 10)
    assert calls == []
    _assert_same(got, _brute_force(Q, D, 10))


def test_build_sums_duplicates_and_keeps_order(corpora):
    """A non-canonical input (duplicates, unsorted columns) indexes like its canonical form, dense or not."""
    Q, D = corpora[False]
    coo = D.tocoo()
    rng = np.random.default_rng(1)
    half = rng.random(coo.nnz) < 0.3  # split 30% of the entries into two halves: duplicates
    rows = np.concatenate([coo.row, coo.row[half]])
    cols = np.concatenate([coo.col, coo.col[half]])
    vals = np.concatenate([np.where(half, coo.data * 0.5, coo.data), coo.data[half] * 0.5]).astype(np.float32)
    perm = rng.permutation(rows.shape[0])
    messy = sp.csr_matrix(sp.coo_matrix((vals[perm], (rows[perm], cols[perm])), shape=D.shape))
    clean = messy.copy()
    clean.sum_duplicates()
    for dense in ("auto", None):
        a, b = InvertedIndex.from_csr(messy, dense=dense), InvertedIndex.from_csr(clean, dense=dense)
        np.testing.assert_array_equal(a.indptr, b.indptr)
        np.testing.assert_array_equal(a.doc_indices, b.doc_indices)
        np.testing.assert_array_equal(a.weights, b.weights)
        np.testing.assert_array_equal(a.dense_weights, b.dense_weights)
        _assert_same(exact_topk(Q, a, 50), _brute_force(Q, clean, 50))
    # Small chunks: the chunked build gives the same arrays.
    c = InvertedIndex.from_csr(clean, chunk_postings=1000)
    np.testing.assert_array_equal(c.doc_indices, InvertedIndex.from_csr(clean).doc_indices)
    np.testing.assert_array_equal(c.dense_weights, InvertedIndex.from_csr(clean).dense_weights)


def test_numpy_fallback_gives_the_same_results(corpora, monkeypatch):
    """Without numba (LSRBENCH_NUMBA=0 or not installed) the numpy path returns the same lists."""

    Q, D = corpora[False]
    index = InvertedIndex.from_csr(D)
    with_kernels = exact_topk(Q, index, 100)
    import lsrbench.evaluate.kernels as kernels

    monkeypatch.setattr(kernels, "_COMPILED", False)
    assert kernels.kernels() is None
    _assert_same(exact_topk(Q, index, 100), with_kernels)
    _assert_same(with_kernels, _brute_force(Q, D, 100))
