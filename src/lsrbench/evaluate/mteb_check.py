"""mteb as an independent check of lsrbench's evaluation (``lsrbench mteb-check``): mteb scores a run's model on
the evaluated folder, offline, at the evaluation's token lengths, beside ``metrics.tsv``."""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lsrbench.errors import InputError

__all__ = ["MTEB_KEYS", "DEFAULT_K_VALUES", "TOLERANCE", "mteb_key", "folder_revision", "task_metadata",
           "beir_folder_task", "mteb_scores", "compare_scores", "check_run", "summary_line"]

# ir_measures measure name -> mteb score-key prefix (the cutoff is appended: nDCG@10 -> ndcg_at_10).
MTEB_KEYS = {"nDCG": "ndcg_at", "RR": "mrr_at", "R": "recall_at", "P": "precision_at", "AP": "map_at",
             "Success": "hit_rate_at"}
_MEASURE = re.compile(r"^(?P<name>[A-Za-z]+)@(?P<k>\d+)$")
# mteb's default retrieval cutoffs; the deepest is its top-k depth.
DEFAULT_K_VALUES = (1, 3, 5, 10, 20, 100, 1000)
# mteb rounds means to 5 decimals; float32 scoring moves a mean by less (docs/independent-checks.md).
TOLERANCE = 1e-4


def mteb_key(measure: str) -> str | None:
    """mteb's score key for an ir_measures name (``nDCG@10`` -> ``ndcg_at_10``); None where mteb
    has no equal measure (``R(rel=2)@1000``, FLOPs)."""
    m = _MEASURE.match(measure)
    if not m or m["name"] not in MTEB_KEYS:
        return None
    return f"{MTEB_KEYS[m['name']]}_{int(m['k'])}"


def folder_revision(folder: str | os.PathLike, split: str = "test") -> str:
    """The task's dataset revision: SHA-256 (16 hex digits) of the folder's three files."""
    h = hashlib.sha256()
    for path in (Path(folder) / "corpus.jsonl", Path(folder) / "queries.jsonl", Path(folder) / "qrels" / f"{split}.tsv"):
        h.update(path.name.encode() + b"\0")
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


def task_metadata(name: str, description: str, path: str, revision: str, split: str):
    """mteb's metadata of a local retrieval task (English text, main score nDCG@10)."""
    from mteb.abstasks.task_metadata import TaskMetadata

    return TaskMetadata(
        name=name, description=description, dataset={"path": path, "revision": revision}, type="Retrieval",
        category="t2t", modalities=["text"], eval_splits=[split], eval_langs=["eng-Latn"], main_score="ndcg_at_10",
        reference=None, date=None, domains=None, task_subtypes=None, license="not specified",
        annotations_creators=None, dialect=[], sample_creation="found", bibtex_citation="")


