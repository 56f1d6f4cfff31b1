"""Tests for lsrbench.triplets: pseudo-query triplets from a corpus alone."""

from __future__ import annotations

import json

import pytest

from lsrbench.data.beir import load_beir_folder
from lsrbench.errors import InputError
from lsrbench.data.triplets import pseudo_query_triplets, read_triplets, write_triplets

from helpers.paths import shared_or_skip

SMALL = {
    f"d{i}": text
    for i, text in enumerate([
        "learned sparse retrieval expands documents with weighted vocabulary terms",
        "the mlm head of a transformer predicts masked tokens over the vocabulary",
        "bm25 is a strong lexical baseline for ad hoc document retrieval tasks",
        "splade uses the mlm head with a log saturation to build sparse vectors",
        "rescaling the mlm head changes the sparsity and effectiveness of splade models",
        "dense retrieval encodes queries and documents as single vectors in a space",
        "inverted indexes make sparse retrieval efficient on large document collections",
        "flops regularization controls the number of non zero terms in sparse vectors",
    ])
}


def is_contiguous_span(query: str, text: str) -> bool:
    q, words = query.split(), text.split()
    return bool(q) and any(words[i:i + len(q)] == q for i in range(len(words) - len(q) + 1))


@pytest.fixture(scope="module")
def vaswani():
    return load_beir_folder(shared_or_skip("data", "vaswani"))


def check_triplets(triplets, corpus, span_words=(4, 12)):
    texts = set(corpus.values())
    for t in triplets:
        assert set(t) == {"query", "positive", "negative"}
        assert t["positive"] in texts and t["negative"] in texts
        assert t["negative"] != t["positive"]
        assert is_contiguous_span(t["query"], t["positive"]), t
        n_words = len(t["query"].split())
        assert n_words <= span_words[1]
        assert n_words >= min(span_words[0], len(t["positive"].split()))


def test_small_corpus_properties_and_determinism():
    a = pseudo_query_triplets(SMALL, 5, seed=3, negative_depth=(1, 3))
    assert len(a) == 5
    check_triplets(a, SMALL)
    assert len({t["positive"] for t in a}) == 5  # without replacement when n <= corpus size
    assert a == pseudo_query_triplets(SMALL, 5, seed=3, negative_depth=(1, 3))
    assert a != pseudo_query_triplets(SMALL, 5, seed=4, negative_depth=(1, 3))


def test_more_triplets_than_documents_and_fallback_negatives():
    many = pseudo_query_triplets(SMALL, 30, seed=0)  # ranks 5..50 rarely exist here: random fallback
    assert len(many) == 30
    check_triplets(many, SMALL)
    assert pseudo_query_triplets(SMALL, 0, seed=0) == []


def test_exact_duplicate_texts_are_never_negatives():
    corpus = {"a": "red green blue yellow", "b": "red green blue yellow", "c": "purple orange"}
    for t in pseudo_query_triplets(corpus, 20, seed=1, span_words=(2, 3), negative_depth=(1, 2)):
        assert t["negative"] == "purple orange" or t["positive"] == "purple orange"
        assert t["negative"] != t["positive"]


def test_bad_arguments():
    with pytest.raises(ValueError):
        pseudo_query_triplets(SMALL, 3, seed=0, span_words=(5, 2))
    with pytest.raises(ValueError):
        pseudo_query_triplets(SMALL, 3, seed=0, negative_depth=(0, 5))
    with pytest.raises(ValueError):
        pseudo_query_triplets({"a": "same text", "b": "same text"}, 3, seed=0)


def test_vaswani_triplets(vaswani):
    triplets = pseudo_query_triplets(vaswani.corpus, 400, seed=7)
    assert len(triplets) == 400
    check_triplets(triplets, vaswani.corpus)
    assert triplets == pseudo_query_triplets(vaswani.corpus, 400, seed=7)
    test_queries = {q.strip().lower() for q in vaswani.queries.values()}
    assert not test_queries & {t["query"].strip().lower() for t in triplets}
    # hard negatives: most negatives share a word with their pseudo-query
    overlap = sum(bool(set(t["query"].split()) & set(t["negative"].split())) for t in triplets)
    assert overlap > 0.9 * len(triplets)


def test_write_read_round_trip(tmp_path):
    triplets = pseudo_query_triplets(SMALL, 4, seed=0, negative_depth=(1, 3))
    triplets[0]["query"] = "ünïcode query"
    path = write_triplets(tmp_path / "sub" / "triplets.jsonl", triplets)
    assert read_triplets(path) == triplets
    assert len(path.read_text(encoding="utf-8").splitlines()) == 4
    with pytest.raises(ValueError):
        write_triplets(tmp_path / "bad.jsonl", [{"query": "q", "positive": "p"}])
    assert not (tmp_path / "bad.jsonl").exists()


def test_read_triplets_errors(tmp_path):
    path = tmp_path / "t.jsonl"
    good = json.dumps({"query": "q", "positive": "p", "negative": "n"})
    path.write_text(good + "\n" + json.dumps({"query": "q", "positive": "p"}) + "\n")
    with pytest.raises(InputError) as info:
        read_triplets(path)
    assert str(path) in str(info.value) and "line 2" in str(info.value) and "'negative'" in str(info.value)

    path.write_text(good + "\n" + good + "\n{broken\n")
    with pytest.raises(InputError, match="line 3: malformed JSON"):
        read_triplets(path)

    path.write_text("")
    with pytest.raises(InputError, match="no triplets"):
        read_triplets(path)
    with pytest.raises(InputError, match="file not found"):
        read_triplets(tmp_path / "missing.jsonl")


def test_pseudo_queries_from_a_corpus_of_one_distinct_document_is_one_line(tmp_path):
    """Before: pseudo_query_triplets' ValueError, a traceback from the triplets job."""
    from helpers.beir import write_beir
    from lsrbench.data.training_sources import build_triplets
    from lsrbench.errors import InputError

    folder = write_beir(tmp_path / "same", {"d1": "one text", "d2": "one text", "d3": ""}, {"q1": "x"}, [("q1", "d1", 1)])
    with pytest.raises(InputError) as err:
        build_triplets({"source": "pseudo_queries", "dataset": "same"}, 4, 0, tmp_path / "t.jsonl", full_dir=folder)
    assert str(err.value) == (f"{folder / 'corpus.jsonl'}: pseudo-queries need at least two distinct documents "
                              "with words (training_data.dataset)")
    assert not (tmp_path / "t.jsonl").exists()
