"""Tests for lsrbench.data: BEIR folders, ir_datasets, zips, mirrors, pooling, BM25."""

from __future__ import annotations

import json
import uuid
import zipfile
from pathlib import Path

import numpy as np
import pytest

from lsrbench.data.beir import Dataset, load_beir_folder
from lsrbench.data.beir_download import extract_beir_zip, load_beir_download
from lsrbench.data.bm25 import bm25_topk, pooled_subset
from lsrbench.data.ir_datasets_source import load_ir_datasets
from lsrbench.data.sources import resolve_dataset
from lsrbench.data.store import write_beir_folder
from lsrbench.errors import InputError

from helpers.beir import make_beir
from helpers.paths import SHARED
VASWANI = SHARED / "data" / "vaswani"


# --------------------------------------------------------------------------- helpers


def expect_error(folder: Path, file_name: str, *needles: str) -> InputError:
    with pytest.raises(InputError) as info:
        load_beir_folder(folder)
    text = str(info.value)
    assert "\n" not in text
    assert file_name in text, text
    for needle in needles:
        assert needle in text, text
    return info.value


@pytest.fixture(scope="module")
def vaswani() -> Dataset:
    if not (VASWANI / "corpus.jsonl").is_file():
        pytest.skip("shared Vaswani collection not available")
    return load_beir_folder(VASWANI, name="vaswani")


# --------------------------------------------------------------------------- BEIR folders


def test_load_joins_titles_and_keeps_graded_qrels(tmp_path):
    ds = load_beir_folder(make_beir(tmp_path / "mini"))
    assert ds.name == "mini"
    assert list(ds.corpus) == ["d1", "d2", "d3"]
    assert ds.corpus["d1"] == "Alpha first document about cats"
    assert ds.corpus["d2"] == "second document about dogs"
    assert ds.corpus["d3"] == "third document about birds"
    assert ds.queries == {"q1": "cats", "q2": "dogs"}
    assert ds.qrels == {"q1": {"d1": 2, "d3": 0}, "q2": {"d2": 1}}
    assert ds.dropped_queries == 0


def test_round_trip_is_equal_and_deterministic(tmp_path):
    original = load_beir_folder(make_beir(tmp_path / "src"))
    out = write_beir_folder(original, tmp_path / "out")
    again = load_beir_folder(out, name="src")
    assert again.corpus == original.corpus and list(again.corpus) == list(original.corpus)
    assert again.queries == original.queries
    assert again.qrels == original.qrels
    first = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    write_beir_folder(again, tmp_path / "out")  # overwrite in place
    second = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert first == second
    qrels_lines = (out / "qrels" / "test.tsv").read_text().splitlines()
    assert qrels_lines == ["query-id\tcorpus-id\tscore", "q1\td1\t2", "q1\td3\t0", "q2\td2\t1"]
    assert json.loads((out / "corpus.jsonl").read_text().splitlines()[0]) == {
        "_id": "d1", "title": "", "text": "Alpha first document about cats"}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp leftovers


def test_other_split(tmp_path):
    folder = make_beir(tmp_path / "mini", split="dev")
    assert load_beir_folder(folder, split="dev").qrels["q2"] == {"d2": 1}
    err = expect_error(folder, "test.tsv", "split 'test'", "dev")
    assert err.file.endswith("test.tsv")


def test_vaswani_counts(vaswani):
    assert len(vaswani.corpus) == 11429
    assert len(vaswani.queries) == 93
    assert sum(len(j) for j in vaswani.qrels.values()) == 2083
    assert vaswani.dropped_queries == 0


# --------------------------------------------------------------------------- validation


def test_malformed_json(tmp_path):
    folder = make_beir(tmp_path / "x", corpus=[{"_id": "d1", "text": "ok"}, '{"_id": "d2", "text": '])
    expect_error(folder, "corpus.jsonl", "line 2", "malformed JSON")


def test_non_utf8_line(tmp_path):
    bad = b'{"_id": "d3", "text": "caf\xe9"}'
    folder = make_beir(tmp_path / "x", corpus=[{"_id": "d1", "text": "a"}, {"_id": "d2", "text": "b"}, bad])
    expect_error(folder, "corpus.jsonl", "line 3", "UTF-8")


