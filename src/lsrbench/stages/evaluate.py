"""The evaluate stage: exact retrieval of one model on one evaluated dataset, its TREC run, metrics, FLOPs and
collapse status."""

from __future__ import annotations

import logging

from lsrbench.config.evaluated import dataset_measures, evaluated
from lsrbench.config.grid import run_keys
from lsrbench.dag.evaluated import docs_dataset, docs_npz, eval_dir, model_key
from lsrbench.dag.stage import LateSetting, Stage
from lsrbench.provenance import manifest_fields, provenance, write_json

log = logging.getLogger(__name__)

__all__ = ["STAGE", "evaluate", "scoring", "rows_text", "LATE_SCORING_SETTINGS"]

# Scoring settings added after results had been made (lsrbench.dag.stage.without_late_defaults).
LATE_SCORING_SETTINGS = (LateSetting("empty_results", ("datasets.schema.yaml", "*")),)


def scoring(config: dict, dataset: str) -> dict:
    """The settings that decide a dataset's run file and metrics from its vectors."""
    from lsrbench.config.entries import dataset_entry  # the schema's validator: not in the job

    entry = dataset_entry(config, dataset)
    return {"top_k": config["evaluation"]["top_k"], "measures": dataset_measures(config, dataset),
            "skip_identical_ids": entry.skip_identical_ids, "empty_results": entry.empty_results}


def _identity(layout, key: dict) -> dict:
    queries = layout.get("index", **key)
    docs = layout.get("index", **model_key(key), dataset=docs_dataset(layout.config, key["dataset"]))
    return {"run": key["run"], "k": key["k"], "dataset": key["dataset"], "train": queries.fields["train_id"],
            "docs": docs.id, "queries": queries.id, **scoring(layout.config, key["dataset"]),
            "collapse_max_active_share": layout.config["evaluation"]["collapse_max_active_share"]}


def _inputs(layout, item) -> dict:
    model, dataset = model_key(item.fields), item.fields["dataset"]
    return {"data_dir": eval_dir(layout, dataset), "docs_npz": docs_npz(layout, model, dataset),
            "queries_npz": layout.get("index", **model, dataset=dataset).path("queries.npz"),
            "train_status": layout.get("train", **model).path("status.json")}


def evaluate(run: str, k: str, dataset: str, top_k: int, measures: list[str], skip_identical_ids: bool,
             collapse_max_active_share: float, config_hash: str, data_dir: str, docs_npz: str, queries_npz: str,
             train_status: str, run_trec: str, metrics_tsv: str, perquery_tsv: str, status_json: str,
             provenance_json: str, empty_results: str = "zero") -> dict:
    """Exact top-k retrieval, TREC run, ir_measures metrics, FLOPs and active dims as tidy rows;
    ``empty_results`` says what an empty result counts for. A collapsed run is still evaluated, with a
    ``collapsed`` row of 1.0 and ``status_json`` saying why."""
    from lsrbench.data.beir import read_written_folder
    from lsrbench.evaluate.collapse import collapse_status
    from lsrbench.evaluate.evaluation import checked_rows, evaluate_vectors, load_vectors
    from lsrbench.evaluate.tidy import write_metric_rows
    from lsrbench.evaluate.trec import write_trec_run

    ds = read_written_folder(data_dir)
    docs, doc_ids, queries, query_ids = load_vectors(docs_npz, queries_npz, ds, data_dir)
    out = evaluate_vectors(ds, docs, doc_ids, queries, query_ids, top_k=top_k, measures=measures,
                           skip_identical_ids=skip_identical_ids, empty_results=empty_results)
    write_trec_run(run_trec, out["results"], tag=f"lsrbench-{run}-k{k}")
    log.info("evaluate %s k=%s on %s: %d queries x %d documents, search %.1f s; %s", run, k, dataset,
             len(query_ids), len(doc_ids), out["search_seconds"], rows_text(out["rows"]))
    status = collapse_status(train_status, docs, queries, collapse_max_active_share)
    rows = checked_rows(out["rows"], status["collapsed"], metrics_tsv)
    write_metric_rows(metrics_tsv, perquery_tsv, run, k, dataset, rows, out["per_query"])
    write_json(status_json, {"backbone": run, "k": k, "dataset": dataset, **status})
    write_json(provenance_json, provenance("evaluate", config_hash, None, backbone=run, k=k, dataset=dataset,
                                           top_k=top_k, search_seconds=round(out["search_seconds"], 3),
                                           documents=len(doc_ids), queries=len(query_ids),
                                           **manifest_fields(provenance_json, [data_dir, docs_npz, queries_npz, train_status],
                                                             [run_trec, metrics_tsv, perquery_tsv, status_json])))
    return dict(rows)


def rows_text(rows) -> str:
    return ", ".join(f"{measure} {value:.4g}" for measure, value in rows)


STAGE = Stage(
    name="evaluate", kind="evaluate", job=evaluate,
    priority=1,
    grid=lambda c: [{**key, "dataset": d} for key in run_keys(c) for d in evaluated(c)],
    folder_fields=lambda layout, key: dict(layout.get("index", **key).fields),
    identity=_identity,
    late_settings=LATE_SCORING_SETTINGS,
    inputs=_inputs,
    outputs={"run_trec": "run.trec", "metrics_tsv": "metrics.tsv", "perquery_tsv": "perquery.tsv",
             "status_json": "status.json", "provenance_json": "provenance.json"},
    remade_if_changed=True,
)
