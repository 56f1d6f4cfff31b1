"""One function per DAG rule, with explicit inputs and outputs: each calls into one stage
subpackage and writes the rule's outputs and provenance. The Snakemake rules call these through
:mod:`lsrbench.pipeline.bridge`; the report rules' functions are in
:mod:`lsrbench.pipeline.report_stages`."""

from __future__ import annotations

import inspect
import json
import logging
import os
from pathlib import Path

from lsrbench.errors import InputError
from lsrbench.names import AUTO_K, BM25, NO_K, POOLED, split_run_name
from lsrbench.provenance import manifest_fields, provenance, write_json

log = logging.getLogger(__name__)


def as_list(x) -> list[str]:
    """A Snakemake input that may be one path or several, as a list."""
    return [x] if isinstance(x, str) else list(x)


def _load_beir(folder: str, entry: dict):
    from lsrbench.data.beir import load_beir_folder

    return load_beir_folder(folder, split=entry.get("split", "test"), unknown_docs=entry.get("unknown_docs", "error"))


def norm(backbone: str, entry: dict, mirror, cache_dir: str, config_file: str, out_json: str) -> dict:
    """Load the backbone (checking it really has an MLM head) and write its head norms."""
    from lsrbench.model.checkpoint import check_tokenizer, load_mlm, resolve_model, transformer_folder
    from lsrbench.model.rescale import head_norms, rescale_mlm_head

    # a released SparseEncoder folder (evaluate_only) holds its MLM checkpoint in its first module
    path = transformer_folder(resolve_model(entry, mirror, cache_dir, config_file, backbone))
    field, trust, revision = f"backbones.{backbone}.model", entry.get("trust_remote_code", False), entry.get("revision")
    model = load_mlm(path, config_file, field, trust_remote_code=trust, revision=revision)
    # here, not at training: a hub checkpoint is first read by this job, and its train jobs need the tokenizer
    check_tokenizer(path, model, config_file, field, trust, revision)
    if entry.get("head_scale", 1) != 1:
        rescale_mlm_head(model, 1.0 / entry["head_scale"], "shared")
    result = {"backbone": backbone, "model": entry["model"], "resolved_path": path,
              "head_scale": entry.get("head_scale", 1),
              "architecture": type(model).__name__, **head_norms(model)}
    log.info("norm: %s (%s from %s): head %d x %d, Frobenius norm %.6g, mean row norm %.6g, tied %s", backbone,
             result["architecture"], path, result["vocab_size"], result["hidden_size"], result["frobenius_norm"],
             result["mean_row_norm"], result["tied"])
    write_json(out_json, result)
    return result


def dataset(name: str, entry: dict, mirror, datasets_file: str, cache_dir: str, full_dir: str, info: str,
            corpus_store: str | None = None) -> None:
    """Bring a dataset into the canonical BEIR layout (``full_dir``); ``info``: its counts."""
    from lsrbench.data.sources import resolve_dataset
    from lsrbench.data.store import write_beir_folder

    ds = resolve_dataset(name, entry, mirror, datasets_file, cache_dir, unknown_docs=entry.get("unknown_docs", "error"))
    # One copy of each distinct corpus file in ``corpus_store``, hard-linked into every dataset
    # folder that has it (MS MARCO dev and DL19, a pooled subset without pooling).
    write_beir_folder(ds, full_dir, split=entry.get("split", "test"), corpus_store=corpus_store)
    counts = _counts(name, ds)
    log.info("dataset %s: %d documents, %d queries, %d judgments", name, counts["documents"], counts["queries"],
             counts["judgments"])
    write_json(info, counts | {"split": entry.get("split", "test")})


def _counts(name: str, ds) -> dict:
    return {"name": name, "documents": len(ds.corpus), "queries": len(ds.queries),
            "dropped_queries": ds.dropped_queries, "unknown_doc_qrels": ds.unknown_doc_qrels,
            "empty_queries": ds.empty_queries, "judgments": sum(len(v) for v in ds.qrels.values())}


