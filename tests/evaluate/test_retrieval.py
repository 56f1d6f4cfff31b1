import numpy as np
import pytest
import scipy.sparse as sp

from lsrbench.errors import InputError
from helpers.retrieval import assert_same_topk, brute_force, random_sparse
from lsrbench.evaluate.inverted_index import InvertedIndex
from lsrbench.evaluate.retrieval import exact_topk, search
from lsrbench.evaluate.trec import read_trec_run, write_trec_run

@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("k", [1, 3, 10, 500])
def test_exact_topk_matches_brute_force_with_ties(seed, k):
    rng = np.random.default_rng(seed)
    Q = random_sparse(rng, 25, 12, 0.25)
    D = random_sparse(rng, 120, 12, 0.2)
    got = exact_topk(Q, InvertedIndex.from_csr(D), k)
    want = brute_force(Q, D, k)
    assert_same_topk(got, want)
    # The data really has ties and queries with fewer than k matches.
    flat = np.concatenate([s for _, s in want])
    assert len(np.unique(flat)) < len(flat)
    if k == 500:
        assert all(len(i) < k for i, _ in got)
    for idx, scores in got:
        assert idx.dtype == np.int64 and scores.dtype == np.float64


def test_tie_at_the_cut_keeps_lowest_doc_indices():
    D = sp.csr_matrix(np.array([[1.0], [2.0], [1.0], [1.0], [0.0], [1.0]], dtype=np.float32))
    Q = sp.csr_matrix(np.array([[1.0]], dtype=np.float32))
    (idx, scores), = exact_topk(Q, InvertedIndex.from_csr(D), 3)
    np.testing.assert_array_equal(idx, [1, 0, 2])
    np.testing.assert_array_equal(scores, [2.0, 1.0, 1.0])


def test_exact_topk_random_float_weights():
    rng = np.random.default_rng(7)
    Q = sp.random(20, 50, density=0.15, format="csr", random_state=rng, dtype=np.float32)
    D = sp.random(300, 50, density=0.1, format="csr", random_state=rng, dtype=np.float32)
    got = exact_topk(Q, InvertedIndex.from_csr(D), 10)
    want = brute_force(Q, D, 10)
    for (gi, gs), (wi, ws) in zip(got, want):
        np.testing.assert_array_equal(gi, wi)
        np.testing.assert_allclose(gs, ws, rtol=1e-12)


def test_empty_query_and_k_zero():
    rng = np.random.default_rng(0)
    D = random_sparse(rng, 30, 8, 0.3)
    Q = sp.csr_matrix(np.array([[0, 0, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0, 0]], dtype=np.float32))
    res = exact_topk(Q, InvertedIndex.from_csr(D), 5)
    assert res[0][0].shape == (0,) and res[0][1].shape == (0,)
    assert len(res[1][0]) > 0
    res0 = exact_topk(Q, InvertedIndex.from_csr(D), 0)
    assert all(len(i) == 0 for i, _ in res0)


def test_explicit_zero_weights_are_not_matches():
    # Doc 0 stores an explicit zero on term 0; it must not be returned for a query on term 0.
    D = sp.csr_matrix((np.array([0.0, 1.0], dtype=np.float32), np.array([0, 0]), np.array([0, 1, 2])), shape=(2, 2))
    Q = sp.csr_matrix(np.array([[2.0, 0.0]], dtype=np.float32))
    (idx, scores), = exact_topk(Q, InvertedIndex.from_csr(D), 10)
    np.testing.assert_array_equal(idx, [1])
    np.testing.assert_array_equal(scores, [2.0])


@pytest.mark.parametrize("seed", [0, 1])
def test_exclude_matchesbrute_force(seed):
    rng = np.random.default_rng(seed)
    Q = random_sparse(rng, 15, 10, 0.3)
    D = random_sparse(rng, 60, 10, 0.25)
    exclude = [set(rng.choice(60, size=rng.integers(0, 5), replace=False).tolist()) for _ in range(15)]
    exclude[0] = None
    got = exact_topk(Q, InvertedIndex.from_csr(D), 7, exclude)
    assert_same_topk(got, brute_force(Q, D, 7, exclude))


