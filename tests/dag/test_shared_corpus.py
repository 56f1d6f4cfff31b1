"""Datasets evaluated on one corpus (MS MARCO Dev and TREC DL 2019 with full collections) share one
docs.npz per run: the DAG maps them to the first such dataset, the second only gets its queries
encoded, and evaluate refuses a docs.npz whose documents are not its corpus's."""

from __future__ import annotations

import pytest

from helpers.paths import REPO, SHARED
from helpers.snakemake import layout
from lsrbench.dag.evaluated import docs_dataset, docs_npz
from lsrbench.dag.evaluated import corpus_sharing_datasets
from lsrbench.stages.evaluate import evaluate as evaluate_job
from lsrbench.stages.index import index as index_job
from lsrbench.config.strict_yaml import load_yaml
from lsrbench.errors import InputError


def _config(pool_depth):
    registry = load_yaml("config/datasets.yaml")
    names = ["msmarco-dev", "trec-dl-2019", "vaswani", "scifact"]
    return {"evaluation": {"datasets": names, "pool_depth": pool_depth},
            "_datasets": {n: registry[n] for n in names}}


def test_full_collections_share_documents_pooled_subsets_do_not():
    full = _config(None)
    assert [docs_dataset(full, d) for d in full["evaluation"]["datasets"]] == [
        "msmarco-dev", "msmarco-dev", "vaswani", "scifact"]
    assert corpus_sharing_datasets(full) == ["trec-dl-2019"]
    paper = layout(REPO / "config/paper.yaml")
    dev, dl19 = (paper.get("index", run="bert", k="4", dataset=d) for d in ("msmarco-dev", "trec-dl-2019"))
    assert docs_npz(paper, {"run": "bert", "k": "4"}, "trec-dl-2019") == dev.path("docs.npz")
    assert dl19.folder != dev.folder
    pooled = _config(50)  # each pooled subset has its own documents
    assert [docs_dataset(pooled, d) for d in pooled["evaluation"]["datasets"]] == pooled["evaluation"]["datasets"]
    assert corpus_sharing_datasets(pooled) == []


def test_queries_only_and_foreign_documents_refused(tmp_path, vaswani_slice):
    import numpy as np
    import scipy.sparse as sp

    from lsrbench.data.beir import load_beir_folder
    from lsrbench.index.sparse import load_sparse, save_sparse

    model = SHARED / "models" / "splade-tiny-msmarco"
    if not model.is_dir():
        pytest.skip("../shared not present")
    from lsrbench.model.encoder import build_sparse_encoder

    encoder = tmp_path / "encoder"
    build_sparse_encoder(str(model), 64, device="cpu").save(str(encoder))
    out = tmp_path / "run"
    stats = index_job("slice", str(encoder), str(vaswani_slice), 16, "fp32", None, None, str(out / "queries.npz"))
    assert stats["documents"] is None and not (out / "docs.npz").exists()
    queries, qids = load_sparse(out / "queries.npz")
    ds = load_beir_folder(vaswani_slice)
    assert qids == list(ds.queries) and queries.nnz > 0
    # documents of another corpus (one document short): evaluate names the file and refuses it
    ids = list(ds.corpus)[:-1]
    save_sparse(out / "docs.npz", sp.csr_matrix((len(ids), queries.shape[1]), dtype=np.float32), ids)
    with pytest.raises(InputError) as err:
        evaluate_job("b", "1", "slice", 10, ["nDCG@10"], False, 0.5, "h", str(vaswani_slice), str(out / "docs.npz"),
                        str(out / "queries.npz"), None, str(out / "run.trec"), str(out / "m.tsv"), str(out / "pq.tsv"),
                        str(out / "status.json"), str(out / "prov.json"))
    assert str(err.value).startswith(f"{out / 'docs.npz'}: ids: its {len(ids)} documents are not the {len(ds.corpus)} of")
    assert not (out / "m.tsv").exists()
