"""The bm25 stage: the BM25 reference row on one evaluated dataset, scored as the runs are."""

from __future__ import annotations

import logging

from lsrbench.config.evaluated import evaluated
from lsrbench.dag.evaluated import eval_data_identity, eval_dir
from lsrbench.dag.stage import Stage
from lsrbench.names import BM25, NO_K
from lsrbench.provenance import manifest_fields, provenance, write_json
from lsrbench.stages.evaluate import LATE_SCORING_SETTINGS, rows_text, scoring

log = logging.getLogger(__name__)

__all__ = ["STAGE", "bm25"]


def bm25(dataset: str, top_k: int, measures: list[str], skip_identical_ids: bool, settings: dict, data_dir: str,
         run_trec: str, metrics_tsv: str, perquery_tsv: str, provenance_json: str, empty_results: str = "zero") -> None:
    """The BM25 reference row on one evaluated dataset as tidy rows, with ``settings`` (report.bm25_settings;
    Anserini's defaults)."""
    from lsrbench.data.beir import read_written_folder
    from lsrbench.data.bm25 import bm25_run
    from lsrbench.evaluate.metrics import evaluate_run
    from lsrbench.evaluate.tidy import write_metric_rows
    from lsrbench.evaluate.trec import write_trec_run
    ds = read_written_folder(data_dir)
    results = bm25_run(ds, top_k, skip_identical_ids, **settings)
    write_trec_run(run_trec, results, tag="lsrbench-bm25s")
    aggregate, per_query = evaluate_run({q: dict(h) for q, h in results.items()}, ds.qrels, measures,
                                        empty_results=empty_results, corpus_ids=list(ds.corpus), depth=top_k,
                                        skip_identical_ids=skip_identical_ids)
    log.info("bm25 on %s: %d queries x %d documents; %s", dataset, len(ds.queries), len(ds.corpus),
             rows_text(aggregate.items()))
    write_metric_rows(metrics_tsv, perquery_tsv, BM25, NO_K, dataset, list(aggregate.items()), per_query)
    write_json(provenance_json, provenance("bm25", "", None, dataset=dataset, top_k=top_k, **settings,
                                           **manifest_fields(provenance_json, [data_dir],
                                                             [run_trec, metrics_tsv, perquery_tsv])))


STAGE = Stage(
    name="bm25", kind="bm25", job=bm25,
    priority=1,
    grid=lambda c: [{"dataset": d} for d in evaluated(c)] if c["report"]["bm25"] else [],
    identity=lambda layout, key: {"dataset": key["dataset"], "data": eval_data_identity(layout, key["dataset"]),
                                  **scoring(layout.config, key["dataset"]),
                                  "settings": layout.config["report"]["bm25_settings"]},
    late_settings=LATE_SCORING_SETTINGS,
    inputs=lambda layout, item: {"data_dir": eval_dir(layout, item.fields["dataset"])},
    outputs={"run_trec": "run.trec", "metrics_tsv": "metrics.tsv", "perquery_tsv": "perquery.tsv",
             "provenance_json": "provenance.json"},
    remade_if_changed=True,
)
