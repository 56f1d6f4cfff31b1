"""lsrbench's evaluation path agrees with sentence-transformers' own IR evaluator.

Real checkpoint (``../shared/models/splade-tiny-msmarco``), real data (``../shared/data/vaswani``),
no training: the model comes out of ``train_splade`` with ``steps=0`` and ``k=1`` (the pipeline's
"evaluate a published checkpoint as it is" path), is reloaded with ``SparseEncoder(out_dir)`` like
the index stage does, and is then evaluated twice:

* lsrbench: ``encode_texts`` -> ``search`` (exact, float64) -> ``evaluate_run`` (ir_measures),
  ``flops``, ``mean_active_dims``;
* reference: ``SparseInformationRetrievalEvaluator`` (torch top-k on float32 dot products, its own
  nDCG/MRR code, its own FLOPs and active dimensions).

To stay well under a minute on two CPU cores the collection is a deterministic subset (all 93
queries, every judged document, and 1,000 other documents spread evenly over the corpus) at max
length 128, and the corpus is encoded once: lsrbench's ``encode_texts`` matrix is handed to the
evaluator through its ``corpus_embeddings`` argument (the evaluator still encodes the queries
itself and computes its corpus statistics from those embeddings). That ``encode_texts`` returns
exactly what ``SparseEncoder.encode_document``/``encode_query`` return is checked separately.

Known, deliberate differences between the two sides, none of which matters here:

* The evaluator takes ``relevant_docs`` as sets: every listed id is relevant with gain 1, and a
  query with an empty set is dropped. So only judgments with relevance > 0 are passed (Vaswani's
  are all 1); on graded qrels its nDCG (binary gain) would differ from ir_measures'.
* The evaluator ranks *all* documents, so a query with fewer than k positive-score documents is
  topped up with zero-score ones (ordered by corpus id); ``search`` only returns score > 0. On
  this subset every query has at least 1,000 positive-score documents, so it never happens (the
  last test also checks that padding our run the evaluator's way reproduces its Recall@1000).
* Score ties: the evaluator orders by (-score, corpus_id); pytrec_eval (nDCG) by doc id
  descending, ir_measures' msmarco provider (RR) ascending; and float32 vs float64 scores can
  order near-ties differently. Hence the 0.002 tolerance rather than equality.
"""

from __future__ import annotations

import math
import pytest

from helpers.paths import SHARED

MODEL = SHARED / "models" / "splade-tiny-msmarco"
VASWANI = SHARED / "data" / "vaswani"

if not SHARED.is_dir():
    pytest.skip(f"{SHARED} not present (read-only test material beside the repo)", allow_module_level=True)

MAX_LENGTH = 128
N_OTHER_DOCS = 1000
BATCH_SIZE = 32
METRIC_TOL = 0.002
N_ENCODE_CHECK = 48  # documents whose encode_texts rows are compared with encode_document directly


