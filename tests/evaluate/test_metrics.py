import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from lsrbench.errors import InputError
from lsrbench.evaluate.flops import flops, mean_active_dims
from lsrbench.evaluate.metrics import evaluate_run, fill_ranking


def _csr(rows, vocab, zeros=()):
    """CSR from lists of active terms (weight 1.0) plus explicit stored zeros at (row, term)."""
    r, c, v = [], [], []
    for i, terms in enumerate(rows):
        for t in terms:
            r.append(i), c.append(t), v.append(1.0)
    for i, t in zeros:
        r.append(i), c.append(t), v.append(0.0)
    m = sp.csr_matrix((np.array(v, dtype=np.float32), (r, c)), shape=(len(rows), vocab))
    return m


# 3 queries, 4 docs, vocab 5. Stored zeros: query 1 on term 4, doc 2 on term 0.
QUERIES = _csr([[0, 1], [1, 2], [4]], 5, zeros=[(1, 4)])
DOCS = _csr([[0, 1, 2], [1], [3, 4], []], 5, zeros=[(2, 0)])


def test_stored_zeros_are_really_stored():
    assert QUERIES.nnz == 6 and DOCS.nnz == 7


def test_flops_hand_computed():
    # p_q = (1/3, 2/3, 1/3, 0, 1/3); p_d = (1/4, 2/4, 1/4, 1/4, 1/4)
    # sum p_q*p_d = (1 + 4 + 1 + 0 + 1) / 12 = 7/12. Counting the stored zeros would give 9/12.
    assert flops(QUERIES, DOCS) == float(Fraction(7, 12))
    # Pairwise shared active terms: q0: 2,1,0,0  q1: 2,1,0,0  q2: 0,0,1,0  -> 7 over 12 pairs.
    shared = (QUERIES.toarray() != 0).astype(int) @ (DOCS.toarray() != 0).astype(int).T
    assert shared.sum() == 7


def test_mean_active_dims_hand_computed():
    assert mean_active_dims(QUERIES) == float(Fraction(5, 3))
    assert mean_active_dims(DOCS) == 1.5


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_flops_equals_mean_pairwise_overlap(seed):
    rng = np.random.default_rng(seed)
    Q = sp.random(30, 40, density=0.2, format="csr", random_state=rng, dtype=np.float32)
    D = sp.random(70, 40, density=0.15, format="csr", random_state=rng, dtype=np.float32)
    Q.data[::5] = 0.0  # stored zeros must not count
    D.data[::7] = 0.0
    overlap = (Q.toarray() != 0).astype(np.int64) @ (D.toarray() != 0).astype(np.int64).T
    assert flops(Q, D) == pytest.approx(overlap.mean(), rel=1e-12)


def test_flops_rejects_vocab_mismatch():
    with pytest.raises(ValueError):
        flops(QUERIES, DOCS[:, :4])


# Graded qrels; q3 is judged but missing from the run; qX is in the run but unjudged.
QRELS = {
    "q1": {"d1": 2, "d2": 1, "d3": 1, "d9": 0},
    "q2": {"d5": 1},
    "q3": {"d7": 1},
}
RUN = {
    "q1": {"d4": 0.9, "d1": 0.8, "d9": 0.7, "d2": 0.6},  # ranks: d4, d1 (rel 2), d9 (rel 0), d2 (rel 1)
    "q2": {"d6": 0.5, "d5": 0.4},  # d5 at rank 2
    "qX": {"d1": 1.0},
}


def _ndcg_by_hand():
    log2 = math.log2
    dcg_q1 = 2 / log2(3) + 1 / log2(5)
    idcg_q1 = 2 / log2(2) + 1 / log2(3) + 1 / log2(4)
    ndcg_q2 = (1 / log2(3)) / 1.0
    return {"q1": dcg_q1 / idcg_q1, "q2": ndcg_q2, "q3": 0.0}


def test_evaluate_run_hand_computed():
    agg, per_query = evaluate_run(RUN, QRELS, ["nDCG@10", "RR@10", "R@1000", "R(rel=2)@1000"])
    ndcg = _ndcg_by_hand()
    assert set(agg) == {"nDCG@10", "RR@10", "R@1000", "R(rel=2)@1000"}
    assert agg["nDCG@10"] == pytest.approx(sum(ndcg.values()) / 3, abs=1e-9)
    assert agg["RR@10"] == pytest.approx((1 / 2 + 1 / 2 + 0) / 3, abs=1e-9)
    assert agg["R@1000"] == pytest.approx((2 / 3 + 1 + 0) / 3, abs=1e-9)
    assert agg["R(rel=2)@1000"] == pytest.approx((1 + 0 + 0) / 3, abs=1e-9)

    pq = {(q, m): v for q, m, v in per_query}
    assert len(per_query) == 12  # 3 judged queries x 4 measures; qX is not scored
    assert [q for q, _, _ in per_query] == ["q1"] * 4 + ["q2"] * 4 + ["q3"] * 4
    for q in ("q1", "q2", "q3"):
        assert pq[(q, "nDCG@10")] == pytest.approx(ndcg[q], abs=1e-9)
    assert pq[("q1", "RR@10")] == pytest.approx(0.5, abs=1e-9)
    assert pq[("q1", "R@1000")] == pytest.approx(2 / 3, abs=1e-9)
    assert all(pq[("q3", m)] == 0.0 for m in ("nDCG@10", "RR@10", "R@1000", "R(rel=2)@1000"))


