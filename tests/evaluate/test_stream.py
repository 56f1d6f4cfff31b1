"""The streaming first pass (``exact_topk(first_pass="stream")``) returns what brute force returns, bit
for bit: ties at the cut, exclusions, threads, overflowing candidate buffers (handed back to the
score-rows pass), and it really settles the queries itself where it should."""

import numpy as np
import pytest
import scipy.sparse as sp

import lsrbench.evaluate.retrieval as retrieval
import lsrbench.evaluate.stream as stream
from helpers.retrieval import assert_same_topk, brute_force
from lsrbench.evaluate.inverted_index import InvertedIndex
from lsrbench.evaluate.kernels import kernels
from lsrbench.evaluate.retrieval import exact_topk

pytestmark = pytest.mark.skipif(kernels() is None, reason="the streaming pass needs numba")


def _collection(seed, n_docs, vocab, grid, n_queries=24):
    """Zipf terms; weights on a grid of ``grid`` steps (many exact ties) or continuous (grid 0)."""
    rng = np.random.default_rng(seed)
    nnz = n_docs * 20
    rows, cols = rng.integers(0, n_docs, nnz), np.minimum(rng.zipf(1.3, nnz) - 1, vocab - 1)
    w = rng.random(nnz).astype(np.float32) + np.float32(0.01)
    if grid:
        w = (np.ceil(w * grid) / grid).astype(np.float32)
    D = sp.csr_matrix((w, (rows, cols)), shape=(n_docs, vocab))
    D.sum_duplicates()
    qw = np.ceil(rng.random(n_queries * 8) * 4).astype(np.float32) / 4
    Q = sp.csr_matrix((qw, (np.repeat(np.arange(n_queries), 8), rng.integers(0, vocab, n_queries * 8))),
                      shape=(n_queries, vocab))
    Q.sum_duplicates()
    return Q, D


@pytest.fixture(scope="module")
def collections():
    return {grid: _collection(grid, 6007, 400, grid) for grid in (4, 16, 0)}


@pytest.mark.parametrize("grid", [4, 16, 0])
def test_stream_equals_brute_force(collections, grid):
    Q, D = collections[grid]
    index = InvertedIndex.from_csr(D)
    for k in (1, 10, 100, 1000):
        want = brute_force(Q, D, k)
        assert_same_topk(exact_topk(Q, index, k, first_pass="stream"), want)
        assert_same_topk(exact_topk(Q, index, k, first_pass="stream", threads=2, query_block=5), want)
        assert_same_topk(exact_topk(Q, InvertedIndex.from_csr(D, dense=None), k, first_pass="stream"), want)


def test_stream_with_exclusions(collections):
    Q, D = collections[4]
    rng = np.random.default_rng(3)
    top = brute_force(Q, D, 50)
    exclude = [set(rng.choice(ids[:20], size=5, replace=False).tolist()) if len(ids) >= 20 else None for ids, _ in top]
    exclude[0] = set(range(0, D.shape[0], 3))  # a third of the collection, across every chunk
    index = InvertedIndex.from_csr(D)
    for k in (10, 50):
        assert_same_topk(exact_topk(Q, index, k, exclude, first_pass="stream"), brute_force(Q, D, k, exclude))


def test_stream_settles_the_queries_itself(collections, monkeypatch):
    """No query goes to the score-rows pass on a collection with distinct top scores."""
    Q, D = collections[0]
    calls = []
    rows_pass = retrieval._search_block
    monkeypatch.setattr(retrieval, "_search_block", lambda *a: calls.append(a[4:6]) or rows_pass(*a))
    got = exact_topk(Q, InvertedIndex.from_csr(D), 10, first_pass="stream")
    assert calls == [(i, i + 1) for i in range(Q.shape[0]) if Q.indptr[i + 1] == Q.indptr[i]]  # only empty queries
    assert_same_topk(got, brute_force(Q, D, 10))


def test_overflowing_candidates_fall_back_to_the_score_rows(monkeypatch):
    """Thousands of documents tied at the top score overflow a small buffer: those queries are
    handed back, the others not, and every list is still the brute-force one (lowest indices first)."""
    n_docs, vocab = 5000, 50
    rng = np.random.default_rng(5)
    D = sp.lil_matrix((n_docs, vocab), dtype=np.float32)
    D[:, 0] = 1.0  # every document ties on term 0
    cols = rng.integers(1, vocab, n_docs)
    D[np.arange(n_docs), cols] = rng.random(n_docs).astype(np.float32) + 0.5
    D = D.tocsr()
    Q = sp.csr_matrix(np.array([[1.0] + [0] * (vocab - 1), [0, 1.0] + [0] * (vocab - 2)], dtype=np.float32))
    monkeypatch.setattr(stream, "MIN_CANDIDATES", 1)
    calls = []
    rows_pass = retrieval._search_block
    monkeypatch.setattr(retrieval, "_search_block", lambda *a: calls.append(a[4:6]) or rows_pass(*a))
    got = exact_topk(Q, InvertedIndex.from_csr(D, dense=None), 20, first_pass="stream")
    assert calls == [(0, 1)]
    assert_same_topk(got, brute_force(Q, D, 20))
    np.testing.assert_array_equal(got[0][0], np.arange(20))


def test_auto_switches_at_the_crossover(collections, monkeypatch):
    Q, D = collections[0]
    index = InvertedIndex.from_csr(D)
    used = []
    real = stream.stream_block
    monkeypatch.setattr(retrieval, "stream_block", lambda *a: used.append(a[2]) or real(*a))
    exact_topk(Q, index, 1000, first_pass="auto")  # 6 documents per result: score rows
    exact_topk(Q, index, 5, first_pass="auto")  # 1201 per result: stream
    assert set(used) == {5}
    with pytest.raises(ValueError, match="first_pass must be one of rows, stream, auto"):
        exact_topk(Q, index, 5, first_pass="fast")


def test_without_numba_stream_is_the_score_rows_pass(collections, monkeypatch):
    import lsrbench.evaluate.kernels as k

    Q, D = collections[16]
    want = brute_force(Q, D, 10)
    monkeypatch.setattr(k, "_COMPILED", False)
    assert_same_topk(exact_topk(Q, InvertedIndex.from_csr(D), 10, first_pass="stream"), want)