def test_duplicate_doc_id(tmp_path):
    corpus = [{"_id": "d1", "text": "a"}, {"_id": "d2", "text": "b"}, {"_id": "d1", "text": "c"}]
    expect_error(make_beir(tmp_path / "x", corpus=corpus), "corpus.jsonl", "line 3", "duplicate document id 'd1'",
                 "line 1")


def test_duplicate_query_id(tmp_path):
    queries = [{"_id": "q1", "text": "a"}, {"_id": "q1", "text": "b"}]
    expect_error(make_beir(tmp_path / "x", queries=queries), "queries.jsonl", "line 2", "duplicate query id 'q1'")


@pytest.mark.parametrize("record, field", [({"text": "no id"}, "_id"), ({"_id": "d9"}, "text"),
                                           ({"_id": "d9", "text": 5}, "text")])
def test_missing_or_bad_fields(tmp_path, record, field):
    folder = make_beir(tmp_path / "x", corpus=[{"_id": "d1", "text": "a"}, record])
    expect_error(folder, "corpus.jsonl", "line 2", f"'{field}'")


def test_empty_corpus(tmp_path):
    expect_error(make_beir(tmp_path / "x", corpus=[]), "corpus.jsonl", "empty")


def test_qrels_unknown_document(tmp_path):
    qrels = ["query-id\tcorpus-id\tscore", "q1\td1\t1", "q1\tghost\t1"]
    expect_error(make_beir(tmp_path / "x", qrels=qrels), "test.tsv", "line 3", "unknown document id 'ghost'")


def test_qrels_unknown_document_keep_or_drop(tmp_path):
    qrels = ["query-id\tcorpus-id\tscore", "q1\td1\t1", "q1\tghost\t1", "q2\td2\t1"]
    folder = make_beir(tmp_path / "x", qrels=qrels)
    dropped = load_beir_folder(folder, unknown_docs="drop")
    assert dropped.qrels == {"q1": {"d1": 1}, "q2": {"d2": 1}} and dropped.unknown_doc_qrels == 1
    kept = load_beir_folder(folder, unknown_docs="keep")  # BEIR's evaluation keeps such judgments
    assert kept.qrels == {"q1": {"d1": 1, "ghost": 1}, "q2": {"d2": 1}} and kept.unknown_doc_qrels == 1
    assert "ghost" not in kept.corpus
    via_config = resolve_dataset("x", {"source": "beir", "path": str(folder)}, None, "datasets.yaml", tmp_path,
                                 unknown_docs="keep")
    assert via_config.qrels == kept.qrels


def test_qrels_unknown_query(tmp_path):
    qrels = ["query-id\tcorpus-id\tscore", "q1\td1\t1", "q7\td2\t1"]
    expect_error(make_beir(tmp_path / "x", qrels=qrels), "test.tsv", "line 3", "unknown query id 'q7'")


@pytest.mark.parametrize("line, needle", [("q1\td1\tyes", "not an integer"), ("q1\td1", "3 tab-separated"),
                                          ("q1\td1\t0\textra", "3 tab-separated")])
def test_qrels_bad_lines(tmp_path, line, needle):
    qrels = ["query-id\tcorpus-id\tscore", "q2\td2\t1", line]
    expect_error(make_beir(tmp_path / "x", qrels=qrels), "test.tsv", "line 3", needle)


def test_qrels_conflicting_duplicate(tmp_path):
    qrels = ["query-id\tcorpus-id\tscore", "q1\td1\t1", "q1\td1\t2"]
    expect_error(make_beir(tmp_path / "x", qrels=qrels), "test.tsv", "line 3", "conflicting", "line 2")


def test_queries_without_qrels_are_dropped(tmp_path):
    queries = [{"_id": "q1", "text": "cats"}, {"_id": "q2", "text": "dogs"}, {"_id": "q3", "text": "fish"},
               {"_id": "q4", "text": "owls"}]
    ds = load_beir_folder(make_beir(tmp_path / "x", queries=queries))
    assert list(ds.queries) == ["q1", "q2"]
    assert ds.dropped_queries == 2


def test_no_judged_query_is_an_error(tmp_path):
    expect_error(make_beir(tmp_path / "x", qrels=["query-id\tcorpus-id\tscore"]), "test.tsv", "no judgments")


