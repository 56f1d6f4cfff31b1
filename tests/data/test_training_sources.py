"""Training-triplet sources: hf (sentence-transformers' MS MARCO triplet layout), ir_datasets docpairs
(msmarco-passage/train/triples-small layout), the config schema, dispatch, and the mirror."""

from __future__ import annotations

import copy
from collections import Counter

import numpy as np
import pytest
import yaml

from helpers.paths import REPO
from lsrbench.config.layers import locate_config_paths
from lsrbench.config.schema import validate
from lsrbench.validation.config import check_config
from lsrbench.dag.fingerprint import FileDigests
from lsrbench.dag.layout import Layout
from lsrbench.dag.stage import call_settings
from lsrbench.stages import all_stages
from lsrbench.errors import InputError
from lsrbench.data.training_sources import (build_triplets, check_training_data, mirrored_triplets, training_name,
                                            write_mirror_triplets)
from lsrbench.data.triplets import _reservoir, hf_triplets, ir_datasets_triplets, read_triplets, sample_indices
from helpers.miniatures import register_ir_datasets, triplet_rows, write_hf_repo

REV = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def triplet_repo(tmp_path_factory):
    folder = tmp_path_factory.mktemp("msmarco-bm25")
    renamed = {"anchor": triplet_rows()["query"], "pos": triplet_rows()["positive"], "neg": triplet_rows()["negative"]}
    return write_hf_repo(folder, {"triplet": triplet_rows(), "renamed": renamed,
                                  "holes": {**triplet_rows(3), "negative": ["n0", "", "n2"]}})


# --------------------------------------------------------------------------- hf


def test_hf_triplets_sample_and_columns(triplet_repo, tmp_path):
    kw = dict(subset="triplet", split="train", revision=None, cache_dir=tmp_path / "c")
    got = hf_triplets(str(triplet_repo), n=5, seed=3, **kw)
    rows = sample_indices(20, 5, 3)
    assert len(set(rows.tolist())) == 5
    assert got == [{"query": f"query {i}", "positive": f"positive passage {i}", "negative": f"negative passage {i}"}
                   for i in rows]
    assert hf_triplets(str(triplet_repo), n=5, seed=3, **kw) == got  # deterministic
    assert hf_triplets(str(triplet_repo), n=5, seed=4, **kw) != got
    assert sorted(t["query"] for t in hf_triplets(str(triplet_repo), n=20, seed=0, **kw)) == \
        sorted(triplet_rows()["query"])  # n = all rows: every row once
    renamed = hf_triplets(str(triplet_repo), n=5, seed=3, columns={"query": "anchor", "positive": "pos", "negative": "neg"},
                          **{**kw, "subset": "renamed"})
    assert renamed == got


def test_hf_triplets_errors(triplet_repo, tmp_path):
    kw = dict(split="train", revision=None, cache_dir=tmp_path / "c", seed=0)
    with pytest.raises(InputError) as info:
        hf_triplets(str(triplet_repo), subset="renamed", n=2, **kw)
    text = str(info.value)
    assert "\n" not in text and f"hf:{triplet_repo}: renamed[train]: missing column 'query' (for query)" in text
    with pytest.raises(InputError, match=r"has 20 rows, fewer than the 21 triplets"):
        hf_triplets(str(triplet_repo), subset="triplet", n=21, **kw)
    with pytest.raises(InputError, match=r"holes\[train\] row 2: column 'negative' \(negative\) must be a non-empty"):
        hf_triplets(str(triplet_repo), subset="holes", n=3, **kw)
    with pytest.raises(InputError, match=r"nope\[train\]: cannot load"):
        hf_triplets(str(triplet_repo), subset="nope", n=1, **kw)


# --------------------------------------------------------------------------- ir_datasets docpairs


@pytest.fixture(scope="module")
def triples_small(tmp_path_factory):
    pytest.importorskip("ir_datasets")
    docs = "".join(f"p{i}\tpassage number {i}\n" for i in range(12))
    queries = "".join(f"{100 + i}\tquestion {i}\n" for i in range(6))
    pairs = "".join(f"{100 + i % 6}\tp{i}\tp{(i + 5) % 12}\n" for i in range(10))
    return register_ir_datasets(tmp_path_factory.mktemp("triples"), docs, queries, docpairs=pairs) + "/train"


