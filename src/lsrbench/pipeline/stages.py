"""The job function of every addressed stage (:mod:`lsrbench.dag.declarations`), registered in
:data:`lsrbench.pipeline.JOBS` under the stage's name: each calls into one stage subpackage and
writes the rule's outputs and provenance. Arguments are bound by name
(:mod:`lsrbench.dag.stage`): the rule's named outputs and inputs, its runtime settings, and the
identity's values (``run``, ``k``, ``recipe``, ``top_k``, ...); ``config_hash`` is the identity's
SHA-256. The report rules' functions are in :mod:`lsrbench.pipeline.report_stages`."""

from __future__ import annotations

import inspect
import json
import logging
import os
from pathlib import Path

from lsrbench.errors import InputError
from lsrbench.names import AUTO_K, BM25, NO_K, POOLED, PROBE_K, split_run_name
from lsrbench.provenance import manifest_fields, provenance, write_json

log = logging.getLogger(__name__)


def as_list(x) -> list[str]:
    """A Snakemake input that may be one path or several, as a list."""
    return [x] if isinstance(x, str) else list(x)


def _read_folder(folder: str):
    from lsrbench.data.beir import read_written_folder

    return read_written_folder(folder)


def norm(backbone: str, entry: dict, mirror, cache_dir: str, config_file: str, norms_json: str,
         refit_model: str | None = None, match_norms_json: str | None = None) -> dict:
    """Load the backbone (checking it really has an MLM head) and write its head norms, after its
    ``head_scale``: a number, or one matched to the backbone whose ``match_norms_json`` this job
    reads (:mod:`lsrbench.model.head_match`: the ratio is measured here and recorded). With
    ``refit_model`` (a backbone with ``mlm_refit``) ``entry['model']`` is that folder."""
    from lsrbench.model.checkpoint import check_tokenizer, load_mlm, model_origin, resolve_model, transformer_folder
    from lsrbench.model.head_match import apply_head_scale, is_matched, matched_scale, numeric_head_scale
    from lsrbench.model.rescale import head_norms

    # a released SparseEncoder folder (evaluate_only) holds its MLM checkpoint in its first module
    resolved = resolve_model(entry, mirror, cache_dir, config_file, backbone)
    path = transformer_folder(resolved)
    field, trust, revision = f"backbones.{backbone}.model", entry.get("trust_remote_code", False), entry.get("revision")
    model = load_mlm(path, config_file, field, trust_remote_code=trust, revision=revision)
    # here, not at training: a hub checkpoint is first read by this job, and its train jobs need the tokenizer
    check_tokenizer(path, model, config_file, field, trust, revision)
    match = matched_scale(head_norms(model), match_norms_json, entry["head_scale"]) if is_matched(entry) else None
    scale = match["ratio"] if match else numeric_head_scale(entry)
    apply_head_scale(model, scale, match["mode"] if match else "shared")
    result = {"backbone": backbone, "model": entry["model"], "resolved_path": path,
              "read_from": model_origin(entry, mirror, cache_dir, resolved), "head_scale": scale if match else
              entry.get("head_scale", 1), "architecture": type(model).__name__, **head_norms(model),
              **({"head_scale_match": match} if match else {})}
    if match:
        log.info("norm: %s: head multiplied by %.6g (%s mode) to %s's %s %.6g (its own %.6g)", backbone, scale,
                 match["mode"], match["match"], match["statistic"], match["target"], match["own"])
    log.info("norm: %s (%s from %s): head %d x %d, Frobenius norm %.6g, mean row norm %.6g, tied %s", backbone,
             result["architecture"], path, result["vocab_size"], result["hidden_size"], result["frobenius_norm"],
             result["mean_row_norm"], result["tied"])
    write_json(norms_json, result)
    return result