def pool(name: str, full_dir: str, pool_depth: int, dataset_entry: dict, eval_dir: str, eval_info: str,
         corpus_store: str | None = None) -> None:
    """The evaluated subset of a dataset: every judged document plus each query's top ``pool_depth``
    BM25 candidates (:func:`lsrbench.data.bm25.pooled_subset`), in BEIR layout."""
    from lsrbench.data.bm25 import pooled_subset
    from lsrbench.data.store import write_beir_folder

    ds = _load_beir(full_dir, dataset_entry)
    evaluated = pooled_subset(ds, pool_depth)
    write_beir_folder(evaluated, eval_dir, split=dataset_entry.get("split", "test"), corpus_store=corpus_store)
    counts = _counts(name, evaluated)
    log.info("pool %s: %d documents (%d in the full corpus, depth %d), %d queries, %d judgments", name,
             counts["documents"], len(ds.corpus), pool_depth, counts["queries"], counts["judgments"])
    write_json(eval_info, counts | {"pool_depth": pool_depth, "full_documents": len(ds.corpus)})


def triplets(training_data: dict, n: int, seed: int, out: str, full_dir: str | None = None,
             dataset_entry: dict | None = None, mirror=None, cache_dir: str = "cache",
             config_file: str = "config") -> None:
    """Training triplets of ``training_data.source``: pseudo-queries cropped from a corpus (never its
    test queries), an hf dataset or ir_datasets docpairs (from the mirror when prefetched there)."""
    from lsrbench.data.triplets import build_triplets

    build_triplets(training_data, n, seed, out, mirror=mirror, cache_dir=cache_dir, config_file=config_file,
                   full_dir=full_dir, dataset_entry=dataset_entry)


def train(run: str, entry: dict, k: str, recipe: dict, mirror, cache_dir: str, config_file: str,
          norms_json: str, triplets_path: str, model_dir: str, log_path: str, prov_path: str,
          config_hash: str, reference_norms_json: str | None = None, auto_k: dict | None = None,
          status_path: str | None = None, checkpoint_dir: str | None = None,
          checkpoint_steps: int | None = None, processes: int | str = 1, report_to: list | None = None) -> dict:
    """Rescale by ``k`` and train; writes the SparseEncoder model, the per-step log, the status and
    provenance (which records the head norms of the backbone as loaded, from the norm stage).

    ``run`` is the run name (``<backbone>+untie`` for the untie mode, see
    :func:`lsrbench.names.run_name`); ``k == "auto"`` is resolved from the head norms
    (:mod:`lsrbench.model.auto_k`). Resumable through ``checkpoint_dir`` and collapse-tolerant
    (:func:`lsrbench.model.train.train_splade`). ``processes`` (``auto``: one per visible CUDA
    GPU): more than one trains data-parallel through torchrun
    (:mod:`lsrbench.pipeline.distributed`); the recipe's batch is the global batch."""
    from lsrbench.model.ranks import training_processes, world

    n = training_processes(processes)
    if n > 1 and "LOCAL_RANK" not in os.environ:
        if recipe["batch_size"] % n:
            raise InputError(config_file, "recipe.batch_size",
                             f"{recipe['batch_size']} is not a multiple of the {n} training processes (train_processes)")
        from lsrbench.pipeline.distributed import run_distributed

        call = {key: value for key, value in locals().items() if key in inspect.signature(train).parameters}
        return run_distributed(n, f"{__name__}:train", call, status_path)
    status, summary, path, k_value = _train_here(run, entry, k, recipe, mirror, cache_dir, config_file, norms_json,
                                                 triplets_path, model_dir, log_path, reference_norms_json, auto_k,
                                                 checkpoint_dir, checkpoint_steps, report_to)
    if world()[0] != 0:
        return status  # the main process writes the outputs
    if status_path:
        write_json(status_path, status)
    _write_train_provenance(prov_path, config_hash, run, entry, k, k_value, recipe, summary, path, norms_json,
                            reference_norms_json, triplets_path, model_dir, log_path, status_path, checkpoint_steps)
    if checkpoint_dir:
        from lsrbench.model.checkpoints import discard_checkpoints

        discard_checkpoints(checkpoint_dir)
    return status