def test_ir_datasets_docpairs(triples_small):
    got = ir_datasets_triplets(triples_small, n=4, seed=1)
    assert len(got) == 4
    seen = set()
    for t in got:  # every triplet is one docpair resolved to text: query, doc_id_a, doc_id_b
        i = int(t["positive"].rsplit(" ", 1)[1])
        assert t == {"query": f"question {i % 6}", "positive": f"passage number {i}",
                     "negative": f"passage number {(i + 5) % 12}"}
        seen.add(i)
    assert len(seen) == 4 and max(seen) < 10
    assert ir_datasets_triplets(triples_small, n=4, seed=1) == got
    assert len({tuple(sorted(t["positive"] for t in ir_datasets_triplets(triples_small, n=4, seed=s)))
                for s in range(10)}) > 1
    assert sorted(t["positive"] for t in ir_datasets_triplets(triples_small, n=10, seed=0)) == \
        sorted(f"passage number {i}" for i in range(10))
    with pytest.raises(InputError, match="has 10 pairs, fewer than the 11 triplets"):
        ir_datasets_triplets(triples_small, n=11, seed=0)
    with pytest.raises(InputError, match="dataset provides no docpairs"):
        ir_datasets_triplets(triples_small.rsplit("/", 1)[0], n=1, seed=0)


def test_ir_datasets_docpair_naming_a_missing_passage(tmp_path):
    pytest.importorskip("ir_datasets")
    base = register_ir_datasets(tmp_path, "p0\tzero\np1\tone\n", "1\tq\n", docpairs="1\tp0\tp1\n1\tp0\tp404\n")
    with pytest.raises(InputError) as info:
        ir_datasets_triplets(f"{base}/train", n=2, seed=0)
    assert str(info.value) == f"ir_datasets:{base}/train: docpair #2: unknown document id 'p404'"


def test_reservoir_is_uniform():
    counts = Counter()
    for seed in range(3000):
        sample = _reservoir(range(10), 3, np.random.default_rng(seed))
        assert len({pos for pos, _ in sample}) == 3 and all(pos == item for pos, item in sample)
        counts.update(item for _, item in sample)
    assert set(counts) == set(range(10))
    assert all(abs(c - 900) < 120 for c in counts.values()), counts  # 3000 * 3/10 each


# --------------------------------------------------------------------------- config, dispatch, mirror


@pytest.mark.parametrize("td, field, needle", [
    ({"source": "hf", "repo": "sentence-transformers/msmarco-bm25"}, "training_data.revision", "pin the dataset's commit"),
    ({"source": "hf", "repo": "sentence-transformers/msmarco-bm25", "revision": None}, "training_data.revision", "local folder"),
    ({"source": "hf", "repo": "a/b", "revision": "main"}, "training_data.revision", "40 hex digits"),
    ({"source": "hf", "repo": "a/b", "revision": REV, "columns": {"anchor": "q"}}, "training_data.columns", "must map"),
    ({"source": "hf", "repo": "a/b", "revision": REV, "id": "x"}, "training_data.id", "not used by source 'hf'"),
    ({"source": "ir_datasets"}, "training_data.id", "missing"),
    ({"source": "pseudo_queries"}, "training_data.dataset", "missing"),
    ({"source": "msmarco"}, "training_data.source", "unknown source 'msmarco'"),
    ({"source": "ir_datasets", "id": "x", "name": "../up"}, "training_data.name", "not a valid folder name"),
])
def test_check_training_data(td, field, needle):
    with pytest.raises(InputError) as info:
        check_training_data(td, "paper.yaml")
    assert str(info.value).startswith(f"paper.yaml: {field}: ") and needle in str(info.value), str(info.value)


def _config(td: dict) -> dict:
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["training_data"] = td
    return config