def dataset(dataset: str, split: str, entry: dict, mirror, datasets_file: str, cache_dir: str, full_dir: str,
            info: str, corpus_store: str | None = None) -> None:
    """Bring a dataset into the canonical BEIR layout (``full_dir``, qrels as ``split``); ``info``:
    its counts. ``entry``: its registry entry as written (its policy for unknown documents in it)."""
    from lsrbench.data.sources import dataset_origin, resolve_dataset
    from lsrbench.data.store import write_beir_folder

    ds = resolve_dataset(dataset, entry, mirror, datasets_file, cache_dir)
    # One copy of each distinct corpus file in ``corpus_store``, hard-linked into every dataset
    # folder that has it (MS MARCO dev and DL19, a pooled subset without pooling).
    write_beir_folder(ds, full_dir, split=split, corpus_store=corpus_store)
    counts = _counts(dataset, ds)
    log.info("dataset %s: %d documents, %d queries, %d judgments", dataset, counts["documents"], counts["queries"],
             counts["judgments"])
    write_json(info, counts | {"split": split, "read_from": dataset_origin(dataset, entry, mirror, datasets_file)})


def _counts(name: str, ds) -> dict:
    return {"name": name, "documents": len(ds.corpus), "queries": len(ds.queries),
            "dropped_queries": ds.dropped_queries, "unknown_doc_qrels": ds.unknown_doc_qrels,
            "empty_queries": ds.empty_queries, "judgments": sum(len(v) for v in ds.qrels.values())}


def pool(dataset: str, full_dir: str, pool_depth: int, eval_dir: str, eval_info: str,
         corpus_store: str | None = None) -> None:
    """The evaluated subset of a dataset: every judged document plus each query's top ``pool_depth``
    BM25 candidates (:func:`lsrbench.data.bm25.pooled_subset`), in BEIR layout (the full folder's split)."""
    from lsrbench.data.beir import written_split
    from lsrbench.data.bm25 import pooled_subset
    from lsrbench.data.store import write_beir_folder

    ds = _read_folder(full_dir)
    evaluated = pooled_subset(ds, pool_depth)
    write_beir_folder(evaluated, eval_dir, split=written_split(full_dir), corpus_store=corpus_store)
    counts = _counts(dataset, evaluated)
    log.info("pool %s: %d documents (%d in the full corpus, depth %d), %d queries, %d judgments", dataset,
             counts["documents"], len(ds.corpus), pool_depth, counts["queries"], counts["judgments"])
    write_json(eval_info, counts | {"pool_depth": pool_depth, "full_documents": len(ds.corpus)})


def triplets(entry: dict, n: int, seed: int, triplets_jsonl: str, full_dir: str | None = None, mirror=None,
             cache_dir: str = "cache", config_file: str = "config") -> None:
    """Training triplets of ``training_data`` (``entry``, as written): pseudo-queries cropped from a
    corpus (never its test queries), an hf dataset or ir_datasets docpairs (from the mirror when
    prefetched there)."""
    from lsrbench.data.training_sources import build_triplets

    build_triplets(entry, n, seed, triplets_jsonl, mirror=mirror, cache_dir=cache_dir, config_file=config_file,
                   full_dir=full_dir)