def test_missing_judged_query_counts_as_zero():
    full, _ = evaluate_run(RUN, QRELS, ["RR@10"])
    only_q1 = {"q1": RUN["q1"]}
    partial, _ = evaluate_run(only_q1, QRELS, ["RR@10"])
    assert full["RR@10"] == pytest.approx(1 / 3, abs=1e-9)
    assert partial["RR@10"] == pytest.approx(0.5 / 3, abs=1e-9)
    # An empty result list is the same as a missing query.
    empty_q2 = {"q1": RUN["q1"], "q2": {}}
    assert evaluate_run(empty_q2, QRELS, ["RR@10"])[0]["RR@10"] == pytest.approx(0.5 / 3, abs=1e-9)
    assert evaluate_run({}, QRELS, ["nDCG@10"])[0] == {"nDCG@10": 0.0}


def test_measure_names_as_ir_measures_prints_them():
    agg, per_query = evaluate_run(RUN, QRELS, ["nDCG(cutoff=10)", "RR@10", "RR(rel=1)@10"])
    assert list(agg) == ["nDCG@10", "RR@10"]
    assert {m for _, m, _ in per_query} == {"nDCG@10", "RR@10"}


@pytest.mark.parametrize("name", ["foo@10", "ndcg_cut_10", "nDCG@x", "nDCG(foo=1)@10", "RR@10.5", "P"])
def test_unknown_measure(name):
    with pytest.raises(InputError) as ei:
        evaluate_run(RUN, QRELS, ["nDCG@10", name])
    assert ei.value.field == "measures"
    assert name in str(ei.value)
    assert "\n" not in str(ei.value)


# ------------------------------------------------------------------ queries that retrieve nothing
# q2 retrieved nothing (an all-zero query vector), q3 is absent from the run, q4 retrieved two
# documents only: what each toolchain makes of them (empty_results, docs/evaluation.md).
SHORT_QRELS = {"q1": {"d1": 1, "d3": 1}, "q2": {"d2": 1}, "q3": {"d1": 1}, "q4": {"d5": 1, "d0": 1}}
SHORT_RUN = {"q1": {"d4": 3.0, "d1": 2.0, "d2": 1.0}, "q2": {}, "q4": {"d6": 2.0, "d5": 1.0}}
BEIR_TO_IR_MEASURES = {"NDCG@10": "nDCG@10", "P@10": "P@10", "Recall@100": "R@100", "MAP@100": "AP@100"}