def test_schema_and_dag_wiring():
    hf = {"source": "hf", "repo": "sentence-transformers/msmarco-bm25", "subset": "triplet", "split": "train",
          "revision": REV, "columns": {"query": "query"}, "n_triplets": 1000, "seed": 7}
    config = validate(copy.deepcopy(_config(hf)), "config.schema.yaml", "c.yaml")
    assert config["training_data"] == hf  # no defaults added: the training params stay as written
    with pytest.raises(InputError, match=r"c.yaml: training_data: 'revision' is a required property"):
        validate(_config({"source": "hf", "repo": "a/b"}), "config.schema.yaml", "c.yaml")
    with pytest.raises(InputError, match=r"c.yaml: training_data.revision: 'main' does not match"):
        validate(_config({"source": "hf", "repo": "a/b", "revision": "main"}), "config.schema.yaml", "c.yaml")
    with pytest.raises(InputError, match=r"training_data.source: 'msmarco' is not one of"):
        validate(_config({"source": "msmarco"}), "config.schema.yaml", "c.yaml")

    config = check_config(locate_config_paths(config, REPO), "c.yaml")
    paths = Layout(config, digests=FileDigests(None), stages=all_stages(), config_file="c.yaml")
    triplets, stage = paths.get("triplets"), paths.stages["triplets"]
    assert stage.inputs(paths, triplets) == {}
    assert call_settings(stage.job, triplets) == {"n": 1000, "seed": 7}
    assert stage.runtime(paths, triplets)["entry"] == hf  # as written: the mirror's copy is checked against it
    assert triplets.identity == {"training_data": hf, "n": 1000, "seed": 7}
    pseudo = check_config(locate_config_paths(_config({"source": "pseudo_queries", "dataset": "vaswani", "seed": 13}),
                                              REPO), "c.yaml")
    paths = Layout(pseudo, digests=FileDigests(None), stages=all_stages())
    triplets = paths.get("triplets")
    assert stage.inputs(paths, triplets) == {"full_dir": paths.get("data", dataset="vaswani").path("full")}
    assert triplets.identity["corpus"] == paths.get("data", dataset="vaswani").id

    assert training_name(hf) == "sentence-transformers--msmarco-bm25--triplet"
    assert training_name({"source": "ir_datasets", "id": "msmarco-passage/train/triples-small"}) == \
        "msmarco-passage--train--triples-small"
    assert training_name({**hf, "name": "msmarco-train"}) == "msmarco-train"


def test_stage_reads_the_mirror_and_refuses_a_stale_one(tmp_path, monkeypatch):
    import lsrbench.data.triplets as triplets

    td = {"source": "hf", "repo": "sentence-transformers/msmarco-bm25", "subset": "triplet", "revision": REV}
    drawn = [{"query": f"q{i}", "positive": f"p{i}", "negative": f"n{i}"} for i in range(4)]
    mirror = tmp_path / "mirror"
    folder = write_mirror_triplets(td, 4, 0, mirror, drawn)
    assert folder == mirror / "data" / "sentence-transformers--msmarco-bm25--triplet"
    monkeypatch.setattr(triplets, "hf_triplets", lambda *a, **k: pytest.fail("the hub was asked"))
    out = build_triplets(td, 4, 0, tmp_path / "t.jsonl", mirror=mirror)
    assert read_triplets(out) == drawn
    with pytest.raises(InputError) as info:  # drawn with another seed: not silently used
        mirrored_triplets(td, 4, 1, mirror)
    assert str(info.value).startswith(f"{folder / 'source.json'}: seed: ") and "re-run lsrbench prefetch" in str(info.value)
    with pytest.raises(InputError, match="revision"):
        mirrored_triplets({**td, "revision": REV[::-1]}, 4, 0, mirror)
    assert mirrored_triplets(td, 4, 0, tmp_path / "empty") is None


def test_stage_dispatch_without_mirror(triplet_repo, triples_small, tmp_path):
    from lsrbench.stages import triplets as stages

    td = {"source": "hf", "repo": str(triplet_repo), "subset": "triplet", "revision": None}
    stages.triplets(td, 6, 2, str(tmp_path / "a.jsonl"), cache_dir=str(tmp_path / "cache"))
    assert read_triplets(tmp_path / "a.jsonl") == hf_triplets(str(triplet_repo), subset="triplet", revision=None,
                                                             n=6, seed=2, cache_dir=tmp_path / "cache" / "hf-datasets")
    stages.triplets({"source": "ir_datasets", "id": triples_small}, 3, 0, str(tmp_path / "b.jsonl"))
    assert read_triplets(tmp_path / "b.jsonl") == ir_datasets_triplets(triples_small, n=3, seed=0)
    with pytest.raises(InputError, match="c.yaml: training_data.revision"):
        stages.triplets({"source": "hf", "repo": "x/y"}, 1, 0, str(tmp_path / "c.jsonl"), config_file="c.yaml")