def train(run: str, k: str, mode: str, recipe: dict, config_hash: str, entry: dict, mirror, cache_dir: str,
          config_file: str, norms_json: str, triplets_jsonl: str, model_dir: str, train_log: str,
          provenance_json: str, status_json: str | None = None, reference_norms_json: str | None = None,
          auto_k: dict | None = None, probe_json: str | None = None, reference_probe_json: str | None = None,
          k_from_probe: dict | None = None, checkpoint_dir: str | None = None, checkpoint_steps: int | None = None,
          processes: int | str = 1, report_to: list | None = None, match_norms_json: str | None = None) -> dict:
    """Rescale by ``k`` and train; writes the SparseEncoder model, the per-step log, the status and
    provenance (which records the head norms of the backbone as loaded, from the norm stage).

    ``run`` is the run name (``<backbone>+untie`` for the untie ``mode``, see
    :func:`lsrbench.names.run_name`); ``entry`` the backbone's load keys as written; ``k == "auto"``
    is resolved from the head norms (:mod:`lsrbench.model.auto_k`; a logit-scale statistic from
    the probes), ``k == "probe"`` from the probes (:func:`k_from_probes`). A matched ``head_scale``
    loads with the ratio its norm job recorded, checked against ``match_norms_json`` (the matched
    backbone's norms, :mod:`lsrbench.model.head_match`). Resumable through
    ``checkpoint_dir`` and collapse-tolerant (:func:`lsrbench.model.train.train_splade`).
    ``processes`` (``auto``: one per visible CUDA GPU): more than one trains data-parallel through
    torchrun (:mod:`lsrbench.pipeline.distributed`); the recipe's batch is the global batch."""
    from lsrbench.model.ranks import training_processes, world

    n = training_processes(processes)
    if n > 1 and "LOCAL_RANK" not in os.environ:
        if recipe["batch_size"] % n:
            raise InputError(config_file, "recipe.batch_size",
                             f"{recipe['batch_size']} is not a multiple of the {n} training processes (train_processes)")
        from lsrbench.pipeline.distributed import run_distributed

        call = {key: value for key, value in locals().items() if key in inspect.signature(train).parameters}
        return run_distributed(n, f"{__name__}:train", call, status_json)
    files = {"norms_json": norms_json, "reference_norms_json": reference_norms_json, "probe_json": probe_json,
             "reference_probe_json": reference_probe_json}
    k_value = _k_value(run, k, config_file, files, auto_k, k_from_probe)
    sources = [p for p in [*files.values(), match_norms_json] if p]
    entry = _resolved_head_scale(entry, norms_json, match_norms_json)
    status, summary, path = _train_here(run, entry, k, k_value, mode, recipe, mirror, cache_dir, config_file,
                                        triplets_jsonl, model_dir, train_log, checkpoint_dir, checkpoint_steps,
                                        report_to)
    if world()[0] != 0:
        return status  # the main process writes the outputs
    if status_json:
        write_json(status_json, status)
    _write_train_provenance(provenance_json, config_hash, run, entry, k, k_value, recipe, summary, path, sources,
                            triplets_jsonl, model_dir, train_log, status_json, checkpoint_steps)
    if checkpoint_dir:
        from lsrbench.model.resume import discard_checkpoints

        discard_checkpoints(checkpoint_dir)
    return status


def _resolved_head_scale(entry: dict, norms_json: str, match_norms_json: str | None = None) -> dict:
    """The entry with its ``head_scale`` as the number the head is multiplied by at load (a matched
    one: the ratio its norm job recorded) and ``head_scale_mode``."""
    from lsrbench.model.head_match import loaded_head_scale

    scale, mode = loaded_head_scale(entry, norms_json, match_norms_json)
    return {**entry, "head_scale": scale, "head_scale_mode": mode}


def _k_value(run: str, k: str, config_file: str, files: dict, auto_k: dict | None, k_from_probe: dict | None) -> float:
    """The number a run's k stands for: itself, or what ``auto`` / ``probe`` read off the norm and
    probe ``files`` (the train job's inputs of those names)."""
    from lsrbench.model.auto_k import auto_k_from_files

    if k == AUTO_K:
        return auto_k_from_files(files["norms_json"], files["reference_norms_json"], auto_k, files["probe_json"],
                                 files["reference_probe_json"])
    if k == PROBE_K:
        return k_from_probes(run, [files["probe_json"], files["reference_probe_json"]], k_from_probe, config_file)
    return float(k)


def k_from_probes(run: str, probe_files: list[str], k_from_probe: dict, config_file: str) -> float:
    """``k: probe``: the k at which the run's statistic at step 0 crosses the reference backbone's at
    k = 1 (:func:`lsrbench.report.probe.report.recommend_k`, the heuristic docs/probe.md states),
    from the run's and the reference's probe files; a crossing the probed k do not bracket is a
    one-line InputError saying which way to probe further."""
    from lsrbench.report.probe.report import recommend_k

    results = []
    for path in dict.fromkeys(probe_files):
        results += json.loads(Path(path).read_text(encoding="utf-8"))
    rec = recommend_k(results, k_from_probe["reference"], k_from_probe["statistic"]).get(run)
    if rec is None or rec["k"] is None:
        why = rec["note"] if rec else f"{run} is not among the probed runs of {', '.join(dict.fromkeys(probe_files))}"
        raise InputError(config_file, f"backbones.{split_run_name(run)[0]}.k", f"k: probe: {why} (probe.k_grid)")
    log.info("k probe of %s: %.4g (%s crosses the reference's between k = %s)", run, rec["k"], rec["statistic"],
             " and ".join(f"{b:g}" for b in rec["bracket"]))
    return float(rec["k"])


