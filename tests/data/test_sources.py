"""Evaluation dataset sources: the hf (NanoBEIR layout) loader, the datasets.yaml registry (MS MARCO
dev, TREC DL 2019, BEIR-13, NanoBEIR-13), ir_datasets with graded qrels, and corpora stored once."""

from __future__ import annotations

import os

import pytest

from helpers.paths import REPO
from lsrbench.config.entries import load_datasets_file
from lsrbench.data.beir import load_beir_folder
from lsrbench.data.hf import load_hf_dataset
from lsrbench.data.ir_datasets_source import load_ir_datasets
from lsrbench.data.sources import check_entry as _check_entry, corpus_key, resolve_dataset
from lsrbench.data.store import write_beir_folder
from lsrbench.errors import InputError
from helpers.miniatures import register_ir_datasets, write_hf_repo, write_nano_repo

DATASETS_FILE = REPO / "config" / "datasets.yaml"
REV = "0123456789abcdef0123456789abcdef01234567"


def one_line_error(excinfo, *needles: str) -> str:
    text = str(excinfo.value)
    assert "\n" not in text, text
    for needle in needles:
        assert needle in text, text
    return text


# --------------------------------------------------------------------------- hf (NanoBEIR layout)


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_hf_nanobeir_layout(tmp_path, fmt):
    repo = write_nano_repo(tmp_path / "NanoMini", fmt=fmt)
    ds = load_hf_dataset(str(repo), revision=None, name="NanoMini", unknown_docs="keep",
                         cache_dir=tmp_path / "cache", empty_queries="drop")
    # the text column only, as sentence-transformers' NanoBEIR evaluators feed the model: d1's title
    # is not joined, d3 (a title, no text) is dropped
    assert ds.corpus == {"d1": "cats purr softly", "d2": "dogs bark loudly", "d4": "birds sing at dawn",
                         "d5": "fish swim in water"}
    # q3 (empty text; empty_queries: drop, NanoBEIREvaluator's way) and q4 (unjudged) dropped; no
    # score column: relevance 1; q2's judgment of the dropped d3 kept (unknown_docs: keep), as
    # sentence-transformers keeps it
    assert ds.queries == {"q1": "purring cats", "q2": "barking dogs"}
    assert ds.qrels == {"q1": {"d1": 1}, "q2": {"d2": 1, "d3": 1}}
    assert ds.dropped_queries == 1 and ds.empty_queries == 1 and ds.unknown_doc_qrels == 1
    with pytest.raises(InputError) as info:  # default unknown_docs: error names the dropped document
        load_hf_dataset(str(repo), revision=None, cache_dir=tmp_path / "cache", empty_queries="drop")
    one_line_error(info, "hf:", "qrels[train] row 3", "unknown document id 'd3'", "empty text dropped")
    with pytest.raises(InputError) as info:  # default empty_queries: error names the query's row
        load_hf_dataset(str(repo), revision=None, cache_dir=tmp_path / "cache", unknown_docs="keep")
    one_line_error(info, f"hf:{repo}: queries[train] row 3: query 'q3' has no text ('')", "empty_queries: drop")


def test_hf_documents_are_what_sparse_nanobeir_evaluator_feeds_the_model(tmp_path):
    """The miniature in sentence-transformers/NanoBEIR-en's layout (one split per dataset), read by
    SparseNanoBEIREvaluator itself: the same documents (text only), queries and judgments."""
    from sentence_transformers.sparse_encoder.evaluation import SparseNanoBEIREvaluator

    from helpers.miniatures import NANO_CORPUS, NANO_QRELS, NANO_QUERIES

    repo = write_hf_repo(tmp_path / "NanoBEIR-en", {"corpus": NANO_CORPUS, "queries": NANO_QUERIES,
                                                    "qrels": NANO_QRELS}, split="NanoSciFact")
    evaluator = SparseNanoBEIREvaluator(dataset_names=["scifact"], dataset_id=str(repo)).evaluators[0]
    ds = load_hf_dataset(str(repo), revision=None, hf_split="NanoSciFact", unknown_docs="keep",
                         cache_dir=tmp_path / "cache", empty_queries="drop")  # as config/datasets.yaml's Nano entries
    assert ds.corpus == dict(zip(evaluator.corpus_ids, evaluator.corpus))
    assert ds.queries == dict(zip(evaluator.queries_ids, evaluator.queries))
    assert {q: set(docs) for q, docs in ds.qrels.items()} == {q: evaluator.relevant_docs[q] for q in ds.queries}


