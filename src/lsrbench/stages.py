"""One function per DAG stage, with explicit inputs and outputs; the Snakemake rules call these."""

from __future__ import annotations

import inspect
import json
import math
import os
from pathlib import Path

from .errors import InputError
from .provenance import provenance, write_json


def norm(backbone: str, entry: dict, mirror, cache_dir: str, config_file: str, out_json: str) -> dict:
    """Load the backbone (checking it really has an MLM head) and write its head norms."""
    from .models import load_mlm, resolve_model
    from .norms import head_norms
    from .rescale import rescale_mlm_head

    path = resolve_model(entry, mirror, cache_dir, config_file, backbone)
    model = load_mlm(path, config_file, f"backbones.{backbone}.model",
                     trust_remote_code=entry.get("trust_remote_code", False), revision=entry.get("revision"))
    if entry.get("head_scale", 1) != 1:
        rescale_mlm_head(model, 1.0 / entry["head_scale"], "shared")
    result = {"backbone": backbone, "model": entry["model"], "resolved_path": path,
              "head_scale": entry.get("head_scale", 1),
              "architecture": type(model).__name__, **head_norms(model)}
    write_json(out_json, result)
    return result


def dataset(name: str, entry: dict, mirror, datasets_file: str, cache_dir: str, pool_depth,
            full_dir: str, eval_dir: str, eval_info: str) -> None:
    """Bring a dataset into the canonical BEIR layout (``full_dir``) and the evaluated subset (``eval_dir``)."""
    from .data import pooled_subset, resolve_dataset, write_beir_folder

    ds = resolve_dataset(name, entry, mirror, datasets_file, cache_dir, unknown_docs=entry.get("unknown_docs", "error"))
    split = entry.get("split", "test")
    # One copy of each distinct corpus file under results/data/.corpora, hard-linked into full/ and
    # eval/ (the same file without pooling) and into every dataset sharing it (MS MARCO dev, DL19).
    store = Path(full_dir).parent.parent / ".corpora"
    write_beir_folder(ds, full_dir, split=split, corpus_store=store)
    evaluated = pooled_subset(ds, pool_depth) if pool_depth else ds
    write_beir_folder(evaluated, eval_dir, split=split, corpus_store=store)
    write_json(eval_info, {
        "name": name, "split": split, "pool_depth": pool_depth,
        "documents": len(evaluated.corpus), "full_documents": len(ds.corpus),
        "queries": len(evaluated.queries), "dropped_queries": ds.dropped_queries,
        "unknown_doc_qrels": ds.unknown_doc_qrels,
        "judgments": sum(len(v) for v in evaluated.qrels.values()),
    })


def _load_beir(folder: str, entry: dict):
    from .data import load_beir_folder

    return load_beir_folder(folder, split=entry.get("split", "test"), unknown_docs=entry.get("unknown_docs", "error"))


def triplets(training_data: dict, n: int, seed: int, out: str, full_dir: str | None = None,
             dataset_entry: dict | None = None, mirror=None, cache_dir: str = "cache",
             config_file: str = "config") -> None:
    """Training triplets of ``training_data.source``: pseudo-queries cropped from a corpus (never its
    test queries), an hf dataset or ir_datasets docpairs (from the mirror when prefetched there)."""
    from .triplets import build_triplets

    build_triplets(training_data, n, seed, out, mirror=mirror, cache_dir=cache_dir, config_file=config_file,
                   full_dir=full_dir, dataset_entry=dataset_entry)