def _train_here(run, entry, k, k_value, mode, recipe, mirror, cache_dir, config_file, triplets_path, model_dir,
                log_path, checkpoint_dir, checkpoint_steps, report_to=None):
    from lsrbench.data.triplets import read_triplets
    from lsrbench.model.checkpoint import resolve_model
    from lsrbench.model.train import train_splade

    base, _ = split_run_name(run)
    path = resolve_model(entry, mirror, cache_dir, config_file, base)
    summary = train_splade(
        path, read_triplets(triplets_path), recipe, model_dir, log_path,
        k=k_value, mode=mode, head_scale=entry["head_scale"], head_scale_mode=entry["head_scale_mode"],
        trust_remote_code=entry.get("trust_remote_code", False), revision=entry.get("revision"),
        checkpoint_dir=checkpoint_dir, checkpoint_steps=checkpoint_steps, config_file=config_file,
        report_to=report_to or (),
    )
    return {"backbone": run, "k": k, **summary["status"]}, summary, path


def _write_train_provenance(prov_path, config_hash, run, entry, k, k_value, recipe, summary, path, sources,
                            triplets_path, model_dir, log_path, status_path, checkpoint_steps):
    from lsrbench.model.checkpoint import resolved_revision

    inputs = [*sources, triplets_path] + ([path] if Path(path).is_dir() else [])
    revision = {"requested": entry.get("revision"), "resolved": resolved_revision(path, entry.get("revision"))}
    write_json(prov_path, provenance("train", config_hash, recipe["seed"], backbone=run, k=k, k_value=k_value,
                                     model=entry["model"], resolved_path=path, model_revision=revision,
                                     head_scale=entry["head_scale"], head_scale_mode=entry["head_scale_mode"],
                                     recipe=recipe, summary=summary, checkpoint_steps=checkpoint_steps,
                                     head_norms=json.loads(Path(sources[0]).read_text()),  # norms_json, always first
                                     **manifest_fields(prov_path, inputs, [model_dir, log_path, status_path])))


def probe(backbone: str, ks: list, recipe: dict, n_triplets: int, gradients: bool, config_hash: str, entry: dict,
          mirror, cache_dir: str, config_file: str, triplets_jsonl: str, norms_json: str, probe_json: str,
          provenance_json: str, auto_k: dict | None = None, reference_norms_json: str | None = None,
          reference_probe_json: str | None = None) -> list[dict]:
    """The step-0 probe of one backbone at every ``[mode, k]`` of ``ks``, its checkpoint loaded once
    (:func:`lsrbench.model.probe.probe_backbone`; docs/probe.md), written as a JSON list of results.
    A k auto is resolved as training resolves it: from the norm files, or for a logit-scale
    statistic from this probe's own k = 1 and the reference's probe file."""
    from lsrbench.data.triplets import read_triplets
    from lsrbench.model.checkpoint import resolve_model
    from lsrbench.model.probe import probe_backbone

    path = resolve_model(entry, mirror, cache_dir, config_file, backbone)
    entry = _resolved_head_scale(entry, norms_json)
    auto = _probe_auto_k(backbone, auto_k, norms_json, reference_norms_json, reference_probe_json, config_file)
    results = probe_backbone(path, entry, [(k, mode) for mode, k in ks], read_triplets(triplets_jsonl), recipe,
                             backbone=backbone, n_triplets=n_triplets, auto_k=auto, gradients=gradients,
                             config_file=config_file)
    write_json(probe_json, results)
    inputs = [p for p in (triplets_jsonl, norms_json, reference_norms_json, reference_probe_json) if p]
    write_json(provenance_json, provenance("probe", config_hash, recipe["seed"], backbone=backbone, model=entry["model"],
                                           resolved_path=path, runs=[[r["mode"], r["k"]] for r in results],
                                           **manifest_fields(provenance_json, inputs + ([path] if Path(path).is_dir() else []),
                                                             [probe_json])))
    log.info("probe %s: %s", backbone, "; ".join(
        f"{r['backbone']} k={r['k']}: score scale {r['score_scale']}, ranking loss {r['ranking_loss']}" for r in results))
    return results