def test_hf_scores_lists_and_renamed_subsets(tmp_path):
    repo = write_hf_repo(tmp_path / "graded", {
        "docs": {"_id": ["a", "b", "c"], "text": ["one", "two", "three"]},
        "topics": {"_id": ["1"], "text": ["numbers"]},
        "judgments": {"query-id": ["1", "1"], "corpus-id": [["a", "b"], ["c"]], "score": [2, 0]},
    })
    entry = {"source": "hf", "repo": str(repo), "revision": None,
             "subsets": {"corpus": "docs", "queries": "topics", "qrels": "judgments"}}
    ds = resolve_dataset("graded", entry, None, "datasets.yaml", tmp_path / "cache")
    assert ds.name == "graded" and ds.qrels == {"1": {"a": 2, "b": 2, "c": 0}}
    assert any((tmp_path / "cache" / "hf-datasets").iterdir())  # the project's cache, not ~/.cache


def test_hf_bad_data_is_one_line(tmp_path):
    repo = write_hf_repo(tmp_path / "bad", {
        "corpus": {"_id": ["a"], "body": ["no text column"]},
        "queries": {"_id": ["1"], "text": ["q"]},
        "qrels": {"query-id": ["1"], "corpus-id": ["a"]},
    })
    with pytest.raises(InputError) as info:
        load_hf_dataset(str(repo), revision=None, cache_dir=tmp_path / "c")
    one_line_error(info, f"hf:{repo}", "corpus[train]", "missing column 'text'", "columns: _id, body")
    with pytest.raises(InputError) as info:
        load_hf_dataset(str(repo), revision=None, hf_split="test", cache_dir=tmp_path / "c")
    one_line_error(info, "corpus[test]", "cannot load")


@pytest.mark.parametrize("entry, field, needle", [
    ({"source": "hf", "repo": "zeta-alpha-ai/NanoNQ"}, "x.revision", "pin the dataset's commit"),
    ({"source": "hf", "repo": "zeta-alpha-ai/NanoNQ", "revision": None}, "x.revision", "only allowed for a local folder"),
    ({"source": "hf", "repo": "zeta-alpha-ai/NanoNQ", "revision": "main"}, "x.revision", "40 hex digits"),
    ({"source": "hf", "revision": REV}, "x.repo", "missing"),
    ({"source": "hf", "repo": "a/b", "revision": REV, "subsets": {"docs": "x"}}, "x.subsets", "must map"),
    ({"source": "hf", "repo": "a/b", "revision": REV, "hf_split": "a b"}, "x.hf_split", "split name"),
    ({"source": "mteb", "id": "x"}, "x.source", "unknown source 'mteb'; expected one of: beir, ir_datasets, hf"),
])
def test_bad_hf_entries(tmp_path, entry, field, needle):
    with pytest.raises(InputError) as info:
        resolve_dataset("x", entry, None, "config/datasets.yaml", tmp_path)
    assert one_line_error(info, needle).startswith(f"config/datasets.yaml: {field}: ")


def test_hf_entry_reads_the_mirror_without_the_hub(tmp_path, monkeypatch):
    """A pinned hub entry loads from <mirror>/data/<name>/ without touching the hub."""
    import lsrbench.data.hf as data

    monkeypatch.setattr(data, "load_hf_dataset", lambda *a, **k: pytest.fail("the hub was asked"))
    src = load_hf_dataset(str(write_nano_repo(tmp_path / "n")), revision=None, unknown_docs="keep",
                          cache_dir=tmp_path / "c", empty_queries="drop")
    write_beir_folder(src, tmp_path / "mirror" / "data" / "NanoNQ")
    entry = {"source": "hf", "repo": "zeta-alpha-ai/NanoNQ", "revision": REV, "unknown_docs": "keep"}
    ds = resolve_dataset("NanoNQ", entry, tmp_path / "mirror", "d.yaml", tmp_path, unknown_docs="keep")
    assert (ds.corpus, ds.queries, ds.qrels) == (src.corpus, src.queries, src.qrels)


# --------------------------------------------------------------------------- the registry