def test_vocab_mismatch_raises():
    D = sp.csr_matrix(np.ones((2, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="columns"):
        exact_topk(sp.csr_matrix(np.ones((1, 4), dtype=np.float32)), InvertedIndex.from_csr(D), 1)


def test_search_maps_ids_and_skips_identical():
    D = sp.csr_matrix(np.array([[1, 0], [2, 0], [0, 1], [1, 1]], dtype=np.float32))
    Q = sp.csr_matrix(np.array([[1, 0], [0, 0], [1, 1]], dtype=np.float32))
    doc_ids = ["a", "b", "c", "q2"]
    qids = ["q1", "empty", "q2"]
    plain = search(Q, qids, D, doc_ids, top_k=2)
    assert plain == {
        "q1": [("b", 2.0), ("a", 1.0)],  # a and q2 tie at 1.0: lower doc index first
        "empty": [],
        "q2": [("b", 2.0), ("q2", 2.0)],
    }
    skipped = search(Q, qids, D, doc_ids, top_k=2, skip_identical_ids=True)
    assert skipped == {
        "q1": [("b", 2.0), ("a", 1.0)],
        "empty": [],
        "q2": [("b", 2.0), ("a", 1.0)],  # still filled to k after dropping "q2"
    }
    assert all(isinstance(s, float) for hits in skipped.values() for _, s in hits)


def test_search_rejects_bad_ids():
    D = sp.csr_matrix(np.ones((2, 2), dtype=np.float32))
    Q = sp.csr_matrix(np.ones((2, 2), dtype=np.float32))
    with pytest.raises(ValueError):
        search(Q, ["q"], D, ["a", "b"])
    with pytest.raises(ValueError):
        search(Q, ["q", "q"], D, ["a", "b"])


def test_trec_run_round_trip(tmp_path):
    results = {
        "q1": [("d1", 0.1 + 0.2), ("d2", 0.1 + 0.2), ("d9", 1e-12), ("d3", 1.0 / 3.0)],
        "q2": [("x", 12345.678901234567)],
        "q3": [],
    }
    path = tmp_path / "run.trec"
    write_trec_run(path, results, "splade")
    lines = path.read_text().splitlines()
    assert lines[0] == f"q1 Q0 d3 1 {1.0 / 3.0!r} splade"
    assert lines[1] == f"q1 Q0 d1 2 {0.1 + 0.2!r} splade"  # given order kept among ties
    assert lines[2] == f"q1 Q0 d2 3 {0.1 + 0.2!r} splade"
    assert [ln.split()[3] for ln in lines] == ["1", "2", "3", "4", "1"]
    back = read_trec_run(path)
    assert back == {q: dict(hits) for q, hits in results.items() if hits}
    # Scores survive bit for bit.
    assert back["q1"]["d3"] == 1.0 / 3.0 and back["q2"]["x"] == 12345.678901234567


def test_write_trec_run_rejects_bad_values(tmp_path):
    with pytest.raises(ValueError, match="non-finite"):
        write_trec_run(tmp_path / "r", {"q": [("d", float("nan"))]}, "t")
    with pytest.raises(ValueError, match="whitespace"):
        write_trec_run(tmp_path / "r", {"q": [("d 1", 1.0)]}, "t")
    with pytest.raises(ValueError, match="tag"):
        write_trec_run(tmp_path / "r", {"q": [("d", 1.0)]}, "my tag")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    "bad_line",
    [
        "q1 Q0 d2 2 nan run",
        "q1 Q0 d2 2 inf run",
        "q1 Q0 d2 2 0.5",
        "q1 Q0 d2 two 0.5 run",
        "q1 Q0 d2 2 high run",
        "q1 Q0 d1 2 0.5 run",
    ],
)
def test_read_trec_run_malformed_line(tmp_path, bad_line):
    path = tmp_path / "run.trec"
    path.write_text(f"q1 Q0 d1 1 0.9 run\n\n{bad_line}\n")
    with pytest.raises(InputError) as ei:
        read_trec_run(path)
    assert ei.value.file == str(path)
    assert ei.value.field == "line 3"
    assert str(ei.value).startswith(f"{path}: line 3: ")


def test_read_trec_run_missing_file(tmp_path):
    with pytest.raises(InputError, match="not found"):
        read_trec_run(tmp_path / "none")