def beir_folder_task(folder: str | os.PathLike, split: str = "test", *, name: str | None = None,
                     ignore_identical_ids: bool = False, k_values: Sequence[int] = DEFAULT_K_VALUES):
    """An mteb retrieval task over a local BEIR folder (a subclass per call: mteb's ``unload_data`` deletes an
    instance's metadata)."""
    from datasets import Dataset
    from mteb.abstasks.retrieval import AbsTaskRetrieval

    folder = Path(folder).resolve()
    for path in (folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels" / f"{split}.tsv"):
        if not path.is_file():
            raise InputError(path, None, f"not found (BEIR layout: corpus.jsonl, queries.jsonl, qrels/{split}.tsv)")
    task_name = name or f"LocalBEIR-{folder.name}"
    metadata = task_metadata(task_name, f"Local BEIR folder {folder} (split {split}), evaluated offline.",
                              str(folder), folder_revision(folder, split), split)

    def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
        if self.data_loaded:
            return
        from beir.datasets.data_loader import GenericDataLoader

        corpus, queries, qrels = GenericDataLoader(data_folder=str(folder)).load(split=split)
        self.dataset = {"default": {split: {
            "corpus": Dataset.from_list([{"id": d, "title": doc.get("title") or "", "text": doc.get("text") or ""}
                                         for d, doc in corpus.items()]),
            "queries": Dataset.from_list([{"id": q, "text": text} for q, text in queries.items()]),
            "relevant_docs": qrels, "top_ranked": None}}}
        self.data_loaded = True

    cls = type(re.sub(r"\W", "_", task_name), (AbsTaskRetrieval,),
               {"metadata": metadata, "load_data": load_data, "ignore_identical_ids": bool(ignore_identical_ids),
                "k_values": tuple(k_values)})
    return cls()


def mteb_scores(model_dir: str | os.PathLike, beir_folder: str | os.PathLike, split: str = "test", *,
                model_name: str, model_revision: str, task_name: str | None = None, ignore_identical_ids: bool = False,
                batch_size: int = 32, device: str = "cpu", results_root: str | os.PathLike | None = None,
                query_length: int | None = None, document_length: int | None = None) -> dict[str, Any]:
    """Score the SparseEncoder in ``model_dir`` on ``beir_folder`` through mteb, offline, at the given token
    lengths; returns the scores, lengths applied and saved, seconds."""
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(var, "1")  # before huggingface_hub reads its constants
    import mteb
    from mteb.models.sentence_transformer_wrapper import SparseEncoderWrapper
    from lsrbench.model.encoder import load_trained_encoder, set_encode_lengths

    model = load_trained_encoder(str(model_dir), device, local_files_only=True)
    saved = set_encode_lengths(model, None, None)
    lengths = set_encode_lengths(model, query_length, document_length)
    wrapper = SparseEncoderWrapper(model)  # its ModelMeta comes from the model alone (no hub look-up)
    wrapper.mteb_model_meta = wrapper.mteb_model_meta.model_copy(update={"name": model_name, "revision": model_revision})
    task = beir_folder_task(beir_folder, split, name=task_name, ignore_identical_ids=ignore_identical_ids)
    cache = None
    if results_root is not None:
        from mteb.cache import ResultCache

        cache = ResultCache(results_root)
    start = time.monotonic()
    result = mteb.evaluate(wrapper, task, cache=cache, overwrite_strategy="always", co2_tracker=False,
                           encode_kwargs={"batch_size": batch_size, "show_progress_bar": False},
                           show_progress_bar=False)
    task_result = result.task_results[0]
    return {"scores": dict(task_result.scores[split][0]), "task_result": task_result,
            "seconds": time.monotonic() - start, "task_name": task.metadata.name, "lengths": lengths,
            "saved_lengths": saved}


def compare_scores(ours: Mapping[str, float], theirs: Mapping[str, float], measures: Sequence[str],
                   tol: float = TOLERANCE) -> list[dict[str, Any]]:
    """One row per measure: lsrbench's and mteb's value, their difference, ``ok`` within ``tol`` (None when a
    side is missing)."""
    rows = []
    for m in measures:
        key = mteb_key(m)
        a, b = ours.get(m), (theirs.get(key) if key else None)
        if a is None or b is None:
            rows.append({"measure": m, "mteb_key": key, "lsrbench": a, "mteb": b, "diff": None, "ok": None})
        else:
            diff = float(b) - float(a)
            rows.append({"measure": m, "mteb_key": key, "lsrbench": float(a), "mteb": float(b), "diff": diff,
                         "ok": abs(diff) <= tol})
    return rows


def _run_metrics(path: Path) -> tuple[str, str, dict[str, float]]:
    from lsrbench.evaluate.tidy import read_metrics_tsv

    rows, problems = read_metrics_tsv(path)
    if problems:
        raise InputError(path, None, problems[0].split(": ", 1)[-1])
    runs = {(run, k) for run, k, _, _ in rows}
    if len(runs) != 1:
        raise InputError(path, None, f"expected the rows of one run, found {len(runs)}")
    (run, k), = runs
    return run, k, {measure: value for (_, _, _, measure), value in rows.items()}


def check_run(run_dir: str | os.PathLike, dataset: str, data_dir: str | os.PathLike, *, split: str = "test",
              tol: float = TOLERANCE, ignore_identical_ids: bool = False, batch_size: int = 32,
              device: str = "cpu", results_root: str | os.PathLike | None = None,
              metrics_tsv: str | os.PathLike | None = None, query_length: int | None = None,
              document_length: int | None = None) -> dict[str, Any]:
    """Score ``<run_dir>/model`` through mteb and compare every measure of ``metrics_tsv`` mteb also computes;
    ``ok`` when all agree within ``tol``."""
    import json

    run_dir = Path(run_dir)
    metrics_tsv = Path(metrics_tsv) if metrics_tsv else run_dir / dataset / "metrics.tsv"
    if not metrics_tsv.is_file():
        raise InputError(metrics_tsv, None, "not found: evaluate the run on this dataset first")
    run, k, ours = _run_metrics(metrics_tsv)
    measures = [m for m in ours if mteb_key(m)]
    if not measures:
        raise InputError(metrics_tsv, None, "no measure that mteb also computes")
    provenance = run_dir / "train_provenance.json"
    revision = json.loads(provenance.read_text())["config_hash"][:16] if provenance.is_file() else "unknown"
    name = "lsrbench/" + re.sub(r"[^A-Za-z0-9._-]", "_", f"{run}-k{k}")
    theirs = mteb_scores(run_dir / "model", data_dir, split, model_name=name, model_revision=revision,
                         task_name=f"LocalBEIR-{dataset}", ignore_identical_ids=ignore_identical_ids, batch_size=batch_size, device=device,
                         results_root=results_root, query_length=query_length, document_length=document_length)
    rows = compare_scores(ours, theirs["scores"], measures, tol)
    return {"run": run, "k": k, "dataset": dataset, "data_dir": str(data_dir), "split": split, "tol": tol,
            "rows": rows, "ok": all(r["ok"] for r in rows), "mteb_seconds": round(theirs["seconds"], 3),
            "encode_lengths": theirs["lengths"], "model_saved_lengths": theirs["saved_lengths"],
            "mteb_model_name": name, "mteb_model_revision": revision, "mteb_task_name": theirs["task_name"],
            "mteb_version": theirs["task_result"].mteb_version,
            "mteb_scores": {key: v for key, v in theirs["scores"].items() if isinstance(v, (int, float))}}


def summary_line(report: Mapping[str, Any], where: str) -> str:
    """The verdict: ``AGREE`` with the largest difference, or ``DISAGREE`` naming the measures."""
    rows = [r for r in report["rows"] if r["ok"] is not None]
    lengths = report.get("encode_lengths") or {}
    at = (f"encoded at {lengths.get('query_length')} query / {lengths.get('document_length')} document tokens"
          if lengths else "encoded at the model's saved lengths")
    if report["ok"]:
        largest = max((abs(r["diff"]) for r in rows), default=0.0)
        return (f"AGREE: mteb {report['mteb_version']} and lsrbench agree on all {len(rows)} measures of {where} "
                f"within {report['tol']:g} (largest difference {largest:.2g}; {at})")
    bad = [r for r in rows if not r["ok"]]
    named = ", ".join(f"{r['measure']} by {r['diff']:+.5f}" for r in bad)
    return (f"DISAGREE: mteb {report['mteb_version']} and lsrbench differ by more than {report['tol']:g} on "
            f"{len(bad)} of {len(rows)} measures of {where}: {named} ({at})")
