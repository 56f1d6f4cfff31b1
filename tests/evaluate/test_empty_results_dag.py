"""``empty_results`` through the DAG: a backbone whose head is all zero encodes every query and
document to the zero vector, so every query retrieves nothing (the extreme collapse). On the same
BEIR folder registered twice, ``zero`` scores 0 and ``fill`` scores what sentence-transformers'
evaluator gives a model whose scores are all 0 (documents ranked by corpus id)."""

from __future__ import annotations

import csv

import pytest
import yaml

from helpers.miniatures import write_zero_head_model
from helpers.snakemake import eval_dir, micro_config, run_snakemake

pytestmark = pytest.mark.slow


def _st_metrics_of_all_zero_scores(slice_dir) -> dict[str, float]:
    """sentence-transformers' own metrics code on rankings where every document scores 0."""
    from lsrbench.data.beir import load_beir_folder
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

    ds = load_beir_folder(slice_dir)
    relevant = {q: {d for d, r in docs.items() if r > 0} for q, docs in ds.qrels.items()}
    st = InformationRetrievalEvaluator(ds.queries, ds.corpus, relevant, score_functions={"dot": None},
                                       precision_recall_at_k=[100], accuracy_at_k=[10], map_at_k=[100])
    results = [[{"corpus_id": d, "score": 0.0} for d in ds.corpus] for _ in st.queries_ids]
    scores = st.compute_metrics(results)
    assert len(st.queries_ids) == len(ds.queries)
    return {"nDCG@10": scores["ndcg@k"][10], "RR@10": scores["mrr@k"][10], "R@100": scores["recall@k"][100]}


def test_zero_vectors_score_as_each_toolchain_does(tmp_path, vaswani_slice, tiny_roberta):
    model = write_zero_head_model(tiny_roberta, tmp_path / "zero-head")
    cfg_path = micro_config(tmp_path, vaswani_slice, model)
    config = yaml.safe_load(cfg_path.read_text())
    datasets = {"slice": {"source": "beir", "path": str(vaswani_slice)},
                "slice-st": {"source": "beir", "path": str(vaswani_slice), "empty_results": "fill"}}
    (tmp_path / "datasets.yaml").write_text(yaml.safe_dump(datasets))
    config["k_grid"] = [1]
    config["recipe"]["steps"] = 0  # the checkpoint as it is
    config["evaluation"]["datasets"] = ["slice", "slice-st"]
    cfg_path.write_text(yaml.safe_dump(config, sort_keys=False))
    work = tmp_path / "work"
    work.mkdir()
    run_snakemake("results/metrics.csv", "--cores", "2", "-d", str(work), "--configfile", str(cfg_path))

    rows = list(csv.DictReader(open(work / "results" / "metrics.csv")))
    value = {(r["dataset"], r["measure"]): float(r["value"]) for r in rows if r["backbone"] == "rand-roberta"}
    assert value[("slice", "collapsed")] == value[("slice-st", "collapsed")] == 1.0  # all-zero vectors
    want = _st_metrics_of_all_zero_scores(vaswani_slice)
    for measure in ("nDCG@10", "RR@10", "R@100"):
        assert value[("slice", measure)] == 0.0
        assert value[("slice-st", measure)] == pytest.approx(want[measure], abs=5e-7), measure  # 6 decimals
    assert want["R@100"] > 0
    # the run files hold what was retrieved: nothing, for both
    for name in ("slice", "slice-st"):
        assert (eval_dir(work, cfg_path, "rand-roberta", "1", name) / "run.trec").read_text() == ""
