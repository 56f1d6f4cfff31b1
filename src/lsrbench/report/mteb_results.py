"""lsrbench's metrics in MTEB's result format (``lsrbench export-mteb``), written and read back with
mteb's own ``ResultCache``, so a run sits beside published MTEB / NanoBEIR results (Muennighoff et
al., "MTEB", EACL 2023)::

    <root>/results/lsrbench__<run>-k<k>/<revision>/<Task>.json   (+ model_meta.json, run_settings.jsonl)

(``lsrbench__<run>-k<k>-seed<s>`` per training seed, with several seeds: each seed is its own model.)

A NanoBEIR dataset is filed under MTEB's own task (``NanoSciFactRetrieval``, split ``train``, as
MTEB evaluates them); any other dataset under ``LocalBEIR-<dataset>``, split ``test``. Measures
mteb also has go under its keys (``nDCG@10`` -> ``ndcg_at_10``), the rest as ``lsrbench:<name>``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

from lsrbench.errors import InputError
from lsrbench.evaluate.mteb_check import task_metadata, mteb_key
from lsrbench.names import BM25, NO_SEED, POOLED, RUN_COLUMN, SEED
from lsrbench.provenance import recording_workdir, resolve_recorded
from lsrbench.report.reports.collect import METRICS_CSV, SOURCES_JSON

__all__ = ["MTEB_NANOBEIR_TASKS", "write_mteb_result", "load_mteb_result", "export_mteb_results", "evaluated_lengths"]

# lsrbench's NanoBEIR names (config/datasets.yaml, sentence-transformers' NanoBEIREvaluator) ->
# MTEB's task names (their metadata ships with mteb: no download).
MTEB_NANOBEIR_TASKS = {
    "NanoArguAna": "NanoArguAnaRetrieval", "NanoClimateFEVER": "NanoClimateFeverRetrieval",
    "NanoDBPedia": "NanoDBPediaRetrieval", "NanoFEVER": "NanoFEVERRetrieval", "NanoFiQA2018": "NanoFiQA2018Retrieval",
    "NanoHotpotQA": "NanoHotpotQARetrieval", "NanoMSMARCO": "NanoMSMARCORetrieval",
    "NanoNFCorpus": "NanoNFCorpusRetrieval", "NanoNQ": "NanoNQRetrieval", "NanoQuoraRetrieval": "NanoQuoraRetrieval",
    "NanoSCIDOCS": "NanoSCIDOCSRetrieval", "NanoSciFact": "NanoSciFactRetrieval",
    "NanoTouche2020": "NanoTouche2020Retrieval",
}


def _model_meta(name: str, revision: str, max_tokens: int | None = None):
    from mteb.models.model_meta import ModelMeta, ScoringFunction

    return ModelMeta.create_empty(overwrites=dict(
        name=name, revision=revision, framework=["Sentence Transformers", "PyTorch"], model_type=["sparse"],
        similarity_fn_name=ScoringFunction.DOT_PRODUCT, open_weights=None, max_tokens=max_tokens))


def _task_for(dataset: str):
    import mteb
    from mteb.abstasks.retrieval import AbsTaskRetrieval

    if dataset in MTEB_NANOBEIR_TASKS:
        return mteb.get_task(MTEB_NANOBEIR_TASKS[dataset]), "train"
    name = f"LocalBEIR-{dataset}"
    metadata = task_metadata(name, f"lsrbench evaluation of {dataset}", f"lsrbench/{dataset}", "no_revision_available",
                              "test")
    return type(re.sub(r"\W", "_", name), (AbsTaskRetrieval,), {"metadata": metadata})(), "test"


def write_mteb_result(root: str | os.PathLike, metrics: Mapping[str, float], *, model_name: str, model_revision: str,
                      dataset: str, main_measure: str = "nDCG@10", dataset_revision: str | None = None,
                      max_tokens: int | None = None) -> Path:
    """One (run, dataset) as an MTEB result under ``root``; returns the task JSON's path."""
    from mteb.cache import ResultCache
    from mteb.results import TaskResult

    if main_measure not in metrics or mteb_key(main_measure) is None:
        raise ValueError(f"main measure {main_measure!r} missing or without an mteb key")
    task, split = _task_for(dataset)
    scores = {(mteb_key(m) or f"lsrbench:{m}"): float(v) for m, v in metrics.items()}
    scores["main_score"] = float(metrics[main_measure])
    result = TaskResult.from_task_results(task, {split: {"default": scores}}, evaluation_time=0.0)
    if dataset_revision is not None:
        result = result.model_copy(update={"dataset_revision": dataset_revision})
    meta = _model_meta(model_name, model_revision, max_tokens)
    cache = ResultCache(root)
    cache.save_to_cache(result, meta)
    return cache.get_task_result_path(task.metadata.name, meta)


