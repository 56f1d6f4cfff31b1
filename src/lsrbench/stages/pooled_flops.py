"""The pooled_flops stage: one run's FLOPs and active dims pooled over report.flops_datasets as
SparseNanoBEIREvaluator pools them."""

from __future__ import annotations

from lsrbench.config.evaluated import pooled_flops_datasets
from lsrbench.config.grid import run_keys
from lsrbench.dag.evaluated import docs_dataset, docs_npz, model_key
from lsrbench.dag.stage import Stage, as_list
from lsrbench.errors import InputError
from lsrbench.names import POOLED
from lsrbench.provenance import manifest_fields, provenance, write_json

__all__ = ["STAGE", "pooled_flops"]


def _identity(layout, key: dict) -> dict:
    names = pooled_flops_datasets(layout.config)
    model = model_key(key)
    return {"run": key["run"], "k": key["k"], "datasets": names,
            "docs": [layout.get("index", **model, dataset=docs_dataset(layout.config, d)).id for d in names],
            "queries": [layout.get("index", **model, dataset=d).id for d in names]}


def _inputs(layout, item) -> dict:
    model = model_key(item.fields)
    names = item.identity["datasets"]
    return {"docs_npz": [docs_npz(layout, model, d) for d in names],
            "queries_npz": [layout.get("index", **model, dataset=d).path("queries.npz") for d in names]}


def pooled_flops(run: str, k: str, datasets: list[str], docs_npz, queries_npz, metrics_tsv: str,
                 provenance_json: str) -> dict:
    """FLOPs and active dims of one run pooled over ``datasets`` (a ``docs_npz`` and ``queries_npz`` each), as
    tidy rows of :data:`lsrbench.names.POOLED`."""
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


STAGE = Stage(
    name="pooled_flops", kind="pooled", job=pooled_flops,
    priority=1,
    grid=lambda c: run_keys(c) if pooled_flops_datasets(c) else [],
    folder_fields=lambda layout, key: dict(layout.get("train", **model_key(key)).fields),
    identity=_identity,
    inputs=_inputs,
    outputs={"metrics_tsv": "metrics.tsv", "provenance_json": "provenance.json"},
    remade_if_changed=True,
)