def _train_here(run, entry, k, recipe, mirror, cache_dir, config_file, norms_json, triplets_path, model_dir, log_path,
                reference_norms_json, auto_k, checkpoint_dir, checkpoint_steps, report_to=None):
    from lsrbench.data.triplets import read_triplets
    from lsrbench.model.auto_k import auto_k_from_files
    from lsrbench.model.checkpoint import resolve_model
    from lsrbench.model.train import train_splade

    base, _ = split_run_name(run)
    k_value = auto_k_from_files(norms_json, reference_norms_json, auto_k) if k == AUTO_K else float(k)
    path = resolve_model(entry, mirror, cache_dir, config_file, base)
    summary = train_splade(
        path, read_triplets(triplets_path), recipe, model_dir, log_path,
        k=k_value, mode=entry.get("mode", "shared"), head_scale=entry.get("head_scale", 1.0),
        trust_remote_code=entry.get("trust_remote_code", False), revision=entry.get("revision"),
        checkpoint_dir=checkpoint_dir, checkpoint_steps=checkpoint_steps, config_file=config_file,
        report_to=report_to or (),
    )
    return {"backbone": run, "k": k, **summary["status"]}, summary, path, k_value


def _write_train_provenance(prov_path, config_hash, run, entry, k, k_value, recipe, summary, path, norms_json,
                            reference_norms_json, triplets_path, model_dir, log_path, status_path, checkpoint_steps):
    from lsrbench.model.checkpoint import resolved_revision

    inputs = [norms_json, reference_norms_json, triplets_path] + ([path] if Path(path).is_dir() else [])
    revision = {"requested": entry.get("revision"), "resolved": resolved_revision(path, entry.get("revision"))}
    write_json(prov_path, provenance("train", config_hash, recipe["seed"], backbone=run, k=k, k_value=k_value,
                                     model=entry["model"], resolved_path=path, model_revision=revision,
                                     recipe=recipe, summary=summary, checkpoint_steps=checkpoint_steps,
                                     head_norms=json.loads(Path(norms_json).read_text()),
                                     **manifest_fields(prov_path, inputs, [model_dir, log_path, status_path])))


def released(run: str, entry: dict, query_max_length: int, document_max_length: int, mirror, cache_dir: str,
             config_file: str, norms_json: str, model_dir: str, log_path: str, prov_path: str, status_path: str,
             config_hash: str) -> dict:
    """The train stage's outputs for an ``evaluate_only`` backbone, without training: its released
    checkpoint as a SparseEncoder (:func:`lsrbench.model.encoder.released_sparse_encoder`: as it is,
    k = 1), an empty per-step log, status ``ok`` and provenance saying it was released, not trained."""
    from lsrbench.atomic import atomic_dir
    from lsrbench.model.checkpoint import resolve_model, resolved_revision
    from lsrbench.model.encoder import released_sparse_encoder
    from lsrbench.model.train_log import write_train_log

    path = resolve_model(entry, mirror, cache_dir, config_file, run)
    model, fmt = released_sparse_encoder(path, query_max_length, document_max_length,
                                         trust_remote_code=entry.get("trust_remote_code", False),
                                         revision=entry.get("revision"))
    with atomic_dir(model_dir) as tmp_dir:
        model.save(str(tmp_dir))
    write_train_log(log_path, [])
    status = {"backbone": run, "k": "1", "status": "ok", "released": True}
    write_json(status_path, status)
    revision = {"requested": entry.get("revision"), "resolved": resolved_revision(path, entry.get("revision"))}
    inputs = [norms_json] + ([path] if Path(path).is_dir() else [])
    write_json(prov_path, provenance("released", config_hash, None, backbone=run, k="1", k_value=1.0,
                                     model=entry["model"], resolved_path=path, model_revision=revision,
                                     released=True, trained=False, released_format=fmt,
                                     head_norms=json.loads(Path(norms_json).read_text()),
                                     **manifest_fields(prov_path, inputs, [model_dir, log_path, status_path])))
    log.info("released %s: %s checkpoint %s saved as a SparseEncoder without training (k = 1)", run, fmt, path)
    return status


