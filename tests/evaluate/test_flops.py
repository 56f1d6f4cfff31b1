"""FLOPs pooled across datasets the way sentence-transformers' SparseNanoBEIREvaluator pools them."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from lsrbench.evaluate.flops import flops
from lsrbench.evaluate.flops import pooled_active_dims, pooled_flops


def csr(rows: list[list[int]], width: int = 4) -> sp.csr_matrix:
    m = sp.lil_matrix((len(rows), width), dtype=np.float32)
    for i, cols in enumerate(rows):
        for j in cols:
            m[i, j] = 0.5 + j
    return m.tocsr()


# Dataset A: queries {0,1}, {1}; documents {0}, {1,2}, {} (an empty vector).
# Dataset B: queries {1,3}; documents {3} plus a stored zero on term 0.
A = (csr([[0, 1], [1]]), csr([[0], [1, 2], []]))
B = (csr([[1, 3]]), sp.csr_matrix((np.array([0.0, 3.5], np.float32), np.array([0, 3]), np.array([0, 2])), shape=(1, 4)))


def test_pooled_flops_by_hand():
    assert B[1].nnz == 2 and B[1].count_nonzero() == 1
    # count vectors summed over both datasets: queries [1, 3, 0, 1] over 3 queries,
    # documents [1, 1, 1, 1] over 4 documents -> (1*1 + 3*1 + 0*1 + 1*1) / (3 * 4) = 5/12
    assert pooled_flops([A, B]) == float(Fraction(5, 12))
    # not the mean of the per-dataset FLOPs: A = (1*1 + 2*1) / (2*3) = 1/2, B = 1*1 / (1*1) = 1
    assert flops(*A) == 0.5 and flops(*B) == 1.0
    assert pooled_flops([A, B]) != (0.5 + 1.0) / 2
    # one dataset: the ordinary FLOPs
    assert pooled_flops([A]) == flops(*A)
    # pooled active dims: row-weighted means (queries 5 active / 3 rows; documents 4 / 4)
    assert pooled_active_dims([A[0], B[0]]) == pytest.approx(5 / 3)
    assert pooled_active_dims([A[1], B[1]]) == 1.0


def test_matches_sentence_transformers_arithmetic():
    """The evaluator's own steps (compute_count_vector per dataset, summed, divided by the total
    numbers of queries and documents, torch.dot) on the same vectors, to float32 rounding."""
    import torch
    from sentence_transformers.util import compute_count_vector

    rng = np.random.default_rng(0)
    data = []
    for n_q, n_d in ((5, 40), (7, 13), (3, 60)):
        q = sp.random(n_q, 300, density=0.05, format="csr", random_state=rng, dtype=np.float32)
        d = sp.random(n_d, 300, density=0.1, format="csr", random_state=rng, dtype=np.float32)
        data.append((q, d))

    def sparse_tensor(m):
        coo = m.tocoo()
        return torch.sparse_coo_tensor(np.vstack([coo.row, coo.col]), coo.data, m.shape, check_invariants=True)

    total_q = sum(compute_count_vector(sparse_tensor(q)) for q, _ in data)
    total_d = sum(compute_count_vector(sparse_tensor(d)) for _, d in data)
    avg_q = total_q / sum(q.shape[0] for q, _ in data)
    avg_d = total_d / sum(d.shape[0] for _, d in data)
    expected = float(torch.dot(avg_q, avg_d))
    assert pooled_flops(data) == pytest.approx(expected, rel=1e-6)
    assert pooled_flops(data) != pytest.approx(np.mean([flops(q, d) for q, d in data]), rel=1e-3)


def test_vocabulary_mismatch_is_refused():
    with pytest.raises(ValueError, match="one vocabulary"):
        pooled_flops([A, (csr([[1]], width=5), csr([[1]], width=5))])
    with pytest.raises(ValueError, match="at least one"):
        pooled_flops([])


def test_pooled_flops_stage_writes_manifest_backed_rows(tmp_path):
    """The pooled_flops stage: the hand-computed 5/12 as a tidy row of the reserved dataset, with a
    manifest that lsrbench verify accepts."""
    import json

    from lsrbench.names import POOLED
    from lsrbench.index.sparse import save_sparse
    from lsrbench.stages.pooled_flops import pooled_flops as stage

    paths = {}
    for name, (q, d) in (("A", A), ("B", B)):
        paths[name] = (tmp_path / f"{name}_q.npz", tmp_path / f"{name}_d.npz")
        save_sparse(paths[name][0], q, [f"q{i}" for i in range(q.shape[0])])
        save_sparse(paths[name][1], d, [f"d{i}" for i in range(d.shape[0])])
    out = tmp_path / "run" / POOLED
    rows = stage("m", "4", ["A", "B"], [str(paths[n][1]) for n in "AB"], [str(paths[n][0]) for n in "AB"],
                 str(out / "metrics.tsv"), str(out / "provenance.json"))
    assert rows["FLOPs"] == float(Fraction(5, 12))
    assert rows["query_active_dims"] == pytest.approx(5 / 3) and rows["doc_active_dims"] == 1.0
    lines = (out / "metrics.tsv").read_text().splitlines()
    assert lines[0] == "backbone\tk\tdataset\tmeasure\tvalue"
    assert lines[1] == f"m\t4\t{POOLED}\tFLOPs\t{float(Fraction(5, 12))!r}"
    manifest = json.loads((out / "provenance.json").read_text())
    assert manifest["datasets"] == ["A", "B"]
    assert set(manifest["artifacts"]["outputs"]) == {str(out / "metrics.tsv")}
    assert len(manifest["artifacts"]["inputs"]) == 4


def test_report_uses_pooled_flops_for_several_datasets():
    """Table 1's FLOPs column and the tradeoff plot's x: the pooled rows, not the per-dataset mean."""
    import pandas as pd

    from lsrbench.names import POOLED
    from lsrbench.report.figures.tradeoff import tradeoff_points
    from lsrbench.report.results import run_table

    rows = [("m", "1", "A", "nDCG@10", 0.4), ("m", "1", "B", "nDCG@10", 0.6),
            ("m", "1", "A", "FLOPs", 0.5), ("m", "1", "B", "FLOPs", 1.0),
            ("m", "1", POOLED, "FLOPs", 5 / 12), ("m", "1", POOLED, "query_active_dims", 5 / 3),
            ("m", "1", POOLED, "doc_active_dims", 1.0), ("m", "1", "A", "query_active_dims", 1.5),
            ("m", "1", "B", "query_active_dims", 2.0)]
    metrics = pd.DataFrame(rows, columns=["backbone", "k", "dataset", "measure", "value"])
    cfg = {"columns": [{"name": "Nano", "datasets": ["A", "B"], "measure": "nDCG@10"}],
           "flops_datasets": ["A", "B"], "tradeoff_measure": "nDCG@10"}
    table = run_table(metrics, cfg, {"m": {}})
    assert table.loc[0, "FLOPs"] == pytest.approx(5 / 12) and table.loc[0, "q dims"] == pytest.approx(5 / 3)
    assert table.loc[0, "Nano"] == pytest.approx(0.5)
    pts = tradeoff_points(metrics, cfg)
    assert pts.iloc[0]["flops"] == pytest.approx(5 / 12) and pts.iloc[0]["score"] == pytest.approx(0.5)
    # one dataset: its own FLOPs (no pooled rows needed)
    one = {**cfg, "flops_datasets": ["B"]}
    assert run_table(metrics, one, {"m": {}}).loc[0, "FLOPs"] == 1.0
    assert tradeoff_points(metrics, one).iloc[0]["flops"] == 1.0


def test_pooled_dataset_name_is_reserved():
    from lsrbench.config.strict_yaml import load_yaml
    from lsrbench.validation.config import check_config
    from lsrbench.names import POOLED
    from lsrbench.errors import InputError

    config = load_yaml("config/config.yaml")
    config["evaluation"]["datasets"] = [POOLED]
    with pytest.raises(InputError) as err:
        check_config(config, "config/config.yaml")
    assert str(err.value).startswith("config/config.yaml: evaluation.datasets[0]:") and "reserved" in str(err.value)