def test_missing_folder_and_files(tmp_path):
    missing = tmp_path / "nowhere"
    err = expect_error(missing, "nowhere", "not found")
    assert err.file == str(missing)
    folder = make_beir(tmp_path / "x")
    (folder / "queries.jsonl").unlink()
    expect_error(folder, "queries.jsonl", "not found")


# --------------------------------------------------------------------------- ir_datasets


def test_ir_datasets_miniature(tmp_path):
    ir_datasets = pytest.importorskip("ir_datasets")
    from ir_datasets.formats import TrecQrels, TsvDocs, TsvQueries
    from ir_datasets.util import LocalDownload

    (tmp_path / "docs.tsv").write_text("D1\tthe cat sat\nD2\tthe dog ran\nD3\ta bird flew\n")
    (tmp_path / "queries.tsv").write_text("1\tcat\n2\tdog\n3\tunjudged query\n")
    (tmp_path / "qrels.txt").write_text("1 0 D1 2\n1 0 D3 0\n2 0 D2 1\n")
    dataset_id = f"lsrbench-test-{uuid.uuid4().hex[:8]}"
    ir_datasets.registry.register(dataset_id, ir_datasets.datasets.base.Dataset(
        TsvDocs(LocalDownload(tmp_path / "docs.tsv")),
        TsvQueries(LocalDownload(tmp_path / "queries.tsv")),
        TrecQrels(LocalDownload(tmp_path / "qrels.txt"), {0: "not", 1: "rel", 2: "highly"}),
    ))

    ds = load_ir_datasets(dataset_id)
    assert ds.name == dataset_id
    assert ds.corpus == {"D1": "the cat sat", "D2": "the dog ran", "D3": "a bird flew"}
    assert ds.queries == {"1": "cat", "2": "dog"}
    assert ds.qrels == {"1": {"D1": 2, "D3": 0}, "2": {"D2": 1}}
    assert ds.dropped_queries == 1

    via_config = resolve_dataset("mini", {"source": "ir_datasets", "id": dataset_id}, None,
                                 "config/datasets.yaml", tmp_path / "cache")
    assert via_config.name == "mini" and via_config.qrels == ds.qrels

    bad_id = f"lsrbench-test-{uuid.uuid4().hex[:8]}"
    (tmp_path / "qrels2.txt").write_text("1 0 D1 1\n1 0 D404 1\n")
    ir_datasets.registry.register(bad_id, ir_datasets.datasets.base.Dataset(
        TsvDocs(LocalDownload(tmp_path / "docs.tsv")),
        TsvQueries(LocalDownload(tmp_path / "queries.tsv")),
        TrecQrels(LocalDownload(tmp_path / "qrels2.txt"), {}),
    ))
    with pytest.raises(InputError, match=r"ir_datasets:.*qrel #2: unknown document id 'D404'"):
        load_ir_datasets(bad_id)


def test_ir_datasets_unknown_id_names_datasets_file(tmp_path):
    pytest.importorskip("ir_datasets")
    with pytest.raises(InputError) as info:
        resolve_dataset("tiny", {"source": "ir_datasets", "id": "no-such-dataset/xyz"}, None,
                        "config/datasets.yaml", tmp_path)
    assert str(info.value).startswith("config/datasets.yaml: tiny.id: ")


# --------------------------------------------------------------------------- zips and downloads


def _zip_folder(folder: Path, zip_path: Path, prefix: str) -> Path:
    with zipfile.ZipFile(zip_path, "w") as zf:
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                zf.write(p, prefix + p.relative_to(folder).as_posix())
    return zip_path


@pytest.mark.parametrize("prefix", ["mini/", ""])
def test_extract_beir_zip(tmp_path, prefix):
    src = make_beir(tmp_path / "src")
    zip_path = _zip_folder(src, tmp_path / "mini.zip", prefix)
    out = extract_beir_zip(zip_path, tmp_path / "cache" / "mini")
    assert (out / "corpus.jsonl").is_file() and (out / "qrels" / "test.tsv").is_file()
    assert load_beir_folder(out).qrels == load_beir_folder(src).qrels