def index(model_dir: str, data_dir: str, dataset_entry: dict, batch_size: int, docs_out: str | None = None,
          queries_out: str | None = None, shard_size: int | None = None, shard_dir: str | None = None,
          precision: str = "fp32", query_max_length: int | None = None,
          document_max_length: int | None = None, dataset_name: str | None = None) -> dict:
    """Encode the evaluated corpus and its queries to CSR ``.npz`` files with their ids
    (:func:`lsrbench.index.indexing.index_dataset`), truncated at the evaluation's token lengths
    (``evaluation.query_max_length`` / ``document_max_length``), not the training ones. Without
    ``docs_out`` only the queries (a dataset scored against another dataset's documents)."""
    from lsrbench.index.indexing import index_dataset

    if queries_out is None:
        raise ValueError("index: queries_out is required")
    return index_dataset(model_dir, _load_beir(data_dir, dataset_entry), batch_size, queries_out, docs_out,
                         shard_size=shard_size, shard_dir=shard_dir, precision=precision,
                         query_max_length=query_max_length, document_max_length=document_max_length,
                         name=dataset_name)


def evaluate(run: str, k: str, dataset_name: str, dataset_entry: dict, data_dir: str, docs_npz: str,
             queries_npz: str, top_k: int, measures: list[str], run_out: str, metrics_out: str,
             perquery_out: str, prov_out: str, config_hash: str, train_status: str | None = None,
             status_out: str | None = None, collapse_max_active_share: float | None = None) -> dict:
    """Exact top-k retrieval, TREC run, ir_measures metrics, FLOPs and active dims as tidy rows.

    A collapsed run (training stopped on a NaN/inf loss, all-zero vectors, or documents activating
    more than ``collapse_max_active_share`` of the vocabulary on average) is still evaluated: its
    metrics are written with a ``collapsed`` row of 1.0 (0.0 otherwise), and ``status_out`` says why.
    """
    from lsrbench.evaluate.collapse import collapse_status
    from lsrbench.evaluate.evaluation import checked_rows, evaluate_vectors, load_vectors
    from lsrbench.evaluate.tidy import write_metric_rows
    from lsrbench.evaluate.trec import write_trec_run

    ds = _load_beir(data_dir, dataset_entry)
    docs, doc_ids, queries, query_ids = load_vectors(docs_npz, queries_npz, ds, data_dir)
    out = evaluate_vectors(ds, docs, doc_ids, queries, query_ids, top_k=top_k,
                           measures=dataset_entry.get("measures", measures),
                           skip_identical_ids=dataset_entry.get("skip_identical_ids", False))
    write_trec_run(run_out, out["results"], tag=f"lsrbench-{run}-k{k}")
    log.info("evaluate %s k=%s on %s: %d queries x %d documents, search %.1f s; %s", run, k, dataset_name,
             len(query_ids), len(doc_ids), out["search_seconds"], _rows_text(out["rows"]))
    status = collapse_status(train_status, docs, queries, collapse_max_active_share)
    rows = checked_rows(out["rows"], status["collapsed"], metrics_out)
    write_metric_rows(metrics_out, perquery_out, run, k, dataset_name, rows, out["per_query"])
    if status_out:
        write_json(status_out, {"backbone": run, "k": k, "dataset": dataset_name, **status})
    write_json(prov_out, provenance("evaluate", config_hash, None, backbone=run, k=k, dataset=dataset_name,
                                    top_k=top_k, search_seconds=round(out["search_seconds"], 3),
                                    documents=len(doc_ids), queries=len(query_ids),
                                    **manifest_fields(prov_out, [data_dir, docs_npz, queries_npz, train_status],
                                                      [run_out, metrics_out, perquery_out, status_out])))
    return dict(rows)