def _probe_auto_k(backbone: str, auto_k: dict | None, norms_json: str, reference_norms_json: str | None,
                  reference_probe_json: str | None, config_file: str):
    """The probe's k auto: the number training uses (the norm files), or, for a logit-scale
    statistic, a function of the results probed before it (its own k = 1 over the reference's)."""
    if auto_k is None:
        return None
    from lsrbench.model.auto_k import auto_k_from_files, auto_k_ratio, read_head_statistic
    from lsrbench.model.probe_names import LOGIT_STATISTICS

    statistic = auto_k["statistic"]
    if statistic not in LOGIT_STATISTICS:
        return auto_k_from_files(norms_json, reference_norms_json, auto_k)

    def from_own_k1(results: list[dict]) -> float:
        # the forward pass at k = 1 is the same in every mode: its logit scale is the backbone's
        own = next((r[statistic] for r in results if r["k_value"] == 1.0 and r.get(statistic)), None)
        if own is None:
            raise InputError(config_file, "auto_k.statistic", f"{backbone} has no finite positive {statistic} at k = 1 "
                                                              "for k auto to divide")
        ref = own if reference_probe_json is None else read_head_statistic(norms_json, statistic, reference_probe_json)
        return auto_k_ratio({statistic: own}, {statistic: ref}, statistic)

    return from_own_k1


def released(run: str, query_max_length: int, document_max_length: int, config_hash: str, entry: dict, mirror,
             cache_dir: str, config_file: str, norms_json: str, model_dir: str, train_log: str, provenance_json: str,
             status_json: str) -> dict:
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
    write_train_log(train_log, [])
    status = {"backbone": run, "k": "1", "status": "ok", "released": True}
    write_json(status_json, status)
    revision = {"requested": entry.get("revision"), "resolved": resolved_revision(path, entry.get("revision"))}
    inputs = [norms_json] + ([path] if Path(path).is_dir() else [])
    write_json(provenance_json, provenance("released", config_hash, None, backbone=run, k="1", k_value=1.0,
                                           model=entry["model"], resolved_path=path, model_revision=revision,
                                           released=True, trained=False, released_format=fmt,
                                           head_norms=json.loads(Path(norms_json).read_text()),
                                           **manifest_fields(provenance_json, inputs,
                                                             [model_dir, train_log, status_json])))
    log.info("released %s: %s checkpoint %s saved as a SparseEncoder without training (k = 1)", run, fmt, path)
    return status


def index(dataset: str, model_dir: str, data_dir: str, batch_size: int, precision: str, query_max_length: int,
          document_max_length: int, queries_npz: str, docs_npz: str | None = None, shard_size: int | None = None,
          shard_dir: str | None = None) -> dict:
    """Encode the evaluated corpus and its queries to CSR ``.npz`` files with their ids
    (:func:`lsrbench.index.indexing.index_dataset`), truncated at the evaluation's token lengths
    (``evaluation.query_max_length`` / ``document_max_length``), not the training ones. Without
    ``docs_npz`` only the queries (a dataset scored against another dataset's documents)."""
    from lsrbench.index.indexing import index_dataset

    return index_dataset(model_dir, _read_folder(data_dir), batch_size, queries_npz, docs_npz,
                         shard_size=shard_size, shard_dir=shard_dir, precision=precision,
                         query_max_length=query_max_length, document_max_length=document_max_length, name=dataset)