def test_registry_entries():
    from sentence_transformers.sentence_transformer.evaluation.nano_beir import DATASET_NAME_TO_HUMAN_READABLE

    from lsrbench.evaluate.metrics import parse_measures
    from lsrbench.evaluate.flops import NANOBEIR_DATASETS

    reg = load_datasets_file(DATASETS_FILE)
    for name, entry in reg.items():
        _check_entry(name, entry, DATASETS_FILE)  # every entry passes the loader's own checks
        if "measures" in entry:
            parse_measures(entry["measures"])

    assert reg["msmarco-dev"]["id"] == "msmarco-passage/dev/small"
    assert reg["msmarco-dev"]["measures"] == ["RR@10", "R@1000"]
    assert reg["trec-dl-2019"]["id"] == "msmarco-passage/trec-dl-2019/judged"
    assert reg["trec-dl-2019"]["measures"] == ["nDCG@10", "R(rel=2)@1000"]
    # one corpus for both (ir_datasets' registry only, no download)
    assert corpus_key(reg["msmarco-dev"]) == corpus_key(reg["trec-dl-2019"]) == ("ir_datasets", "msmarco-passage")

    beir13 = {"trec-covid", "nfcorpus", "nq", "hotpotqa", "fiqa", "arguana", "webis-touche2020", "dbpedia-entity",
              "scidocs", "fever", "climate-fever", "scifact", "quora"}
    for name in beir13:
        assert reg[name] == {**reg[name], "source": "beir", "name": name, "split": "test"}
        assert reg[name]["skip_identical_ids"] is True  # BEIR's and SPLADE's evaluators: every BEIR dataset
        assert reg[name]["empty_results"] == "fill"  # exhaustive scoring (sentence-transformers, mteb, BEIR)
    assert reg["arguana"]["unknown_docs"] == "keep"
    # the official MS MARCO MRR script and trec_eval -c: every judged query counts, 0 without results
    assert reg["msmarco-dev"]["empty_results"] == reg["trec-dl-2019"]["empty_results"] == "zero"
    assert reg["vaswani"]["empty_results"] == "zero"  # the schema's default: ids of existing runs unchanged

    nano = {n for n, e in reg.items() if e["source"] == "hf"}
    assert nano == set(NANOBEIR_DATASETS) == {f"Nano{v}" for v in DATASET_NAME_TO_HUMAN_READABLE.values()}
    for name in nano:
        e = reg[name]
        assert e["repo"] == f"zeta-alpha-ai/{name}" and len(e["revision"]) == 40 and e["hf_split"] == "train"
        assert e["skip_identical_ids"] is False  # sentence-transformers skips none
        assert e["empty_results"] == "fill"  # SparseNanoBEIREvaluator ranks every document


def test_ir_datasets_beir_ids_in_comments_exist():
    """The ir_datasets alternative named beside each BEIR-13 entry is a registered id with qrels."""
    import re

    import ir_datasets

    ids = re.findall(r"# ir_datasets id: (\S+)", DATASETS_FILE.read_text())
    assert len(ids) == 13
    for dataset_id in ids:
        assert ir_datasets.load(dataset_id).has_qrels(), dataset_id


# --------------------------------------------------------------------------- ir_datasets, graded qrels


@pytest.fixture(scope="module")
def msmarco_like(tmp_path_factory):
    """docs shared by a binary 'dev' and a graded 'dl19' qrels set, as in msmarco-passage."""
    pytest.importorskip("ir_datasets")
    return register_ir_datasets(
        tmp_path_factory.mktemp("msmarco_like"),
        docs="0\tcats purr\n1\tdogs bark\n2\tbirds sing\n3\tfish swim\n",
        queries="10\tcats\n11\tdogs\n12\tno judgment\n",
        qrels={"dev": "10 0 0 1\n11 0 1 1\n", "dl19": "10 0 0 3\n10 0 1 1\n10 0 2 2\n10 0 3 0\n"},
    )


def test_graded_qrels_and_track_recall(msmarco_like, tmp_path):
    from lsrbench.evaluate.metrics import evaluate_run

    reg = load_datasets_file(DATASETS_FILE)
    ds = resolve_dataset("dl19", {**reg["trec-dl-2019"], "id": f"{msmarco_like}/dl19"}, None, "d.yaml", tmp_path)
    assert ds.qrels == {"10": {"0": 3, "1": 1, "2": 2, "3": 0}} and ds.dropped_queries == 2
    run = {"10": {"0": 2.0, "1": 1.0}}  # finds the grade-3 and the grade-1 passage, misses grade 2
    scores, _ = evaluate_run(run, ds.qrels, reg["trec-dl-2019"]["measures"] + ["R@1000"])
    assert scores["R(rel=2)@1000"] == pytest.approx(1 / 2)  # relevant = grade >= 2: {0, 2}
    assert scores["R@1000"] == pytest.approx(2 / 3)  # relevant = grade >= 1: {0, 1, 2}
    # nDCG on the grades, trec_eval's (the track's) linear gains: ideal order 3, 2, 1
    log2_3 = 1.5849625007211562
    assert scores["nDCG@10"] == pytest.approx((3 + 1 / log2_3) / (3 + 2 / log2_3 + 1 / 2))