def train(backbone: str, entry: dict, k: str, recipe: dict, mirror, cache_dir: str, config_file: str,
          norms_json: str, triplets_path: str, model_dir: str, log_path: str, prov_path: str,
          config_hash: str, reference_norms_json: str | None = None, auto_k: dict | None = None,
          status_path: str | None = None, checkpoint_dir: str | None = None,
          checkpoint_steps: int | None = None, processes: int | str = 1) -> dict:
    """Rescale by ``k`` and train; writes the SparseEncoder model, the per-step log and provenance
    (which records the head norms of the backbone as loaded, from the norm stage).

    ``backbone`` is the run name (``<backbone>+untie`` for the untie mode, see config.run_name);
    ``k == "auto"`` is resolved from the head norms (:func:`resolve_auto_k`).

    Resumable: with ``checkpoint_dir`` (beside the outputs, not an output: Snakemake deletes the
    outputs of a failed job) a restarted job continues from its latest complete checkpoint; the
    checkpoints are removed once every output is written. A NaN/inf loss is a result, not a crash:
    ``status_path`` records ``collapsed: ...`` with the step and the last finite loss, and the
    last all-finite weights are saved as the model so that the DAG carries on.

    ``processes`` (``auto``: one per visible CUDA GPU): more than one trains data-parallel through
    torchrun (:func:`_train_distributed`); the recipe's batch is the global batch, split across the
    processes, and documents are shared as in-batch negatives across them."""
    from .train import training_processes, world

    n = training_processes(processes)
    if n > 1 and "LOCAL_RANK" not in os.environ:
        if recipe["batch_size"] % n:
            raise InputError(config_file, "recipe.batch_size",
                             f"{recipe['batch_size']} is not a multiple of the {n} training processes (train_processes)")
        call = {key: value for key, value in locals().items()
                if key in inspect.signature(train).parameters}
        return _train_distributed(n, call)
    from .config import split_run_name
    from .models import resolve_model, resolved_revision
    from .train import discard_checkpoints, train_splade
    from .triplets import read_triplets
    from .verify import manifest_fields

    base, _ = split_run_name(backbone)
    k_value = resolve_auto_k(norms_json, reference_norms_json, auto_k) if k == "auto" else float(k)
    path = resolve_model(entry, mirror, cache_dir, config_file, base)
    summary = train_splade(
        path, read_triplets(triplets_path), recipe, model_dir, log_path,
        k=k_value, mode=entry.get("mode", "shared"), head_scale=entry.get("head_scale", 1.0),
        trust_remote_code=entry.get("trust_remote_code", False), revision=entry.get("revision"),
        checkpoint_dir=checkpoint_dir, checkpoint_steps=checkpoint_steps,
    )
    status = {"backbone": backbone, "k": k, **summary["status"]}
    if world()[0] != 0:
        return status  # the main process writes the outputs
    if status_path:
        write_json(status_path, status)
    inputs = [norms_json, reference_norms_json, triplets_path] + ([path] if Path(path).is_dir() else [])
    revision = {"requested": entry.get("revision"), "resolved": resolved_revision(path, entry.get("revision"))}
    write_json(prov_path, provenance("train", config_hash, recipe["seed"], backbone=backbone, k=k, k_value=k_value,
                                     model=entry["model"], resolved_path=path, model_revision=revision,
                                     recipe=recipe, summary=summary,
                                     checkpoint_steps=checkpoint_steps,
                                     head_norms=json.loads(Path(norms_json).read_text()),
                                     **manifest_fields(prov_path, inputs, [model_dir, log_path, status_path])))
    if checkpoint_dir:
        discard_checkpoints(checkpoint_dir)
    return status


