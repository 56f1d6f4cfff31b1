"""One function per DAG stage, with explicit inputs and outputs; the Snakemake rules call these."""

from __future__ import annotations

import json
import math
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
              "head_scale": entry.get("head_scale", 1), "synthetic": entry.get("synthetic", False),
              "architecture": type(model).__name__, **head_norms(model)}
    write_json(out_json, result)
    return result


def dataset(name: str, entry: dict, mirror, datasets_file: str, cache_dir: str, pool_depth,
            full_dir: str, eval_dir: str, eval_info: str) -> None:
    """Bring a dataset into the canonical BEIR layout (``full_dir``) and the evaluated subset (``eval_dir``)."""
    from .data import pooled_subset, resolve_dataset, write_beir_folder

    ds = resolve_dataset(name, entry, mirror, datasets_file, cache_dir, unknown_docs=entry.get("unknown_docs", "error"))
    split = entry.get("split", "test")
    write_beir_folder(ds, full_dir, split=split)
    evaluated = pooled_subset(ds, pool_depth) if pool_depth else ds
    write_beir_folder(evaluated, eval_dir, split=split)
    write_json(eval_info, {
        "name": name, "split": split, "pool_depth": pool_depth,
        "documents": len(evaluated.corpus), "full_documents": len(ds.corpus),
        "queries": len(evaluated.queries), "dropped_queries": ds.dropped_queries,
        "judgments": sum(len(v) for v in evaluated.qrels.values()),
    })


def _load_beir(folder: str, entry: dict):
    from .data import load_beir_folder

    return load_beir_folder(folder, split=entry.get("split", "test"), unknown_docs=entry.get("unknown_docs", "error"))


def triplets(full_dir: str, dataset_entry: dict, n: int, seed: int, out: str) -> None:
    """Pseudo-query training triplets cropped from a corpus (never its test queries)."""
    from .triplets import pseudo_query_triplets, write_triplets

    ds = _load_beir(full_dir, dataset_entry)
    write_triplets(out, pseudo_query_triplets(ds.corpus, n, seed))


def train(backbone: str, entry: dict, k: str, recipe: dict, mirror, cache_dir: str, config_file: str,
          norms_json: str, triplets_path: str, model_dir: str, log_path: str, prov_path: str,
          config_hash: str) -> None:
    """Rescale by ``k`` and train; writes the SparseEncoder model, the per-step log and provenance
    (which records the head norms of the backbone as loaded, from the norm stage)."""
    from .models import resolve_model
    from .train import train_splade
    from .triplets import read_triplets

    path = resolve_model(entry, mirror, cache_dir, config_file, backbone)
    summary = train_splade(
        path, read_triplets(triplets_path), recipe, model_dir, log_path,
        k=float(k), mode=entry.get("rescale_mode", "shared"), head_scale=entry.get("head_scale", 1.0),
        trust_remote_code=entry.get("trust_remote_code", False), revision=entry.get("revision"),
    )
    write_json(prov_path, provenance("train", config_hash, recipe["seed"], backbone=backbone, k=k,
                                     model=entry["model"], resolved_path=path, recipe=recipe, summary=summary,
                                     head_norms=json.loads(Path(norms_json).read_text())))


def index(model_dir: str, data_dir: str, dataset_entry: dict, batch_size: int, docs_out: str, queries_out: str) -> None:
    """Encode the evaluated corpus and its queries to CSR ``.npz`` files with their ids."""
    from sentence_transformers import SparseEncoder

    from .encode import encode_texts
    from .models import default_device
    from .sparse import save_sparse

    ds = _load_beir(data_dir, dataset_entry)
    model = SparseEncoder(model_dir, device=default_device())
    doc_ids, query_ids = list(ds.corpus), list(ds.queries)
    save_sparse(docs_out, encode_texts(model, [ds.corpus[i] for i in doc_ids], "document", batch_size), doc_ids)
    save_sparse(queries_out, encode_texts(model, [ds.queries[i] for i in query_ids], "query", batch_size), query_ids)


def evaluate(backbone: str, k: str, dataset_name: str, dataset_entry: dict, data_dir: str, docs_npz: str,
             queries_npz: str, top_k: int, measures: list[str], run_out: str, metrics_out: str,
             perquery_out: str, prov_out: str, config_hash: str) -> dict:
    """Exact top-k retrieval, TREC run, ir_measures metrics, FLOPs and active dims as tidy rows."""
    import time

    from .atomic import atomic_open
    from .metrics import evaluate_run, flops, mean_active_dims
    from .retrieval import search, write_trec_run
    from .sparse import load_sparse

    ds = _load_beir(data_dir, dataset_entry)
    docs, doc_ids = load_sparse(docs_npz)
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
    for m, v in rows:
        if not math.isfinite(v):
            raise InputError(metrics_out, m, f"non-finite value {v}")
    with atomic_open(metrics_out, "w", encoding="utf-8") as fh:
        fh.write("backbone\tk\tdataset\tmeasure\tvalue\n")
        for m, v in rows:
            fh.write(f"{backbone}\t{k}\t{dataset_name}\t{m}\t{v!r}\n")
    with atomic_open(perquery_out, "w", encoding="utf-8") as fh:
        fh.write("query_id\tmeasure\tvalue\n")
        for qid, m, v in per_query:
            fh.write(f"{qid}\t{m}\t{v!r}\n")
    write_json(prov_out, provenance("evaluate", config_hash, None, backbone=backbone, k=k, dataset=dataset_name,
                                    top_k=top_k, search_seconds=round(search_s, 3),
                                    documents=len(doc_ids), queries=len(query_ids)))
    return dict(rows)


def report(kind: str, inputs: list[str], output: str, report_cfg: dict, backbones: dict,
           norm_names: list[str] | None = None) -> None:
    """The report rules: ``collect`` (metrics.csv), ``table1``, ``norms``, ``tradeoff``."""
    from . import report as rep

    inputs = [inputs] if isinstance(inputs, str) else list(inputs)
    if kind == "collect":
        rep.collect_metrics(inputs, output)
    elif kind == "table1":
        rep.write_table1(inputs[0], report_cfg, backbones, output)
    elif kind == "norms":
        rep.write_norms_table(dict(zip(norm_names, inputs)), backbones, output)
    elif kind == "tradeoff":
        rep.plot_tradeoff(inputs[0], report_cfg, backbones, output)
    else:
        raise ValueError(kind)