def pooled_flops(run: str, k: str, datasets: list[str], docs_npz, queries_npz, metrics_out: str,
                 prov_out: str) -> dict:
    """FLOPs and mean active dims of one run pooled over ``datasets`` (one ``docs_npz`` and
    ``queries_npz`` each, in that order) exactly as sentence-transformers' SparseNanoBEIREvaluator
    pools them (:mod:`lsrbench.evaluate.flops`), as tidy rows of the dataset :data:`lsrbench.names.POOLED`."""
    from lsrbench.evaluate.flops import pooled_active_dims, pooled_flops as pool
    from lsrbench.evaluate.tidy import write_metric_rows
    from lsrbench.index.sparse import load_sparse
    from lsrbench.names import DOC_DIMS, FLOPS, QUERY_DIMS

    docs_npz, queries_npz = as_list(docs_npz), as_list(queries_npz)
    if not (len(datasets) == len(docs_npz) == len(queries_npz)):
        raise ValueError(f"pooled_flops: {len(datasets)} datasets, {len(docs_npz)} docs, {len(queries_npz)} queries")
    pairs = []
    for q_path, d_path in zip(queries_npz, docs_npz):
        queries, _ = load_sparse(q_path)
        docs, _ = load_sparse(d_path)
        if docs.shape[1] != queries.shape[1]:
            raise InputError(q_path, "shape", f"vocabulary {queries.shape[1]} differs from the documents' {docs.shape[1]}")
        pairs.append((queries, docs))
    rows = [(FLOPS, pool(pairs)), (QUERY_DIMS, pooled_active_dims([q for q, _ in pairs])),
            (DOC_DIMS, pooled_active_dims([d for _, d in pairs]))]
    write_metric_rows(metrics_out, None, run, k, POOLED, rows)
    write_json(prov_out, provenance("pooled_flops", "", None, backbone=run, k=k, datasets=list(datasets),
                                    **manifest_fields(prov_out, docs_npz + queries_npz, [metrics_out])))
    return dict(rows)


def bm25(dataset_name: str, dataset_entry: dict, data_dir: str, top_k: int, measures: list[str], run_out: str,
         metrics_out: str, perquery_out: str, prov_out: str, settings: dict | None = None) -> None:
    """The BM25 reference row on one evaluated dataset, as tidy rows: ``settings`` (report.bm25_settings:
    k1, b, analyzer; Anserini's defaults: k1=0.9, b=0.4, Lucene's English analyzer)."""
    from lsrbench.data.bm25 import bm25_run
    from lsrbench.evaluate.metrics import evaluate_run
    from lsrbench.evaluate.tidy import write_metric_rows
    from lsrbench.evaluate.trec import write_trec_run
    settings = dict(settings or {})  # the rule passes report.bm25_settings with the schema's defaults
    ds = _load_beir(data_dir, dataset_entry)
    results = bm25_run(ds, top_k, dataset_entry.get("skip_identical_ids", False), **settings)
    write_trec_run(run_out, results, tag="lsrbench-bm25s")
    aggregate, per_query = evaluate_run({q: dict(h) for q, h in results.items()}, ds.qrels,
                                        dataset_entry.get("measures", measures))
    log.info("bm25 on %s: %d queries x %d documents; %s", dataset_name, len(ds.queries), len(ds.corpus),
             _rows_text(aggregate.items()))
    write_metric_rows(metrics_out, perquery_out, BM25, NO_K, dataset_name, list(aggregate.items()), per_query)
    write_json(prov_out, provenance("bm25", "", None, dataset=dataset_name, top_k=top_k, **settings,
                                    **manifest_fields(prov_out, [data_dir], [run_out, metrics_out, perquery_out])))


def _rows_text(rows) -> str:
    return ", ".join(f"{measure} {value:.4g}" for measure, value in rows)