def load_mteb_result(root: str | os.PathLike, model_name: str, task_name: str, model_revision: str | None = None):
    """One result read back through mteb's ``ResultCache.load_results`` (its ``TaskResult``)."""
    from mteb.cache import ResultCache

    bench = ResultCache(root).load_results(models=[model_name], tasks=[task_name], include_remote=False,
                                           require_model_meta=True)
    found = [tr for mr in bench.model_results if model_revision is None or mr.model_revision == model_revision
             for tr in mr.task_results if tr.task_name == task_name]
    if len(found) != 1:
        raise LookupError(f"{len(found)} results for {model_name} / {task_name} under {root}")
    return found[0]


def _run_sources(results_dir: Path) -> dict[tuple[str, ...], Path]:
    side = results_dir / SOURCES_JSON
    if not side.is_file():
        return {}
    record = json.loads(side.read_text(encoding="utf-8"))
    workdir = recording_workdir(side, record["manifest"])
    found = {}
    seeds = record.get("seeds", {})  # several seeds: each run file's seed
    for source in record["sources"]:
        path = resolve_recorded(workdir, source)
        parts = path.relative_to(workdir).parts
        if len(parts) == 9 and parts[1] == "runs":  # results/runs/<run>/k<k>/<train>/<dataset>/<index>/<eval>/metrics.tsv
            seed = (str(seeds[source]),) if source in seeds else ()
            found[(parts[2], parts[3][1:], *seed, parts[5])] = path
    return found


def _train_provenances(results_dir: Path) -> dict[tuple[str, ...], Path]:
    return {key[:-1]: path.parents[3] / "train_provenance.json" for key, path in _run_sources(results_dir).items()}


def evaluated_lengths(results_dir: str | os.PathLike) -> dict[tuple[str, ...], tuple[int, int]]:
    """(run, k, dataset) (with several seeds (run, k, seed, dataset)) -> the (query, document) token
    lengths its metrics were computed at: the index folder's (``params.json`` above the metrics.tsv:
    ``evaluation.*_max_length``), which are not the training lengths a run's ``model/`` saves."""
    found = {}
    for key, metrics_tsv in _run_sources(Path(results_dir)).items():
        try:
            identity = json.loads((metrics_tsv.parents[1] / "params.json").read_text(encoding="utf-8"))["identity"]
            found[key] = (int(identity["query_max_length"]), int(identity["document_max_length"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return found


def export_mteb_results(results_dir: str | os.PathLike, root: str | os.PathLike) -> list[Path]:
    """Every (run, k, dataset) of ``<results_dir>/metrics.csv`` as MTEB results under ``root``:
    model ``lsrbench/<run>-k<k>`` (BM25: ``lsrbench/bm25``), revision the run's training config hash."""
    from lsrbench.report.results import read_metrics

    if Path(root).exists() and not Path(root).is_dir():
        raise InputError(root, None, "a file, not a folder: give the folder to write the MTEB results into")
    results_dir = Path(results_dir)
    metrics = read_metrics(str(results_dir / METRICS_CSV))
    trained = _train_provenances(results_dir)
    lengths = evaluated_lengths(results_dir)
    written = []
    keys = [RUN_COLUMN, "k", *([SEED] if SEED in metrics.columns else []), "dataset"]
    for key, rows in metrics[metrics["dataset"] != POOLED].groupby(keys, sort=False):
        (run, k, *seed), dataset = key[:-1], key[-1]
        values = dict(zip(rows["measure"], rows["value"]))
        if "nDCG@10" not in values:
            continue
        provenance = trained.get(tuple(key[:-1]), results_dir / "runs" / run / f"k{k}" / "train_provenance.json")
        revision = json.loads(provenance.read_text())["config_hash"][:16] if provenance.is_file() else "unknown"
        suffix = f"-seed{seed[0]}" if seed and seed[0] != NO_SEED else ""
        name = "lsrbench/bm25" if run == BM25 else "lsrbench/" + re.sub(r"[^A-Za-z0-9._-]", "_", f"{run}-k{k}{suffix}")
        max_tokens = max(lengths[tuple(key)]) if tuple(key) in lengths else None
        written.append(write_mteb_result(root, values, model_name=name, model_revision=revision, dataset=dataset,
                                         max_tokens=max_tokens))
    return written