def evaluate(run: str, k: str, dataset: str, top_k: int, measures: list[str], skip_identical_ids: bool,
             collapse_max_active_share: float, config_hash: str, data_dir: str, docs_npz: str, queries_npz: str,
             train_status: str, run_trec: str, metrics_tsv: str, perquery_tsv: str, status_json: str,
             provenance_json: str, empty_results: str = "zero") -> dict:
    """Exact top-k retrieval, TREC run, ir_measures metrics, FLOPs and active dims as tidy rows.

    ``empty_results`` (the dataset's: ``zero``, ``skip`` or ``fill``) says how a judged query that
    retrieved nothing counts (:func:`lsrbench.evaluate.metrics.evaluate_run`).

    A collapsed run (training stopped on a NaN/inf loss, all-zero vectors, or documents activating
    more than ``collapse_max_active_share`` of the vocabulary on average) is still evaluated: its
    metrics are written with a ``collapsed`` row of 1.0 (0.0 otherwise), and ``status_json`` says why.
    """
    from lsrbench.evaluate.collapse import collapse_status
    from lsrbench.evaluate.evaluation import checked_rows, evaluate_vectors, load_vectors
    from lsrbench.evaluate.tidy import write_metric_rows
    from lsrbench.evaluate.trec import write_trec_run

    ds = _read_folder(data_dir)
    docs, doc_ids, queries, query_ids = load_vectors(docs_npz, queries_npz, ds, data_dir)
    out = evaluate_vectors(ds, docs, doc_ids, queries, query_ids, top_k=top_k, measures=measures,
                           skip_identical_ids=skip_identical_ids, empty_results=empty_results)
    write_trec_run(run_trec, out["results"], tag=f"lsrbench-{run}-k{k}")
    log.info("evaluate %s k=%s on %s: %d queries x %d documents, search %.1f s; %s", run, k, dataset,
             len(query_ids), len(doc_ids), out["search_seconds"], _rows_text(out["rows"]))
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


def pooled_flops(run: str, k: str, datasets: list[str], docs_npz, queries_npz, metrics_tsv: str,
                 provenance_json: str) -> dict:
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
    write_metric_rows(metrics_tsv, None, run, k, POOLED, rows)
    write_json(provenance_json, provenance("pooled_flops", "", None, backbone=run, k=k, datasets=list(datasets),
                                           **manifest_fields(provenance_json, docs_npz + queries_npz, [metrics_tsv])))
    return dict(rows)


def bm25(dataset: str, top_k: int, measures: list[str], skip_identical_ids: bool, settings: dict, data_dir: str,
         run_trec: str, metrics_tsv: str, perquery_tsv: str, provenance_json: str, empty_results: str = "zero") -> None:
    """The BM25 reference row on one evaluated dataset, as tidy rows: ``settings`` (report.bm25_settings:
    k1, b, analyzer; Anserini's defaults: k1=0.9, b=0.4, Lucene's English analyzer)."""
    from lsrbench.data.bm25 import bm25_run
    from lsrbench.evaluate.metrics import evaluate_run
    from lsrbench.evaluate.tidy import write_metric_rows
    from lsrbench.evaluate.trec import write_trec_run
    ds = _read_folder(data_dir)
    results = bm25_run(ds, top_k, skip_identical_ids, **settings)
    write_trec_run(run_trec, results, tag="lsrbench-bm25s")
    aggregate, per_query = evaluate_run({q: dict(h) for q, h in results.items()}, ds.qrels, measures,
                                        empty_results=empty_results, corpus_ids=list(ds.corpus), depth=top_k,
                                        skip_identical_ids=skip_identical_ids)
    log.info("bm25 on %s: %d queries x %d documents; %s", dataset, len(ds.queries), len(ds.corpus),
             _rows_text(aggregate.items()))
    write_metric_rows(metrics_tsv, perquery_tsv, BM25, NO_K, dataset, list(aggregate.items()), per_query)
    write_json(provenance_json, provenance("bm25", "", None, dataset=dataset, top_k=top_k, **settings,
                                           **manifest_fields(provenance_json, [data_dir],
                                                             [run_trec, metrics_tsv, perquery_tsv])))


def _rows_text(rows) -> str:
    return ", ".join(f"{measure} {value:.4g}" for measure, value in rows)


def config_snapshot(config: dict, files: list[str], backbone_order: list[str], config_yaml: str) -> None:
    """The config the reports of this results folder are made with, readable (its id is the hash
    of exactly this: the settings that decide results, and the files they were read from)."""
    import yaml

    from lsrbench.atomic import atomic_open

    with atomic_open(config_yaml, "w", encoding="utf-8") as fh:
        fh.write(f"# the config the reports in this results folder were made with, read from: {', '.join(files)}\n")
        backbones = config.get("backbones", {})
        yaml.safe_dump({**config, "backbones": {b: backbones[b] for b in backbone_order}}, fh, sort_keys=False,
                       allow_unicode=True)