@pytest.fixture(scope="module")
def agreement(tmp_path_factory):
    """Run both evaluations once; return everything the tests compare."""
    for p in (MODEL / "config.json", VASWANI / "corpus.jsonl"):
        if not p.is_file():
            pytest.skip(f"{p} not present")
    import numpy as np
    import torch
    from sentence_transformers import SparseEncoder
    from sentence_transformers.sparse_encoder.evaluation import SparseInformationRetrievalEvaluator

    from lsrbench.data.beir import load_beir_folder
    from lsrbench.index.encode import encode_texts
    from lsrbench.evaluate.flops import flops, mean_active_dims
    from lsrbench.evaluate.metrics import evaluate_run
    from lsrbench.evaluate.retrieval import search
    from lsrbench.model.train import train_splade

    ds = load_beir_folder(VASWANI)
    judged = {d for rels in ds.qrels.values() for d in rels}
    others = [d for d in ds.corpus if d not in judged]
    extra = set(others[:: max(1, len(others) // N_OTHER_DOCS)][:N_OTHER_DOCS])
    corpus = {d: t for d, t in ds.corpus.items() if d in judged or d in extra}
    doc_ids, query_ids = list(corpus), list(ds.queries)

    # The zero-training-steps path: k = 1, steps = 0, saved in SparseEncoder format and reloaded.
    tmp = tmp_path_factory.mktemp("agreement")
    from lsrbench.config.schema import with_defaults

    recipe = with_defaults("recipe", {
        "steps": 0, "batch_size": 16, "learning_rate": 2e-5, "warmup_steps": 0,
        "query_max_length": MAX_LENGTH, "document_max_length": MAX_LENGTH,
        "lambda_q": 5e-5, "lambda_d": 3e-5, "regularizer_warmup_ratio": 0.33, "precision": "fp32", "seed": 42,
    })
    summary = train_splade(str(MODEL), [], recipe, tmp / "model", tmp / "train.jsonl", k=1.0)
    assert summary["steps"] == 0
    model = SparseEncoder(str(tmp / "model"), device="cpu")

    # lsrbench side, as the index and evaluate stages do it.
    D = encode_texts(model, [corpus[d] for d in doc_ids], "document", BATCH_SIZE)
    Q = encode_texts(model, [ds.queries[q] for q in query_ids], "query", BATCH_SIZE)
    results = search(Q, query_ids, D, doc_ids, top_k=1000)
    run = {q: dict(hits) for q, hits in results.items()}
    ours, _ = evaluate_run(run, ds.qrels, ["nDCG@10", "RR@10", "R@1000"])
    ours.update(FLOPs=flops(Q, D), query_active_dims=mean_active_dims(Q), corpus_active_dims=mean_active_dims(D))

    # Reference side: sentence-transformers' evaluator on the same model, data and lengths.
    relevant = {q: {d for d, r in rels.items() if r > 0} for q, rels in ds.qrels.items()}
    evaluator = SparseInformationRetrievalEvaluator(
        queries=ds.queries, corpus=corpus, relevant_docs=relevant, batch_size=BATCH_SIZE, write_csv=False,
        mrr_at_k=[10], ndcg_at_k=[10], accuracy_at_k=[1], precision_recall_at_k=[1000], map_at_k=[10],
    )
    coo = D.tocoo()
    corpus_embeddings = torch.sparse_coo_tensor(
        torch.from_numpy(np.vstack([coo.row, coo.col]).astype(np.int64)),
        torch.from_numpy(coo.data), size=D.shape, check_invariants=True,
    ).coalesce()
    theirs = evaluator(model, corpus_embeddings=corpus_embeddings)

    # Encoding check material: the same calls as encode_texts makes, straight to sentence-transformers.
    step = max(1, len(doc_ids) // N_ENCODE_CHECK)
    sample = [corpus[d] for d in doc_ids[::step][:N_ENCODE_CHECK]]
    sample.append(max(corpus.values(), key=len))  # truncated at MAX_LENGTH
    queries = [ds.queries[q] for q in query_ids]
    st_sample = model.encode_document(sample, batch_size=BATCH_SIZE, convert_to_sparse_tensor=True)
    st_queries = model.encode_query(queries, batch_size=BATCH_SIZE, convert_to_sparse_tensor=True)
    return {
        "ours": ours, "theirs": theirs, "results": results, "qrels": ds.qrels, "doc_ids": doc_ids,
        "Q": Q, "D": D, "model": model, "sample": sample, "st_sample": st_sample, "st_queries": st_queries,
        "n_queries": len(query_ids), "n_docs": len(doc_ids), "n_judged": len(judged),
    }


def test_subset_is_what_it_claims(agreement):
    a = agreement
    assert a["n_queries"] == 93
    assert a["n_docs"] == a["n_judged"] + N_OTHER_DOCS
    assert a["D"].shape == (a["n_docs"], a["model"].get_embedding_dimension())
    assert a["D"].shape[1] == a["model"][0].auto_model.config.vocab_size


def test_no_zero_score_documents_inside_cutoff_10(agreement):
    """Precondition for comparing @10: the evaluator would top a short list up with zero-score docs."""
    short = [q for q, hits in agreement["results"].items() if len(hits) < 10]
    assert short == []


def _close(ours: float, theirs: float, tol: float) -> bool:
    return abs(ours - theirs) <= tol


def test_ndcg_and_mrr_agree(agreement):
    ours, theirs = agreement["ours"], agreement["theirs"]
    report = (f"nDCG@10 ours {ours['nDCG@10']:.6f} ST {theirs['dot_ndcg@10']:.6f}; "
              f"RR@10 ours {ours['RR@10']:.6f} ST MRR@10 {theirs['dot_mrr@10']:.6f}")
    assert _close(ours["nDCG@10"], theirs["dot_ndcg@10"], METRIC_TOL), report
    assert _close(ours["RR@10"], theirs["dot_mrr@10"], METRIC_TOL), report
    assert 0.2 < ours["nDCG@10"] < 0.9, report  # a real SPLADE model on real data, not a degenerate run


def test_flops_and_active_dims_agree(agreement):
    ours, theirs = agreement["ours"], agreement["theirs"]
    assert math.isclose(ours["FLOPs"], theirs["avg_flops"], rel_tol=1e-3), (ours["FLOPs"], theirs["avg_flops"])
    assert ours["query_active_dims"] == pytest.approx(theirs["query_active_dims"], abs=1e-3)
    assert ours["corpus_active_dims"] == pytest.approx(theirs["corpus_active_dims"], abs=1e-3)


def test_encode_texts_returns_what_sentence_transformers_encodes(agreement):
    """Same calls, same batches: the CSR rows must equal sentence-transformers' sparse embeddings exactly."""
    import numpy as np

    from lsrbench.index.encode import encode_texts

    a = agreement
    got_docs = encode_texts(a["model"], a["sample"], "document", BATCH_SIZE)
    for got, want in ((got_docs, a["st_sample"]), (a["Q"], a["st_queries"])):
        want = want.coalesce()
        dense_want = want.to_dense().numpy()
        assert got.shape == dense_want.shape
        np.testing.assert_array_equal(got.toarray(), dense_want)
        assert got.nnz == int((want.values() != 0).sum())


def test_recall_at_1000_agrees_up_to_zero_score_padding(agreement):
    """The evaluator's Recall@1000 also counts zero-score documents that fill its top 1000 (in corpus-id
    order); ``search`` never returns them. Padding our run the same way must reproduce its value (a
    no-op when every query has 1,000 positive-score documents, as on this subset)."""
    import numpy as np

    a = agreement
    qrels, doc_ids = a["qrels"], a["doc_ids"]
    by_id = sorted(doc_ids)
    recalls = []
    for qid, hits in a["results"].items():
        ranked = [d for d, _ in hits]
        if len(ranked) < 1000:
            seen = set(ranked)
            ranked += [d for d in by_id if d not in seen][: 1000 - len(ranked)]
        rel = {d for d, r in qrels[qid].items() if r > 0}
        recalls.append(len(rel.intersection(ranked)) / len(rel))
    padded = float(np.mean(recalls))
    ours, theirs = a["ours"]["R@1000"], a["theirs"]["dot_recall@1000"]
    assert ours <= theirs + 1e-12, (ours, theirs)
    assert padded == pytest.approx(theirs, abs=1e-9), (ours, padded, theirs)
    if all(len(hits) == 1000 for hits in a["results"].values()):
        assert ours == pytest.approx(theirs, abs=1e-9)