def _train_distributed(n: int, call: dict) -> dict:
    """Run :func:`train` in ``n`` processes under torchrun (one per GPU; gloo on CPU) and return the
    main process's status. Each process gets its share of this job's threads."""
    import subprocess
    import sys
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as fh:
        json.dump(call, fh)
    env = dict(os.environ)
    threads = max(1, int(env.get("OMP_NUM_THREADS") or os.cpu_count() or 1) // n)
    env.update({var: str(threads) for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")})
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={n}",
           "-m", "lsrbench.train_worker", fh.name]
    try:
        proc = subprocess.run(cmd, env=env)
    finally:
        os.unlink(fh.name)
    if proc.returncode != 0:
        raise RuntimeError(f"distributed training ({n} processes) failed with exit code {proc.returncode}")
    return json.loads(Path(call["status_path"]).read_text(encoding="utf-8"))


def resolve_auto_k(norms_json: str, reference_norms_json: str, auto_k: dict) -> float:
    """``k: auto``: the backbone's head norm over the reference backbone's (statistic from config)."""
    stat = auto_k.get("statistic", "frobenius_norm")
    mine = json.loads(Path(norms_json).read_text())[stat]
    ref = json.loads(Path(reference_norms_json).read_text())[stat]
    return float(mine) / float(ref)


def index(model_dir: str, data_dir: str, dataset_entry: dict, batch_size: int, docs_out: str | None = None,
          queries_out: str | None = None, shard_size: int | None = None, shard_dir: str | None = None,
          precision: str = "fp32") -> dict:
    """Encode the evaluated corpus and its queries to CSR ``.npz`` files with their ids. Without
    ``docs_out`` only the queries (a dataset scored against another dataset's documents).

    With ``shard_size`` (documents per shard; None or 0: one shot) the corpus is encoded in
    resumable shards kept in ``shard_dir`` (default: ``doc_shards/`` beside ``docs_out``; not an
    output, so it survives a failed job): a restarted job encodes only the shards that are
    missing, and ``docs_out`` is the same file, byte for byte, as a one-shot encode's
    (:mod:`lsrbench.shards`). The shards are removed once both outputs are written. Queries are
    encoded in one shot. ``precision``: ``fp32``, ``bf16`` or ``auto``
    (:func:`lsrbench.models.encode_autocast`; bf16 vectors differ from fp32 ones at bf16 rounding).
    Returns ``{"documents": {"shards", "shard_rows", "reused", "encoded"}, "precision": <resolved>}``.
    """
    from sentence_transformers import SparseEncoder

    from .encode import EncodePlan, encode_texts
    from .models import default_device, encode_autocast
    from .shards import discard_shards, encode_to_npz, texts_sha256, tree_sha256
    from .sparse import save_sparse

    if queries_out is None:
        raise ValueError("index: queries_out is required")
    ds = _load_beir(data_dir, dataset_entry)
    model = SparseEncoder(model_dir, device=default_device())
    autocast, precision = encode_autocast(model.device, precision)
    doc_ids, query_ids = list(ds.corpus), list(ds.queries)
    doc_texts = [ds.corpus[i] for i in doc_ids] if docs_out else []
    plan = EncodePlan(model, doc_texts, "document", batch_size) if docs_out else None
    shards = len(plan.shards(shard_size)) if docs_out else 0
    if not docs_out:
        stats = None
    elif shards > 1:
        shard_dir = shard_dir or str(Path(docs_out).parent / "doc_shards")
        key_parts = {"model_sha256": tree_sha256(model_dir), "texts_sha256": texts_sha256(doc_ids, doc_texts),
                     "precision": precision}
        with autocast:
            stats = encode_to_npz(plan, doc_ids, docs_out, shard_size, shard_dir, key_parts,
                                  fix=lambda m: _zero_non_finite(m, docs_out))
    else:  # one shot
        with autocast:
            docs = plan.encode_all()
        save_sparse(docs_out, _zero_non_finite(docs, docs_out), doc_ids)
        del docs
        stats = {"shards": 1, "shard_rows": len(doc_ids), "reused": 0, "encoded": 1}
    del plan
    with autocast:
        queries = encode_texts(model, [ds.queries[i] for i in query_ids], "query", batch_size)
    save_sparse(queries_out, _zero_non_finite(queries, queries_out), query_ids)
    if shards > 1:
        discard_shards(shard_dir)
    return {"documents": stats, "precision": precision}


def _zero_non_finite(matrix, path: str):
    """A collapsed run's model can emit NaN/inf weights; the train stage has already recorded it as
    collapsed (its status.json, read by evaluate), so those weights are zeroed rather than failing
    the DAG, and the count is logged."""
    import logging

    import numpy as np

    bad = ~np.isfinite(matrix.data)
    if bad.any():
        logging.getLogger(__name__).warning("%s: %d non-finite weights set to 0 (collapsed model)", path, int(bad.sum()))
        matrix.data[bad] = 0
        matrix.eliminate_zeros()
    return matrix


def evaluate(backbone: str, k: str, dataset_name: str, dataset_entry: dict, data_dir: str, docs_npz: str,
             queries_npz: str, top_k: int, measures: list[str], run_out: str, metrics_out: str,
             perquery_out: str, prov_out: str, config_hash: str, train_status: str | None = None,
             status_out: str | None = None, collapse_max_active_share: float | None = None) -> dict:
    """Exact top-k retrieval, TREC run, ir_measures metrics, FLOPs and active dims as tidy rows.

    A collapsed run (training stopped on a NaN/inf loss, all-zero vectors, or documents activating
    more than ``collapse_max_active_share`` of the vocabulary on average) is still evaluated: its
    metrics are written with a ``collapsed`` row of 1.0 (0.0 otherwise), and ``status_out`` says why.
    """
    import time

    from .metrics import evaluate_run, flops, mean_active_dims
    from .retrieval import search, write_trec_run
    from .sparse import load_sparse
    from .verify import manifest_fields

    ds = _load_beir(data_dir, dataset_entry)
    # Memory-mapped: the inverted index built from it is then the only copy of the postings in memory.
    docs, doc_ids = load_sparse(docs_npz, mmap=True)
    # docs.npz may be another dataset's (the same corpus): its documents must be this corpus's.
    if len(doc_ids) != len(ds.corpus) or doc_ids != list(ds.corpus):
        raise InputError(docs_npz, "ids", f"its {len(doc_ids)} documents are not the {len(ds.corpus)} of {data_dir}")
    queries, query_ids = load_sparse(queries_npz)
    if docs.shape[1] != queries.shape[1]:
        raise InputError(queries_npz, "shape", f"vocabulary {queries.shape[1]} differs from the documents' {docs.shape[1]}")
    start = time.time()
    results = search(queries, query_ids, docs, doc_ids, k=top_k,
                     skip_identical_ids=dataset_entry.get("skip_identical_ids", False))
    search_s = time.time() - start
    write_trec_run(run_out, results, tag=f"lsrbench-{backbone}-k{k}")
    run = {q: dict(hits) for q, hits in results.items()}
    measures = dataset_entry.get("measures", measures)
    aggregate, per_query = evaluate_run(run, ds.qrels, measures)
    rows = [(m, v) for m, v in aggregate.items()]
    rows += [("FLOPs", flops(queries, docs)), ("query_active_dims", mean_active_dims(queries)),
             ("doc_active_dims", mean_active_dims(docs))]
    status = collapse_status(train_status, docs, queries, collapse_max_active_share)
    rows.append(("collapsed", 1.0 if status["collapsed"] else 0.0))
    for m, v in rows:
        if not math.isfinite(v):
            raise InputError(metrics_out, m, f"non-finite value {v}")
    _write_metric_rows(metrics_out, perquery_out, backbone, k, dataset_name, rows, per_query)
    if status_out:
        write_json(status_out, {"backbone": backbone, "k": k, "dataset": dataset_name, **status})
    write_json(prov_out, provenance("evaluate", config_hash, None, backbone=backbone, k=k, dataset=dataset_name,
                                    top_k=top_k, search_seconds=round(search_s, 3),
                                    documents=len(doc_ids), queries=len(query_ids),
                                    **manifest_fields(prov_out, [data_dir, docs_npz, queries_npz, train_status],
                                                      [run_out, metrics_out, perquery_out, status_out])))
    return dict(rows)


def pooled_flops(backbone: str, k: str, datasets: list[str], docs_npz, queries_npz, metrics_out: str,
                 prov_out: str) -> dict:
    """FLOPs and mean active dims of one run pooled over ``datasets`` (one ``docs_npz`` and
    ``queries_npz`` each, in that order) exactly as sentence-transformers' SparseNanoBEIREvaluator
    pools them (see :mod:`lsrbench.nanobeir`), as tidy rows of the dataset :data:`dag.POOLED`."""
    from .dag import POOLED
    from .nanobeir import pooled_active_dims, pooled_flops as pool
    from .sparse import load_sparse
    from .verify import manifest_fields

    docs_npz, queries_npz = _as_list(docs_npz), _as_list(queries_npz)
    if not (len(datasets) == len(docs_npz) == len(queries_npz)):
        raise ValueError(f"pooled_flops: {len(datasets)} datasets, {len(docs_npz)} docs, {len(queries_npz)} queries")
    pairs = []
    for q_path, d_path in zip(queries_npz, docs_npz):
        queries, _ = load_sparse(q_path)
        docs, _ = load_sparse(d_path)
        if docs.shape[1] != queries.shape[1]:
            raise InputError(q_path, "shape", f"vocabulary {queries.shape[1]} differs from the documents' {docs.shape[1]}")
        pairs.append((queries, docs))
    rows = [("FLOPs", pool(pairs)), ("query_active_dims", pooled_active_dims([q for q, _ in pairs])),
            ("doc_active_dims", pooled_active_dims([d for _, d in pairs]))]
    _write_metric_rows(metrics_out, None, backbone, k, POOLED, rows, None)
    write_json(prov_out, provenance("pooled_flops", "", None, backbone=backbone, k=k, datasets=list(datasets),
                                    **manifest_fields(prov_out, docs_npz + queries_npz, [metrics_out])))
    return dict(rows)


def collapse_status(train_status: str | None, docs, queries, max_active_share: float | None) -> dict:
    """``{"status": "ok" | "collapsed: <reasons>", "collapsed": bool, "reasons": [...], ...}`` for one
    evaluated run: the training status (NaN/inf loss) plus what its vectors show."""
    reasons = []
    info: dict = {}
    if train_status:
        trained = json.loads(Path(train_status).read_text(encoding="utf-8"))
        info["train"] = trained
        if trained.get("status", "ok") != "ok":
            reasons.append(trained.get("reason") or trained["status"].removeprefix("collapsed: "))
            info.update({key: trained.get(key) for key in ("step", "last_finite_loss") if key in trained})
    for name, m in (("document", docs), ("query", queries)):
        if m.shape[0] and m.count_nonzero() == 0:
            reasons.append(f"all-zero {name} vectors")
    if max_active_share is not None and docs.shape[0] and docs.shape[1]:
        share = docs.count_nonzero() / docs.shape[0] / docs.shape[1]
        info["doc_active_share"] = share
        if share > max_active_share:
            reasons.append(f"documents activate {share:.1%} of the vocabulary on average "
                           f"(more than collapse_max_active_share {max_active_share:g})")
    return {"status": "collapsed: " + "; ".join(reasons) if reasons else "ok", "collapsed": bool(reasons),
            "reasons": reasons, **info}


def bm25(dataset_name: str, dataset_entry: dict, data_dir: str, top_k: int, measures: list[str], run_out: str,
         metrics_out: str, perquery_out: str, prov_out: str) -> None:
    """The BM25 reference row (bm25s, k1=0.9, b=0.4) on one evaluated dataset, as tidy rows."""
    from .data import bm25_topk
    from .metrics import evaluate_run
    from .report import BM25, NO_K
    from .retrieval import write_trec_run

    ds = _load_beir(data_dir, dataset_entry)
    doc_ids, query_ids = list(ds.corpus), list(ds.queries)
    idx, scores = bm25_topk([ds.corpus[d] for d in doc_ids], [ds.queries[q] for q in query_ids], top_k + 1)
    skip = dataset_entry.get("skip_identical_ids", False)
    results = {}
    for qi, qid in enumerate(query_ids):
        hits = [(doc_ids[i], float(s)) for i, s in zip(idx[qi], scores[qi]) if i >= 0 and not (skip and doc_ids[i] == qid)]
        results[qid] = hits[:top_k]
    write_trec_run(run_out, results, tag="lsrbench-bm25s")
    aggregate, per_query = evaluate_run({q: dict(h) for q, h in results.items()}, ds.qrels, dataset_entry.get("measures", measures))
    _write_metric_rows(metrics_out, perquery_out, BM25, NO_K, dataset_name, list(aggregate.items()), per_query)
    from .verify import manifest_fields

    write_json(prov_out, provenance("bm25", "", None, dataset=dataset_name, top_k=top_k, k1=0.9, b=0.4,
                                    **manifest_fields(prov_out, [data_dir], [run_out, metrics_out, perquery_out])))


def _write_metric_rows(metrics_out, perquery_out, backbone, k, dataset_name, rows, per_query) -> None:
    from .atomic import atomic_open

    with atomic_open(metrics_out, "w", encoding="utf-8") as fh:
        fh.write("backbone\tk\tdataset\tmeasure\tvalue\n")
        for m, v in rows:
            fh.write(f"{backbone}\t{k}\t{dataset_name}\t{m}\t{v!r}\n")
    if perquery_out is None:
        return
    with atomic_open(perquery_out, "w", encoding="utf-8") as fh:
        fh.write("query_id\tmeasure\tvalue\n")
        for qid, m, v in per_query:
            fh.write(f"{qid}\t{m}\t{v!r}\n")


def _as_list(x) -> list[str]:
    return [x] if isinstance(x, str) else list(x)


def report_collect(metric_files, output: str) -> None:
    from .report import collect_metrics

    collect_metrics(_as_list(metric_files), output)


def report_table1(metrics_csv: str, norm_files, norm_names: list[str], report_cfg: dict, backbones: dict,
                  auto_k: dict | None, output: str, cells: str | None = None, reference_file=None) -> None:
    """table1.md, and beside it ``cells`` (table1.cells.json): every cell with the metrics.csv rows
    it comes from, which ``lsrbench verify`` checks the table against. ``reference_file`` is
    ``report_cfg["reference"]`` as a Snakemake input (so that editing it re-runs the table)."""
    from .report import write_table1

    write_table1(metrics_csv, report_cfg, backbones, output, dict(zip(norm_names, _as_list(norm_files))), auto_k,
                 cells_json=cells)


def report_table_beir(metrics_csv: str, report_cfg: dict, backbones: dict, output: str) -> None:
    from .report import write_table_beir

    write_table_beir(metrics_csv, report_cfg, backbones, output)


def report_norms(norm_files, norm_names: list[str], metrics_csv: str, report_cfg: dict, backbones: dict,
                 auto_k: dict | None, out_md: str, out_png: str) -> None:
    from . import report as rep
    from .atomic import atomic_open

    files = dict(zip(norm_names, _as_list(norm_files)))
    norms = {b: json.loads(Path(p).read_text()) for b, p in files.items()}
    text = rep.norms_markdown(files, backbones) + rep.auto_k_markdown(rep.read_metrics(metrics_csv), report_cfg, backbones, norms, auto_k)
    with atomic_open(out_md, "w", encoding="utf-8") as fh:
        fh.write(text)
    rep.plot_norms(files, metrics_csv, report_cfg, backbones, out_png)


def report_tradeoff(metrics_csv: str, report_cfg: dict, backbones: dict, out_png: str, out_pdf: str) -> None:
    from .report import plot_tradeoff

    plot_tradeoff(metrics_csv, report_cfg, backbones, out_png, out_pdf)


def report_loss_curves(log_files, log_keys: list[str], backbones: dict, output: str) -> None:
    from .report import plot_loss_curves

    plot_loss_curves(dict(zip(log_keys, _as_list(log_files))), backbones, output)


def report_claims(metrics_csv: str, perquery_files, perquery_keys: list[list[str]], norm_files, norm_names: list[str],
                  log_files, log_keys: list[str], claims_cfg: dict, output: str) -> None:
    """Evaluate the config's claims on this run's numbers into claims.md."""
    import pandas as pd

    from .atomic import atomic_open
    from .claims import Evidence, claims_markdown, evaluate_claims
    from .report import read_metrics

    perquery = {tuple(key): pd.read_csv(path, sep="\t", dtype={"query_id": str})
                for key, path in zip(perquery_keys, _as_list(perquery_files))}
    norms = {b: json.loads(Path(p).read_text()) for b, p in zip(norm_names, _as_list(norm_files))}
    logs = {}
    for key, path in zip(log_keys, _as_list(log_files)):
        run, k = key.rsplit("|", 1)
        logs[(run, k)] = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    ev = Evidence(read_metrics(metrics_csv), perquery, norms, logs)
    with atomic_open(output, "w", encoding="utf-8") as fh:
        fh.write(claims_markdown(evaluate_claims(ev, claims_cfg), claims_cfg))