@pytest.mark.parametrize("empty_results, beir_run", [
    # pytrec_eval scores a query given an empty list 0 and BEIR divides by every query it scored
    ("zero", {**SHORT_RUN, "q3": {}}),
    # naver/splade's SparseRetrieval writes nothing for a query without a positive score, and BEIR
    # averages over the queries of the run only
    ("skip", {q: docs for q, docs in SHORT_RUN.items() if docs}),
])
def test_empty_results_agree_with_beir(empty_results, beir_run):
    import copy

    from beir.retrieval.evaluation import EvaluateRetrieval

    ndcg, _map, recall, precision = EvaluateRetrieval.evaluate(SHORT_QRELS, copy.deepcopy(beir_run), [10, 100],
                                                               ignore_identical_ids=False)
    beir = {**ndcg, **_map, **recall, **precision}
    ours, per_query = evaluate_run(SHORT_RUN, SHORT_QRELS, list(BEIR_TO_IR_MEASURES.values()),
                                   empty_results=empty_results)
    for beir_name, ours_name in BEIR_TO_IR_MEASURES.items():
        assert ours[ours_name] == pytest.approx(beir[beir_name], abs=6e-6), beir_name  # BEIR rounds to 5 decimals
    assert {q for q, _, _ in per_query} == ({"q1", "q2", "q3", "q4"} if empty_results == "zero" else {"q1", "q4"})
    # by hand: q1 and q4 each find one of their two relevant documents at rank 2
    one = (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    assert ours["nDCG@10"] == pytest.approx(one * 2 / (4 if empty_results == "zero" else 2), abs=1e-12)


def test_skip_with_no_query_retrieving_anything_is_zero():
    # BEIR's evaluate divides by zero here; a collapsed run still gets its metrics
    assert evaluate_run({"q1": {}}, SHORT_QRELS, ["nDCG@10"], empty_results="skip") == ({"nDCG@10": 0.0}, [])


def _st_evaluator(queries: dict, corpus_ids: list, qrels: dict, query_vectors):
    """sentence-transformers' InformationRetrievalEvaluator with the encoder replaced by the given
    query vectors: its own exhaustive dot-product scoring, top-k and metrics run unchanged."""
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator
    from sentence_transformers.util import dot_score

    class GivenVectors(InformationRetrievalEvaluator):
        def embed_inputs(self, model, sentences, **kwargs):
            assert list(sentences) == [queries[q] for q in self.queries_ids]
            return query_vectors[[list(queries).index(q) for q in self.queries_ids]]

    return GivenVectors(queries, {d: d for d in corpus_ids}, {q: set(docs) for q, docs in qrels.items()},
                        score_functions={"dot": dot_score}, precision_recall_at_k=[1, 10], accuracy_at_k=[10])


def test_fill_agrees_with_sentence_transformers_evaluator():
    """Exact retrieval over the inverted index, scored with ``empty_results: fill``, equals
    sentence-transformers' evaluator on the same vectors, where zero-score documents are ranked
    (ties by corpus id, not corpus order): an all-zero query, a query matching two documents, and
    ties at a positive score."""
    import torch

    from lsrbench.data.beir import Dataset
    from lsrbench.evaluate.evaluation import evaluate_vectors

    corpus_ids = ["d9", "d10", "d2", "d1", "d30", "d3", "d20", "d11", "d0", "d4", "d5", "d12"]
    rng = np.random.default_rng(3)
    docs = sp.random(len(corpus_ids), 20, density=0.15, format="csr", random_state=rng, dtype=np.float32)
    docs.data[:] = np.round(docs.data * 4) / 4 + 0.25  # few distinct values: ties at positive scores
    queries = sp.csr_matrix(np.vstack([np.zeros(20), docs[[0, 4]].sum(axis=0), np.eye(20)[docs[5].indices[0]],
                                       np.zeros(20)]).astype(np.float32))
    query_ids = ["qa", "qb", "qc", "qd"]
    qrels = {"qa": {"d1": 1, "d10": 1}, "qb": {"d30": 1, "d3": 1}, "qc": {"d3": 1, "d0": 1}, "qd": {"d12": 1}}
    dataset = Dataset(corpus={d: d for d in corpus_ids}, queries={q: q for q in query_ids}, qrels=qrels, name="mini")
    measures = ["nDCG@10", "RR@10", "P@10", "R@10"]
    ours = {}
    for mode in ("zero", "fill"):
        out = evaluate_vectors(dataset, docs, corpus_ids, queries, query_ids, top_k=100, measures=measures,
                               skip_identical_ids=False, empty_results=mode)
        ours[mode] = dict(out["rows"])
    assert len(out["results"]["qa"]) == 0 and len(out["results"]["qd"]) == 0  # the run file: retrieved only

    st = _st_evaluator(dataset.queries, corpus_ids, qrels, torch.tensor(queries.toarray()))
    scores = st.compute_all_metrics(None, corpus_embeddings=torch.tensor(docs.toarray()))["dot"]
    st_values = {"nDCG@10": scores["ndcg@k"][10], "RR@10": scores["mrr@k"][10], "P@10": scores["precision@k"][10],
                 "R@10": scores["recall@k"][10]}
    for name, value in st_values.items():
        assert ours["fill"][name] == pytest.approx(value, abs=1e-12), name
    assert ours["fill"]["nDCG@10"] > ours["zero"]["nDCG@10"]  # the zero-score documents count in ST


def test_fill_ranking_order_and_identical_ids():
    run = {"q1": {"b": 1.0, "a": 1.0, "c": 2.0}}
    filled = fill_ranking(run, ["q1", "q2"], ["z", "q2", "c", "b", "a", "y"], depth=5, skip_identical_ids=True)
    assert list(filled["q1"]) == ["c", "a", "b", "q2", "y"]  # score desc, ties by id; then unretrieved by id
    assert list(filled["q2"]) == ["a", "b", "c", "y", "z"]  # its own id left out
    assert list(filled["q1"].values()) == [5.0, 4.0, 3.0, 2.0, 1.0]
    with pytest.raises(ValueError, match="corpus_ids and depth"):
        evaluate_run(run, {"q1": {"a": 1}}, ["nDCG@10"], empty_results="fill")