def test_shared_corpus_read_and_stored_once(msmarco_like, tmp_path):
    dev = load_ir_datasets(f"{msmarco_like}/dev")
    assert corpus_key({"source": "ir_datasets", "id": f"{msmarco_like}/dev"}) == \
        corpus_key({"source": "ir_datasets", "id": f"{msmarco_like}/dl19"}) == ("ir_datasets", msmarco_like)
    dl19 = load_ir_datasets(f"{msmarco_like}/dl19", corpus=dev.corpus)  # reused, not re-read
    assert dl19.corpus is dev.corpus
    store = tmp_path / ".corpora"
    a = write_beir_folder(dev, tmp_path / "dev", corpus_store=store)
    b = write_beir_folder(dl19, tmp_path / "dl19", corpus_store=store)
    assert os.path.samefile(a / "corpus.jsonl", b / "corpus.jsonl")  # one file, two names
    assert len(list(store.iterdir())) == 1
    plain = write_beir_folder(dev, tmp_path / "plain")
    assert (plain / "corpus.jsonl").read_bytes() == (a / "corpus.jsonl").read_bytes()
    assert load_beir_folder(b).qrels == dl19.qrels
    # a stored copy nothing links to any more is removed at the next write
    import shutil

    shutil.rmtree(a)
    shutil.rmtree(b)
    other = dev.__class__(corpus={"x": "another corpus"}, queries={"q": "q"}, qrels={"q": {"x": 1}}, name="o")
    write_beir_folder(other, tmp_path / "other", corpus_store=store)
    assert len(list(store.iterdir())) == 1 and os.path.samefile(next(store.iterdir()), tmp_path / "other" / "corpus.jsonl")


def test_dataset_stage_links_one_stored_corpus(msmarco_like, tmp_path, monkeypatch):
    from lsrbench.stages.dataset import dataset as dataset_job

    monkeypatch.chdir(tmp_path)
    store = "results/data/.corpora"
    for name in ("dev", "dl19"):
        entry = {"source": "ir_datasets", "id": f"{msmarco_like}/{name}", "split": "test"}
        dataset_job(name, "test", entry, None, "d.yaml", "cache", f"results/data/{name}/full",
                       f"results/data/{name}/info.json", corpus_store=store)
    files = [tmp_path / f"results/data/{n}/full/corpus.jsonl" for n in ("dev", "dl19")]
    assert all(os.path.samefile(files[0], f) for f in files[1:])
    assert len(list((tmp_path / store).iterdir())) == 1


def test_a_source_is_one_class_and_one_registry_line():
    """The registries are the sources (the schemas list their names for the reader, and must agree)."""
    from lsrbench.config.schema import load_schema
    from lsrbench.data.sources import SOURCES
    from lsrbench.data.training_sources import TRAINING_SOURCES

    registry = load_schema("datasets.schema.yaml")["additionalProperties"]["properties"]
    assert registry["source"]["enum"] == list(SOURCES)
    config = load_schema("config.schema.yaml")["properties"]["training_data"]["properties"]
    assert config["source"]["enum"] == list(TRAINING_SOURCES)
    for source in SOURCES.values():  # every key a source reads is a key of the registry's schema
        assert set(source.keys) <= set(registry), source.name


def test_a_dataset_entry_has_the_schemas_defaults_and_nothing_else_sets_them():
    from lsrbench.config.entries import DatasetEntry

    entry = DatasetEntry.from_dict("x", {"source": "beir", "path": "/data/x"})
    assert (entry.split, entry.unknown_docs, entry.skip_identical_ids, entry.hf_split) == ("test", "error", False, "train")
    assert entry.as_dict() == {"source": "beir", "split": "test", "unknown_docs": "error", "skip_identical_ids": False,
                               "hf_split": "train", "empty_results": "zero", "empty_queries": "error",
                               "path": "/data/x"}
    named = DatasetEntry.from_dict("sf", {"source": "beir", "name": "scifact"})
    assert named.download == "scifact" and named.has("name") and not named.has("path")
