"""lsrbench's BEIR-folder reader against beir's own ``GenericDataLoader`` (beir 2.2.0).

What is *equal* on every well-formed folder (string ids, no BOM in the JSON-lines files, a header
line in the qrels, no blank lines, every qrels id known):

* the document ids, in file order; each document's text is BEIR's ``title`` and ``text`` joined
  the way lsrbench does (non-empty parts, one space): beir keeps them apart by design (its
  ``{"title", "text"}`` dicts; a missing or null title is ``None`` there, ``""`` for lsrbench);
* the queries as a mapping, both dropping queries without a judgment in the split. The *order*
  differs: beir orders them by first appearance in the qrels file, lsrbench keeps queries.jsonl's;
* the qrels, exactly (score 0 and negative scores kept, a query judged only 0 kept, a pair repeated
  with the same score stored once, CRLF line ends, a BOM before the qrels header).

Where they differ by design (lsrbench stricter or more tolerant, always with a file and line):

* UTF-8 BOM at the start of corpus.jsonl / queries.jsonl: beir raises JSONDecodeError;
  lsrbench reads it.
* blank lines: beir raises JSONDecodeError; lsrbench skips them.
* integer ids (``"_id": 7``): beir keeps ints as corpus/query keys (so a query id never matches its
  qrels string and ``load`` raises KeyError); lsrbench turns them into strings.
* a qrels file without header: beir always drops the first line (losing a judgment); lsrbench
  skips the first line only when its score column is not an integer.
* duplicate document / query ids, conflicting repeated judgments: beir keeps the last silently;
  lsrbench raises InputError naming both lines.
* unknown query id in qrels: beir KeyError; lsrbench InputError with the line. Unknown document
  id: beir keeps it silently; lsrbench raises unless ``unknown_docs="keep"`` (then equal to beir)
  or ``"drop"``.
* whitespace around qrels fields: beir keeps it (``"q1 "`` then fails as an unknown query);
  lsrbench strips it.
* extra qrels columns: beir ignores them; lsrbench raises. A non-integer score: both raise
  (beir a bare ValueError, lsrbench InputError with the line).
* invalid UTF-8: beir UnicodeDecodeError; lsrbench InputError with line and column.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lsrbench.data.beir import load_beir_folder
from lsrbench.data.store import write_beir_folder
from lsrbench.errors import InputError

from helpers.beir import make_beir, write_beir
from helpers.paths import shared_or_skip

pytest.importorskip("beir")

HEADER = "query-id\tcorpus-id\tscore\n"


def _load_beir(folder, split="test"):
    import logging

    from beir.datasets.data_loader import GenericDataLoader

    logging.getLogger("beir").setLevel(logging.WARNING)
    return GenericDataLoader(data_folder=str(folder)).load(split=split)


def _join(doc: dict) -> str:
    return " ".join(p for p in (doc.get("title") or "", doc.get("text") or "") if p)


def assert_same_as_beir(folder, split="test", **kw):
    """The equality contract (module docstring); returns both views for further checks."""
    ds = load_beir_folder(folder, split, **kw)
    corpus, queries, qrels = _load_beir(folder, split)
    assert list(ds.corpus) == list(corpus)  # same ids, same order
    assert ds.corpus == {d: _join(doc) for d, doc in corpus.items()}
    assert ds.queries == queries  # as mappings (the order may differ, see the docstring)
    assert ds.qrels == qrels
    return ds, (corpus, queries, qrels)


# --------------------------------------------------------------------------- every BEIR folder the tests build


def _vaswani(tmp_path, request):
    return shared_or_skip("data", "vaswani")


def _vaswani_slice(tmp_path, request):  # conftest's fixture (the micro DAG's dataset)
    return request.getfixturevalue("vaswani_slice")


def _data_stage_full(tmp_path, request):  # what the dataset stage writes (results/data/<name>/<id>/full)
    return write_beir_folder(load_beir_folder(_vaswani(tmp_path, request)), tmp_path / "full")


def _data_stage_pooled(tmp_path, request):  # ... and its pooled subset (results/data/<name>/<id>/pool<depth>/eval)
    from lsrbench.data.bm25 import pooled_subset

    return write_beir_folder(pooled_subset(load_beir_folder(_vaswani_slice(tmp_path, request)), 5), tmp_path / "eval")


def _make_beir_default(tmp_path, request):  # tests/data/test_beir.py's folder (titles, a score 0)
    return make_beir(tmp_path / "mini")


def _write_beir_toy(tmp_path, request):  # helpers.beir.write_beir as test_bad_inputs and test_prefetch use it
    return write_beir(tmp_path / "toy", {"d1": "alpha beta", "d2": "gamma delta", "d3": "epsilon"},
                      {"q1": "alpha", "q2": "gamma"}, [("q1", "d1", 1), ("q2", "d2", 1)])


def _write_beir_collapse(tmp_path, request):  # ... and as test_collapse uses it (ids d0.., q0..)
    return write_beir(tmp_path / "data", {f"d{i}": f"doc {i}" for i in range(4)}, {f"q{i}": f"query {i}" for i in range(3)},
                      [(f"q{i}", f"d{i}", 1) for i in range(3)])


def _nano_miniature(tmp_path, request):  # a NanoBEIR-layout hub repo through the hf source, written out
    from lsrbench.data.hf import load_hf_dataset

    from helpers.miniatures import write_nano_repo

    src = load_hf_dataset(str(write_nano_repo(tmp_path / "repo")), revision=None, unknown_docs="keep",
                          cache_dir=tmp_path / "cache", empty_queries="drop")
    return write_beir_folder(src, tmp_path / "NanoNQ")


TEST_FOLDERS = {"shared-vaswani": _vaswani, "vaswani_slice": _vaswani_slice, "data-stage-full": _data_stage_full,
                "data-stage-pooled": _data_stage_pooled, "make_beir": _make_beir_default, "write_beir-toy": _write_beir_toy,
                "write_beir-collapse": _write_beir_collapse, "nano-miniature": _nano_miniature}


@pytest.mark.parametrize("name", list(TEST_FOLDERS))
def test_every_test_folder_reads_as_beir_reads_it(tmp_path, request, name):
    folder = TEST_FOLDERS[name](tmp_path, request)
    kw = {"unknown_docs": "keep"} if name == "nano-miniature" else {}
    ds, _ = assert_same_as_beir(folder, **kw)
    assert ds.corpus and ds.queries and ds.qrels


def test_vaswani_counts_and_order():
    ds, (corpus, queries, _) = assert_same_as_beir(shared_or_skip("data", "vaswani"))
    assert (len(ds.corpus), len(ds.queries), sum(map(len, ds.qrels.values()))) == (11429, 93, 2083)
    assert all(doc["title"] == "" for doc in corpus.values())
    assert list(ds.queries) == list(queries)  # Vaswani's qrels list queries in queries.jsonl order


def test_written_folder_query_order(tmp_path):
    """lsrbench writes qrels sorted by id string, so beir's query order (first appearance in the
    qrels) is "1", "10", "11", ...; the mapping is the same."""
    ds = load_beir_folder(shared_or_skip("data", "vaswani"))
    _, queries, _ = _load_beir(write_beir_folder(ds, tmp_path / "vaswani"))
    assert list(queries) == sorted(ds.queries) and queries == ds.queries


# --------------------------------------------------------------------------- miniature folders


def _folder(tmp_path: Path, corpus: str | bytes, queries: str | bytes, qrels: str | bytes) -> Path:
    (tmp_path / "qrels").mkdir(parents=True, exist_ok=True)
    for name, content in (("corpus.jsonl", corpus), ("queries.jsonl", queries), ("qrels/test.tsv", qrels)):
        (tmp_path / name).write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return tmp_path


def _jsonl(*rows: dict) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


DOCS = _jsonl({"_id": "d1", "title": "", "text": "x"}, {"_id": "d2", "title": "", "text": "y"})
QUERIES = _jsonl({"_id": "q1", "text": "a"}, {"_id": "q2", "text": "b"})


EQUAL_CASES = {
    "titles": (_jsonl({"_id": "d1", "title": "T1", "text": "x"}, {"_id": "d2", "title": "", "text": "y"},
                      {"_id": "d3", "text": "z"}, {"_id": "d4", "title": None, "text": "w"},
                      {"_id": "d5", "title": "T5", "text": ""}),
               QUERIES, HEADER + "q1\td1\t1\nq2\td5\t1\n"),
    "score_0_and_query_judged_only_0": (DOCS, QUERIES, HEADER + "q1\td1\t0\nq1\td2\t1\nq2\td1\t0\n"),
    "negative_score": (DOCS, QUERIES, HEADER + "q1\td1\t-1\nq2\td2\t1\n"),
    "repeated_identical_pair": (DOCS, QUERIES, HEADER + "q1\td1\t1\nq1\td1\t1\nq2\td2\t2\n"),
    "unjudged_query_dropped": (DOCS, QUERIES + _jsonl({"_id": "q3", "text": "c"}), HEADER + "q2\td1\t1\nq1\td2\t1\n"),
    "crlf": (DOCS.replace("\n", "\r\n"), QUERIES.replace("\n", "\r\n"), (HEADER + "q1\td1\t1\n").replace("\n", "\r\n")),
    "bom_before_qrels_header": (DOCS, QUERIES, "\ufeff" + HEADER + "q1\td1\t1\n"),
    "non_ascii_text": (_jsonl({"_id": "d1", "title": "Café", "text": "naïve – ünïcode"}), QUERIES, HEADER + "q1\td1\t1\n"),
    "string_ids_that_look_like_ints": (_jsonl({"_id": "01", "title": "", "text": "x"}, {"_id": "1", "title": "", "text": "y"}),
                                       _jsonl({"_id": "1", "text": "a"}), HEADER + "1\t01\t1\n1\t1\t0\n"),
}


@pytest.mark.parametrize("case", sorted(EQUAL_CASES))
def test_equal_to_beir_loader(tmp_path, case):
    assert_same_as_beir(_folder(tmp_path, *EQUAL_CASES[case]))


def test_query_order_differs_but_mapping_equal(tmp_path):
    ds, (_, queries, _) = assert_same_as_beir(_folder(tmp_path, DOCS, QUERIES, HEADER + "q2\td1\t1\nq1\td2\t1\n"))
    assert list(ds.queries) == ["q1", "q2"]  # queries.jsonl order
    assert list(queries) == ["q2", "q1"]  # beir: qrels order
    assert ds.dropped_queries == 0


def test_unknown_document_kept_equals_beir(tmp_path):
    folder = _folder(tmp_path, DOCS, QUERIES, HEADER + "q1\td9\t1\nq1\td1\t1\n")
    ds, _ = assert_same_as_beir(folder, unknown_docs="keep")
    assert ds.unknown_doc_qrels == 1
    with pytest.raises(InputError, match=r"line 2: unknown document id 'd9'"):
        load_beir_folder(folder)


# --------------------------------------------------------------------------- differences by design


def _beir_raises(folder, exc):
    with pytest.raises(exc):
        _load_beir(folder)


def test_bom_in_jsonl(tmp_path):
    folder = _folder(tmp_path, "\ufeff" + DOCS, "\ufeff" + QUERIES, HEADER + "q1\td1\t1\n")
    _beir_raises(folder, json.JSONDecodeError)
    ds = load_beir_folder(folder)
    assert ds.corpus == {"d1": "x", "d2": "y"} and ds.queries == {"q1": "a"}


def test_blank_lines(tmp_path):
    folder = _folder(tmp_path, DOCS + "\n", QUERIES, HEADER + "q1\td1\t1\n\n")
    _beir_raises(folder, json.JSONDecodeError)
    assert load_beir_folder(folder).corpus == {"d1": "x", "d2": "y"}


def test_integer_ids(tmp_path):
    docs = _jsonl({"_id": 1, "title": "", "text": "x"}, {"_id": 2, "title": "", "text": "y"})
    folder = _folder(tmp_path, docs, _jsonl({"_id": 1, "text": "a"}), HEADER + "1\t2\t1\n")
    _beir_raises(folder, KeyError)  # queries keyed by int 1, qrels by "1"
    ds = load_beir_folder(folder)
    assert ds.corpus == {"1": "x", "2": "y"} and ds.queries == {"1": "a"} and ds.qrels == {"1": {"2": 1}}
    # integer document ids alone load in beir, as int keys the qrels never match
    folder2 = _folder(tmp_path / "b", docs, _jsonl({"_id": "1", "text": "a"}), HEADER + "1\t2\t1\n")
    corpus, _, qrels = _load_beir(folder2)
    assert list(corpus) == [1, 2] and qrels == {"1": {"2": 1}}
    assert list(load_beir_folder(folder2).corpus) == ["1", "2"]


def test_headerless_qrels(tmp_path):
    folder = _folder(tmp_path, DOCS, QUERIES, "q1\td1\t1\nq1\td2\t1\n")
    assert _load_beir(folder)[2] == {"q1": {"d2": 1}}  # first judgment lost
    assert load_beir_folder(folder).qrels == {"q1": {"d1": 1, "d2": 1}}


def test_conflicting_repeated_pair(tmp_path):
    folder = _folder(tmp_path, DOCS, QUERIES, HEADER + "q1\td1\t1\nq1\td1\t2\n")
    assert _load_beir(folder)[2] == {"q1": {"d1": 2}}  # last wins
    with pytest.raises(InputError, match=r"line 3: conflicting judgment .*line 2"):
        load_beir_folder(folder)


def test_duplicate_document_id(tmp_path):
    folder = _folder(tmp_path, DOCS + _jsonl({"_id": "d1", "title": "", "text": "z"}), QUERIES, HEADER + "q1\td1\t1\n")
    assert _load_beir(folder)[0]["d1"]["text"] == "z"  # last wins
    with pytest.raises(InputError, match=r"line 3: duplicate document id 'd1' \(first on line 1\)"):
        load_beir_folder(folder)


def test_unknown_query(tmp_path):
    folder = _folder(tmp_path, DOCS, QUERIES, HEADER + "q9\td1\t1\n")
    _beir_raises(folder, KeyError)
    with pytest.raises(InputError, match=r"line 2: unknown query id 'q9'"):
        load_beir_folder(folder)


def test_whitespace_around_qrels_fields(tmp_path):
    folder = _folder(tmp_path, DOCS, QUERIES, HEADER + "q1 \td1\t1\n")
    _beir_raises(folder, KeyError)  # "q1 " is not a query id
    assert load_beir_folder(folder).qrels == {"q1": {"d1": 1}}


def test_extra_qrels_column(tmp_path):
    folder = _folder(tmp_path, DOCS, QUERIES, HEADER + "q1\td1\t1\tnote\n")
    assert _load_beir(folder)[2] == {"q1": {"d1": 1}}
    with pytest.raises(InputError, match=r"line 2: expected 3 tab-separated columns"):
        load_beir_folder(folder)


def test_non_integer_score(tmp_path):
    folder = _folder(tmp_path, DOCS, QUERIES, HEADER + "q1\td1\t1.0\n")
    _beir_raises(folder, ValueError)
    with pytest.raises(InputError, match=r"line 2: score '1.0' is not an integer"):
        load_beir_folder(folder)


def test_invalid_utf8(tmp_path):
    folder = _folder(tmp_path, b'{"_id": "d1", "title": "", "text": "caf\xe9"}\n', QUERIES, HEADER + "q1\td1\t1\n")
    _beir_raises(folder, UnicodeDecodeError)
    with pytest.raises(InputError, match=r"line 1: not valid UTF-8 \(byte 0xe9 at column 40\)"):
        load_beir_folder(folder)