def test_extract_rejects_unsafe_and_bad_archives(tmp_path):
    zip_path = tmp_path / "evil.zip"
    with zipfile.ZipFile(zip_path, "w") as zf:
        zf.writestr("../escape.txt", "x")
    with pytest.raises(InputError, match="unsafe path"):
        extract_beir_zip(zip_path, tmp_path / "out")
    (tmp_path / "junk.zip").write_bytes(b"not a zip")
    with pytest.raises(InputError, match="junk.zip"):
        extract_beir_zip(tmp_path / "junk.zip", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_load_beir_download_uses_cached_zip(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    _zip_folder(make_beir(tmp_path / "src"), cache / "mini.zip", "mini/")
    ds = load_beir_download("mini", cache)  # no network: the zip is already in the cache
    assert ds.name == "mini" and len(ds.corpus) == 3
    assert not (cache / "mini.zip").exists() and (cache / "mini" / "corpus.jsonl").is_file()
    assert load_beir_download("mini", cache).corpus == ds.corpus  # reuses the folder


def test_a_downloaded_zip_with_the_wrong_md5_is_refused_before_unpacking(tmp_path, monkeypatch):
    """The registry's md5 is checked on the bytes the download wrote, before anything is unpacked:
    one line naming the dataset, the expected and the found digest; the zip set aside, no folder."""
    import hashlib
    import io
    import urllib.request

    _zip_folder(make_beir(tmp_path / "src"), tmp_path / "served.zip", "mini/")
    served = (tmp_path / "served.zip").read_bytes()
    good = hashlib.md5(served).hexdigest()
    fetched = []

    def urlopen(url, timeout=None):
        fetched.append(url)
        return io.BytesIO(served)

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    cache = tmp_path / "cache"
    wrong = "0" * 32
    with pytest.raises(InputError) as err:
        resolve_dataset("mini", {"source": "beir", "name": "mini", "md5": wrong}, None, "datasets.yaml", cache)
    line = str(err.value)
    assert "\n" not in line and "BEIR dataset 'mini'" in line and f"MD5 {good}, expected {wrong}" in line
    assert fetched == ["https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/mini.zip"]
    assert not (cache / "mini").exists() and not (cache / "mini.zip").exists()
    assert (cache / "mini.zip.rejected").read_bytes() == served
    ds = resolve_dataset("mini", {"source": "beir", "name": "mini", "md5": good}, None, "datasets.yaml", cache)
    assert len(ds.corpus) == 3 and len(fetched) == 2  # downloaded again, checked, unpacked


def test_md5_belongs_to_a_download():
    with pytest.raises(InputError, match=r"mini\.md5: checks a BEIR download"):
        resolve_dataset("mini", {"source": "beir", "path": "/x", "md5": "0" * 32}, None, "datasets.yaml", "cache")
    with pytest.raises(InputError, match="md5"):
        resolve_dataset("mini", {"source": "beir", "name": "mini", "md5": "not-a-digest"}, None, "datasets.yaml", "c")


def test_every_beir_download_of_the_registry_has_its_published_md5():
    """config/datasets.yaml: each BEIR zip entry carries the MD5 ir_datasets publishes for it
    (ir_datasets/etc/downloads.json, 'beir' section; webis-touche2020 is its 'webis-touche2020/v2')."""
    from lsrbench.config.strict_yaml import load_yaml
    from helpers.paths import REPO

    registry = load_yaml(REPO / "config" / "datasets.yaml")
    downloads = {n: e for n, e in registry.items() if e.get("source") == "beir" and "name" in e}
    assert len(downloads) == 13
    assert {e["name"]: e["md5"] for e in downloads.values()} == {
        "trec-covid": "ce62140cb23feb9becf6270d0d1fe6d1", "nfcorpus": "a89dba18a62ef92f7d323ec890a0d38d",
        "nq": "d4d3d2e48787a744b6f6e691ff534307", "hotpotqa": "f412724f78b0d91183a0e86805e16114",
        "fiqa": "17918ed23cd04fb15047f73e6c3bd9d9", "arguana": "8ad3e3c2a5867cdced806d6503f29b99",
        "webis-touche2020": "46f650ba5a527fc69e0a6521c5a23563", "dbpedia-entity": "c2a39eb420a3164af735795df012ac2c",
        "scidocs": "38121350fc3a4d2f48850f6aff52e4a9", "fever": "5a818580227bfb4b35bb6fa46d9b6c03",
        "climate-fever": "8b66f0a9126c521bae2bde127b4dc99d", "scifact": "5f7d1de60b170fc8027bb7898e2efca1",
        "quora": "18fb154900ba42a600f84b839c173167"}


# --------------------------------------------------------------------------- resolve_dataset


def test_mirror_takes_precedence(tmp_path):
    mirror = tmp_path / "mirror"
    make_beir(mirror / "data" / "tiny", corpus=[{"_id": "m1", "text": "mirrored cats"}],
              qrels=["query-id\tcorpus-id\tscore", "q1\tm1\t1"])
    entry = {"source": "ir_datasets", "id": "vaswani", "skip_identical_ids": False}
    ds = resolve_dataset("tiny", entry, str(mirror), "config/datasets.yaml", tmp_path / "cache")
    assert ds.name == "tiny" and ds.corpus == {"m1": "mirrored cats"}


def test_without_mirror_folder_dispatches_on_source(tmp_path):
    folder = make_beir(tmp_path / "local")
    entry = {"source": "beir", "path": str(folder)}
    ds = resolve_dataset("local", entry, str(tmp_path / "empty-mirror"), "config/datasets.yaml", tmp_path)
    assert len(ds.corpus) == 3 and ds.name == "local"
    assert resolve_dataset("local", entry, None, "config/datasets.yaml", tmp_path).qrels == ds.qrels


@pytest.mark.parametrize("entry, field", [
    ({"source": "solr", "id": "x"}, "tiny.source"),
    ({"id": "x"}, "tiny.source"),
    ({"source": "ir_datasets"}, "tiny.id"),
    ({"source": "beir"}, "tiny.path"),
    ({"source": "beir", "name": "../etc"}, "tiny.name"),
    ({"source": "beir", "path": "/x", "split": 3}, "tiny.split"),
])
def test_bad_entries(tmp_path, entry, field):
    mirror = tmp_path / "mirror"
    make_beir(mirror / "data" / "tiny")  # a mirror does not hide a broken entry
    with pytest.raises(InputError) as info:
        resolve_dataset("tiny", entry, str(mirror), "config/datasets.yaml", tmp_path)
    assert str(info.value).startswith(f"config/datasets.yaml: {field}: "), str(info.value)


# --------------------------------------------------------------------------- BM25 and pooling


def test_bm25_topk_ranks_obvious_document_first():
    corpus = [
        "the weather today is sunny and warm",
        "sparse retrieval with learned term weights",
        "learned sparse retrieval models such as splade expand sparse term weights",
        "a recipe for chocolate cake",
    ]
    idx, scores = bm25_topk(corpus, ["learned sparse retrieval splade", "chocolate", "zebra"], top_k=3)
    assert idx.shape == (3, 3) and scores.shape == (3, 3)
    assert idx[0, 0] == 2 and idx[0, 1] == 1 and idx[0, 2] == -1
    assert scores[0, 0] > scores[0, 1] > 0
    assert idx[1].tolist() == [3, -1, -1]
    assert idx[2].tolist() == [-1, -1, -1] and not scores[2].any()
    big_k, _ = bm25_topk(corpus, ["sparse"], top_k=10)  # top_k beyond the corpus size is padded
    assert big_k.shape == (1, 10) and set(big_k[0, :2]) == {1, 2}


def test_pooled_subset_depth_zero_keeps_judged_only(tmp_path):
    ds = load_beir_folder(make_beir(tmp_path / "mini"))
    pooled = pooled_subset(ds, 0)
    assert list(pooled.corpus) == ["d1", "d2", "d3"]
    ds.qrels = {"q1": {"d3": 1}}
    ds.queries = {"q1": "cats"}
    assert list(pooled_subset(ds, 0).corpus) == ["d3"]
    assert list(pooled_subset(ds, 1).corpus) == ["d1", "d3"]  # 'cats' matches d1 by BM25


def test_pooled_subset_vaswani(vaswani):
    pooled = pooled_subset(vaswani, 50)
    judged = {d for j in vaswani.qrels.values() for d in j}
    assert judged <= set(pooled.corpus)
    kept = [d for d in vaswani.corpus if d in pooled.corpus]
    assert list(pooled.corpus) == kept  # a subset, in corpus order
    assert all(pooled.corpus[d] == vaswani.corpus[d] for d in pooled.corpus)
    assert pooled.queries == vaswani.queries and pooled.qrels == vaswani.qrels
    assert 3000 <= len(pooled.corpus) <= 5000
    assert len(judged) < len(pooled.corpus) < len(judged) + 93 * 50
    assert pooled_subset(vaswani, 50).corpus == pooled.corpus  # deterministic
    assert np.all(np.diff([len(pooled_subset(vaswani, d).corpus) for d in (10, 50)]) > 0)


def _qrels(path):
    """The judgments of a qrels file as ``{query: {doc: relevance}}``, through the one reader."""
    from lsrbench.data.beir import read_qrels_tsv

    qrels = {}
    for query_id, doc_id, rel, _ in read_qrels_tsv(path):
        qrels.setdefault(query_id, {})[doc_id] = rel
    return qrels


def test_read_qrels_tsv(tmp_path):
    path = tmp_path / "test.tsv"
    path.write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\nq2\td1\t1\n\n")
    assert _qrels(path) == {"q1": {"d1": 2, "d2": 0}, "q2": {"d1": 1}}


@pytest.mark.parametrize(
    "text, line",
    [
        ("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\n", "line 3"),
        ("query-id\tcorpus-id\tscore\nq1\td1\thigh\n", "line 2"),
        ("query-id\tcorpus-id\tscore\nq1\td1\t1\t7\n", "line 2"),
        ("query-id\tcorpus-id\tscore\nq1 d1 1\n", "line 2"),
    ],
)
def test_read_qrels_tsv_malformed(tmp_path, text, line):
    path = tmp_path / "bad.tsv"
    path.write_text(text)
    with pytest.raises(InputError) as ei:
        _qrels(path)
    assert ei.value.file == str(path)
    assert ei.value.field == line


def test_read_qrels_tsv_then_evaluate(tmp_path):
    path = tmp_path / "test.tsv"
    path.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t1\n")
    from lsrbench.evaluate.metrics import evaluate_run

    agg, _ = evaluate_run({"q1": {"d1": 1.0, "d2": 2.0}}, _qrels(path), ["RR@10"])
    assert agg["RR@10"] == pytest.approx((0.5 + 0.0) / 2, abs=1e-9)


# --------------------------------------------------------------------------- rules later stages rely on


@pytest.mark.parametrize("file_name, corpus, queries, qrels, needle", [
    ("corpus.jsonl", [{"_id": "d 1", "text": "x"}], None, None, "line 1: field '_id' 'd 1' contains whitespace"),
    ("queries.jsonl", None, [{"_id": "q\t1", "text": "x"}], None, "line 1: field '_id' 'q\\t1' contains whitespace"),
    ("test.tsv", None, None, ["q1\td 1\t1"], "line 1: corpus-id 'd 1' contains whitespace"),
], ids=["document", "query", "qrels"])
def test_ids_with_whitespace_are_refused_where_read(tmp_path, file_name, corpus, queries, qrels, needle):
    """TREC run files (what the evaluate stage writes) are whitespace-separated: such an id would
    have failed the evaluate job after training."""
    expect_error(make_beir(tmp_path / "b", corpus=corpus, queries=queries, qrels=qrels), file_name, needle)


@pytest.mark.parametrize("qrels, needle", [
    # a first line whose score is a number is a judgment, not a header to skip
    (["q1\td1\t1.5", "q2\td2\t1"], "line 1: score '1.5' is not an integer"),
    (["query-id\tcorpus-id\tscore", "q1\td1\t1_0"], "line 2: score '1_0' is not an integer"),
    (["query-id\tcorpus-id\tscore", "q1\td1\t\u0661"], "line 2: score '\u0661' is not an integer"),  # an Arabic-Indic 1
    (["query-id\tcorpus-id\tscore", "q1\td1\t2147483648"], "line 2: score '2147483648' is not an integer from"),
])
def test_qrels_scores_are_plain_integers_within_a_c_int(tmp_path, qrels, needle):
    expect_error(make_beir(tmp_path / "b", qrels=qrels), "test.tsv", needle)


def test_qrels_extreme_grades_and_any_header_words(tmp_path):
    folder = make_beir(tmp_path / "b", qrels=["qid\tdocid\trelevance", "q1\td1\t-2147483648", "q2\td2\t+2147483647"])
    assert load_beir_folder(folder).qrels == {"q1": {"d1": -(2**31)}, "q2": {"d2": 2**31 - 1}}


def test_check_beir_folder_reads_small_folders_whole_and_large_ones_in_part(tmp_path):
    from lsrbench.data.beir import HEAD_LINES, check_beir_folder

    corpus = [{"_id": f"d{i}", "text": "word"} for i in range(HEAD_LINES + 10)]
    corpus[HEAD_LINES + 5] = {"_id": "bad id", "text": "late"}  # beyond the lines read of a large corpus
    folder = make_beir(tmp_path / "b", corpus=corpus, qrels=["q1\td1\t1"])
    with pytest.raises(InputError) as err:
        check_beir_folder(folder)
    assert str(err.value).startswith(f"{folder / 'corpus.jsonl'}: line {HEAD_LINES + 6}: field '_id' 'bad id'")
    assert check_beir_folder(folder, max_bytes=100) is False  # large: first lines and the qrels only
    make_beir(folder, corpus=corpus[:HEAD_LINES], qrels=["q1\td1\t1", "q9\td1\t1"])
    with pytest.raises(InputError) as err:  # queries are small: qrels checked against them
        check_beir_folder(folder, max_bytes=200)
    assert str(err.value) == f"{folder / 'qrels' / 'test.tsv'}: line 2: unknown query id 'q9' (not in queries.jsonl)"
    make_beir(folder)
    assert check_beir_folder(folder) is True


# --------------------------------------------------------------------------- valid JSON that is not text (issue 22.5)

SURROGATE_LINE = '{"_id": "d2", "title": "", "text": "second \\ud800 document"}'  # the escape as written in the file


@pytest.mark.parametrize("which, lines, file_name, says", [
    ("document text", {"corpus": [{"_id": "d1", "text": "first"}, SURROGATE_LINE, {"_id": "d3", "text": "third"}]},
     "corpus.jsonl", "line 2: field 'text' holds the lone surrogate \\ud800 at character 8: valid JSON"),
    ("document title", {"corpus": [{"_id": "d1", "text": "first"}, '{"_id": "d2", "title": "\\udfff", "text": "x"}',
                                   {"_id": "d3", "text": "third"}]},
     "corpus.jsonl", "line 2: field 'title' holds the lone surrogate \\udfff at character 1"),
    ("query text", {"queries": [{"_id": "q1", "text": "cats"}, '{"_id": "q2", "text": "dogs \\ud83d"}']},
     "queries.jsonl", "line 2: field 'text' holds the lone surrogate \\ud83d at character 6"),
    ("query id", {"queries": ['{"_id": "q\\ud800", "text": "cats"}', {"_id": "q2", "text": "dogs"}]},
     "queries.jsonl", "line 1: field '_id' holds the lone surrogate \\ud800 at character 2"),
], ids=lambda v: v if isinstance(v, str) and " " in v else None)
def test_a_lone_surrogate_is_an_error_naming_line_and_field(tmp_path, which, lines, file_name, says):
    """Before: read as a string, then a traceback in the job whose tokenizer met it."""
    folder = make_beir(tmp_path / "x", **lines)
    error = expect_error(folder, file_name, says)
    assert str(error).startswith(str(folder / file_name) + ": line ")
    assert "(it has no UTF-8 form; a surrogate must come in a high-low pair)" in str(error)


def test_a_surrogate_pair_is_text(tmp_path):
    """A high-low pair escape is an ordinary character (here U+1F600) and loads."""
    folder = make_beir(tmp_path / "x", corpus=[{"_id": "d1", "text": "a"}, '{"_id": "d2", "text": "smile \\ud83d\\ude00"}',
                                               {"_id": "d3", "text": "c"}])
    assert load_beir_folder(folder, unknown_docs="drop").corpus["d2"] == "smile \U0001F600"


@pytest.mark.parametrize("text", ["", "   ", "\t\n"], ids=["empty", "spaces", "whitespace"])
def test_an_empty_query_is_refused_by_default(tmp_path, text):
    """Before: kept and scored 0 on every document, silently, in every mean."""
    folder = make_beir(tmp_path / "x", queries=[{"_id": "q1", "text": "cats"}, {"_id": "q2", "text": text}])
    error = expect_error(folder, "queries.jsonl", f"line 2: query 'q2' has no text ({text!r})",
                         "set empty_queries: drop in its datasets file entry")
    assert str(error).startswith(f"{folder / 'queries.jsonl'}: line 2: ")
    from lsrbench.data.beir import check_beir_folder

    with pytest.raises(InputError, match="query 'q2' has no text"):  # the check before the DAG, too
        check_beir_folder(folder, max_bytes=0)


def test_empty_queries_drop_drops_them_with_their_judgments_and_counts_them(tmp_path):
    from lsrbench.data.beir import check_beir_folder

    folder = make_beir(tmp_path / "x", queries=[{"_id": "q1", "text": "cats"}, {"_id": "q2", "text": ""}])
    ds = load_beir_folder(folder, empty_queries="drop")
    assert ds.queries == {"q1": "cats"} and ds.qrels == {"q1": {"d1": 2, "d3": 0}}
    assert ds.empty_queries == 1 and ds.dropped_queries == 0
    assert check_beir_folder(folder, empty_queries="drop") and not check_beir_folder(folder, empty_queries="drop",
                                                                                     max_bytes=0)
    entry = {"source": "beir", "path": str(folder), "empty_queries": "drop"}  # the datasets.yaml setting
    assert resolve_dataset("x", entry, None, "datasets.yaml", tmp_path).empty_queries == 1
    with pytest.raises(InputError, match="no queries with text"):
        load_beir_folder(make_beir(tmp_path / "y", queries=[{"_id": "q1", "text": " "}]), empty_queries="drop")


def _ir_datasets_with(tmp_path, queries):
    """An ir_datasets id whose queries handler yields ``queries`` (id, text) as ir_datasets does."""
    import ir_datasets
    from ir_datasets.datasets.base import Dataset as IrDataset
    from ir_datasets.formats import BaseQueries, GenericQuery, TrecQrels, TsvDocs
    from ir_datasets.util import LocalDownload

    class Queries(BaseQueries):
        def queries_iter(self):
            return (GenericQuery(q, t) for q, t in queries)

        def queries_cls(self):
            return GenericQuery

    (tmp_path / "docs.tsv").write_text("d1\tcats purr\nd2\tdogs bark\n")
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 d1 1\n" for q, _ in queries))
    name = f"lsrbench-test-{uuid.uuid4().hex[:8]}"
    ir_datasets.registry.register(name, IrDataset(TsvDocs(LocalDownload(tmp_path / "docs.tsv")), Queries(),
                                                  TrecQrels(LocalDownload(tmp_path / "qrels.txt"), {1: "relevant"})))
    return name


def test_ir_datasets_texts_get_the_same_lines(tmp_path):
    name = _ir_datasets_with(tmp_path, [("1", "cats"), ("2", "dogs \ud800"), ("3", " ")])
    with pytest.raises(InputError) as info:
        load_ir_datasets(name)
    assert str(info.value).startswith(f"ir_datasets:{name}: query #2: text holds the lone surrogate \\ud800 at character 6")
    name = _ir_datasets_with(tmp_path, [("1", "cats"), ("3", " ")])
    with pytest.raises(InputError) as info:
        load_ir_datasets(name)
    assert str(info.value).startswith(f"ir_datasets:{name}: query #2: query '3' has no text (' ')")
    ds = load_ir_datasets(name, empty_queries="drop")
    assert ds.queries == {"1": "cats"} and ds.qrels == {"1": {"d1": 1}} and ds.empty_queries == 1


def test_hf_texts_get_the_same_lines(tmp_path):
    """JSON-lines data files (Arrow itself cannot hold a lone surrogate, parquet files cannot either)."""
    from lsrbench.data.hf import load_hf_dataset

    from helpers.miniatures import write_hf_repo

    repo = write_hf_repo(tmp_path / "nano", fmt="jsonl", configs={
        "corpus": {"_id": ["d1", "d2"], "text": ["cats purr", "dogs \ud800 bark"]},
        "queries": {"_id": ["q1"], "text": ["cats"]},
        "qrels": {"query-id": ["q1"], "corpus-id": ["d1"]},
    })
    with pytest.raises(InputError) as info:  # the datasets library refuses it itself: its parser's line is kept
        load_hf_dataset(str(repo), revision=None, cache_dir=tmp_path / "cache")
    assert str(info.value) == (f"hf:{repo}: corpus[train]: cannot load: An error occurred while generating the dataset "
                               "(JSON parse error: The surrogate pair in string is invalid. in row 1)")
