"""The measurements of ``gpu.py``: encode (lsrbench vs sentence-transformers), one training step (fused
pooling vs ``SpladePooling``) with the largest batch that fits, and the bf16-vs-fp32 agreement of
the vectors with SPLADE-tiny's nDCG@10 on Vaswani. Each function returns one JSON-able dict.

Every timing is taken side by side in one process (same model object, texts, lengths, batch,
device), repetitions alternating which side goes first, after a warm-up of both; on CUDA every
timed call ends with a synchronisation, and each side's peak memory is
``torch.cuda.max_memory_allocated`` after a reset (None on CPU).
"""

from __future__ import annotations

import contextlib
import gc
import shutil
import statistics
import time
from pathlib import Path

import numpy as np

from encode import compare, count_flops, load_texts  # the CPU encode benchmark's helpers

# Random backbones built from transformers' own configs (no download); the tokenizer is
# SPLADE-tiny's bert-base-uncased WordPiece (ids < 30522 fit both vocabularies).
FULL_CONFIGS = {
    "bert-base": ("BertConfig", {}),  # the defaults are bert-base-uncased: 12 x 768, vocab 30522
    "modernbert-base": ("ModernBertConfig", {}),  # the defaults are ModernBERT-base: 22 x 768, vocab 50368
}
# --quick on a CPU: the same families, two small layers each (the vocabulary, hence the head, kept).
QUICK_CONFIGS = {
    "bert-base": ("BertConfig", dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=2,
                                     intermediate_size=128)),
    "modernbert-base": ("ModernBertConfig", dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=2,
                                                 intermediate_size=96, layer_types=["full_attention",
                                                                                    "sliding_attention"])),
}


def sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


@contextlib.contextmanager
def peak_memory(device: str, out: dict, key: str):
    """``out[key]`` = the peak bytes allocated on ``device`` within the block (None on a CPU)."""
    import torch

    cuda = device.startswith("cuda")
    if cuda:
        sync(device)
        torch.cuda.reset_peak_memory_stats()
    try:
        yield
    finally:
        if cuda:
            sync(device)
        out[key] = int(torch.cuda.max_memory_allocated()) if cuda else None


def random_backbone(name: str, quick: bool, tokenizer_from: Path, folder: Path) -> Path:
    """A randomly initialised ``*ForMaskedLM`` of ``name``'s config, saved with a real tokenizer."""
    import torch
    import transformers

    config_cls, kwargs = (QUICK_CONFIGS if quick else FULL_CONFIGS)[name]
    config = getattr(transformers, config_cls)(**kwargs)
    model_cls = getattr(transformers, config_cls.replace("Config", "ForMaskedLM"))
    torch.manual_seed(0)
    model_cls(config).save_pretrained(folder)
    for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (tokenizer_from / f).is_file():
            shutil.copy(tokenizer_from / f, folder / f)
    return folder


def _timed(fn, device):
    start = time.perf_counter()
    out = fn()
    sync(device)
    return time.perf_counter() - start, out


def encode_case(name: str, model, texts: list[str], batch: int, precision: str, reps: int, device: str,
                peaks: dict) -> dict:
    """docs/s of ``SparseEncoder.encode_document`` and of lsrbench's ``encode_texts`` (up to the CSR)
    under the index stage's autocast (``encode_autocast``), their outputs compared, FLOP/s as shares
    of the measured matmul peaks."""
    from lsrbench.index.encode import EncodePlan
    from lsrbench.index.fast_splade import FastSplade
    from lsrbench.model.encoder import encode_autocast

    def ctx():
        return encode_autocast(device, precision)[0]

    def st():
        with ctx():
            return model.encode_document(texts, batch_size=batch, convert_to_sparse_tensor=True, show_progress_bar=False)

    def ours():
        with ctx():
            return plan.encode_all()

    savings_default = device != "cpu"  # FastSplade's host savings are on by default off a CPU

    def ours_toggled():  # the host savings the other way round: off on a GPU (before issue 21), on on a CPU
        saved = FastSplade.prefetch, FastSplade.nonzero_on_device
        FastSplade.prefetch = FastSplade.nonzero_on_device = not savings_default
        try:
            return ours()
        finally:
            FastSplade.prefetch, FastSplade.nonzero_on_device = saved

    with ctx():
        plan = EncodePlan(model, texts, "document", batch)  # runs the fast path's probe (under the same autocast)
    warm = texts[: 2 * batch]
    with ctx():
        model.encode_document(warm, batch_size=batch, show_progress_bar=False)
        EncodePlan(model, warm, "document", batch).encode_all()
    toggled = "lsrbench_host_savings_" + ("off" if savings_default else "on")
    sides = [("sentence_transformers", st), ("lsrbench", ours), (toggled, ours_toggled)]
    times = {side: [] for side, _ in sides}
    memory: dict = {}
    outputs = {}
    for r in range(reps):
        for side, fn in sides if r % 2 == 0 else sides[::-1]:
            gc.collect()
            with peak_memory(device, memory, side):
                dt, outputs[side] = _timed(fn, device)
            times[side].append(dt)
    flops = count_flops(model, texts, batch, run=ours)
    out = {"case": name, "precision": precision, "lsrbench_path": plan.path, "documents": len(texts),
           "max_length": model[0].document_length or model[0].max_seq_length, "batch_size": batch, "reps": reps,
           "seconds": {k: [round(x, 4) for x in v] for k, v in times.items()},
           "peak_memory_bytes": memory, "flops": flops,
           "output_vs_sentence_transformers": compare(outputs["lsrbench"], outputs["sentence_transformers"])}
    for side, ts in times.items():
        med = statistics.median(ts)
        out[f"docs_per_s_{side}"] = round(len(texts) / med, 1)
        tflops = flops["total_flops"] / med / 1e12
        out[f"tflops_{side}"] = round(tflops, 3)
        out[f"share_of_bf16_peak_{side}"] = round(tflops / peaks["bf16"], 4) if peaks.get("bf16") else None
        out[f"share_of_{precision}_peak_{side}"] = round(tflops / peaks[precision], 4) if peaks.get(precision) else None
    out["speedup_median"] = round(statistics.median(a / b for a, b in zip(times["sentence_transformers"],
                                                                          times["lsrbench"])), 3)
    on, off = (times["lsrbench"], times[toggled]) if savings_default else (times[toggled], times["lsrbench"])
    out["host_savings_speedup_median"] = round(statistics.median(a / b for a, b in zip(off, on)), 3)
    out["host_savings_output"] = compare(outputs["lsrbench"], _as_torch(outputs[toggled]))
    out["_vectors"] = outputs["lsrbench"]  # for the bf16-vs-fp32 agreement; dropped before writing
    return out


def _as_torch(csr):
    """A CSR as the torch sparse tensor ``encode.compare`` takes as its reference."""
    import torch

    coo = csr.tocoo()
    return torch.sparse_coo_tensor(np.vstack([coo.row, coo.col]), coo.data, size=coo.shape)


def vector_agreement(a, b) -> dict:
    """Two CSR encodings of the same texts: the non-zero sets' overlap (Jaccard over (row, term)
    pairs) and the relative difference of the weights both have (|a - b| / max(|a|, |b|))."""
    a, b = a.tocsr(), b.tocsr()
    a.sort_indices()
    b.sort_indices()
    ka = a.indices.astype(np.int64) + a.shape[1] * np.repeat(np.arange(a.shape[0], dtype=np.int64), np.diff(a.indptr))
    kb = b.indices.astype(np.int64) + b.shape[1] * np.repeat(np.arange(b.shape[0], dtype=np.int64), np.diff(b.indptr))
    common, ia, ib = np.intersect1d(ka, kb, assume_unique=True, return_indices=True)
    union = ka.size + kb.size - common.size
    wa, wb = a.data[ia].astype(np.float64), b.data[ib].astype(np.float64)
    rel = np.abs(wa - wb) / np.maximum(np.maximum(np.abs(wa), np.abs(wb)), 1e-30)
    only = np.setdiff1d(ka, common, assume_unique=True).size + np.setdiff1d(kb, common, assume_unique=True).size
    mass_only = float(a.data[np.setdiff1d(np.arange(ka.size), ia)].sum() + b.data[np.setdiff1d(np.arange(kb.size), ib)].sum())
    return {"nonzero_overlap_jaccard": round(common.size / max(1, union), 6), "nonzeros": [int(ka.size), int(kb.size)],
            "entries_in_one_only": int(only),
            "weight_mass_in_one_only_share": round(mass_only / max(1e-30, float(a.data.sum() + b.data.sum())), 6),
            "max_relative_difference": round(float(rel.max()) if rel.size else 0.0, 6),
            "p999_relative_difference": round(float(np.quantile(rel, 0.999)) if rel.size else 0.0, 6),
            "median_relative_difference": round(float(np.median(rel)) if rel.size else 0.0, 6),
            "max_abs_difference": round(float(np.abs(wa - wb).max()) if rel.size else 0.0, 6),
            "bit_identical": bool(union == common.size and np.array_equal(wa, wb))}


# -- training ------------------------------------------------------------------------------------------
def _features(model, texts: list[str], batch: int, device: str):
    from sentence_transformers.util import batch_to_device

    queries = [" ".join(t.split()[:8]) for t in texts[:batch]]
    positives, negatives = texts[batch : 2 * batch], texts[2 * batch : 3 * batch]
    feats = [model.preprocess(queries, task="query"), model.preprocess(positives, task="document"),
             model.preprocess(negatives, task="document")]
    return [batch_to_device(dict(f), device) for f in feats]


def _step(model, loss, features, device: str) -> float:
    """One SPLADE training step as the trainer runs it under bf16 autocast (forward, SpladeLoss with
    both FLOPS regularisers; backward outside autocast); the loss."""
    import torch

    model.zero_grad(set_to_none=True)
    with torch.autocast(torch.device(device).type, dtype=torch.bfloat16):
        parts = loss([dict(f) for f in features], None)
        total = sum(parts.values())
    total.backward()
    sync(device)
    return float(total.detach())


def _is_oom(exc: BaseException) -> bool:
    import torch

    return isinstance(exc, torch.cuda.OutOfMemoryError) or "out of memory" in str(exc).lower()


def _free(model, device: str) -> None:
    import torch

    model.zero_grad(set_to_none=True)
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()


def largest_batch(fits, start: int, limit: int) -> dict:
    """The largest batch ``b <= limit`` with ``fits(b)``: doubling from ``start``, then bisection
    between the last fit and the first failure down to an eighth of the fit."""
    lo, hi, b = None, None, start
    while b <= limit:
        if not fits(b):
            hi = b
            break
        lo, b = b, b * 2
    if lo is None:
        return {"largest": None, "first_failing": hi}
    if hi is None:
        return {"largest": lo, "first_failing": None, "limit_reached": True, "limit": limit}
    while hi - lo > max(1, lo // 8):
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return {"largest": lo, "first_failing": hi}


def train_case(name: str, model, texts: list[str], batch: int, steps: int, max_batch: int, device: str) -> dict:
    """Seconds per step and peak memory at ``batch`` triplets for the fused pooling and for
    ``SpladePooling`` (same dropout masks), then the largest batch that fits for each."""
    import torch
    from sentence_transformers.sparse_encoder.losses import SparseMultipleNegativesRankingLoss, SpladeLoss

    from lsrbench.model.fused_pooling import fused_pooling

    loss = SpladeLoss(model, loss=SparseMultipleNegativesRankingLoss(model),
                      query_regularizer_weight=5e-5, document_regularizer_weight=3e-5)
    model.train()
    sides = {"fused": lambda: fused_pooling(model), "spladepooling": lambda: contextlib.nullcontext(False)}
    out = {"case": name, "batch_triplets": batch, "steps": steps, "precision": "bf16 autocast", "sides": {}}
    for side, pooling in sides.items():
        res: dict = {}
        with pooling() as on:
            res["fused_path_on"] = bool(on) if side == "fused" else None
            feats = _features(model, texts, batch, device)
            with torch.random.fork_rng(devices=[torch.cuda.current_device()] if device.startswith("cuda") else []):
                torch.manual_seed(0)  # the same dropout masks on both sides
                res["first_loss"] = _step(model, loss, feats, device)  # warm-up
                with peak_memory(device, res, "peak_memory_bytes"):
                    times = [_timed(lambda: _step(model, loss, feats, device), device)[0] for _ in range(steps)]
            res["s_per_step"] = round(statistics.median(times), 5)
            res["triplets_per_s"] = round(batch / statistics.median(times), 1)
            del feats
            _free(model, device)
            res["largest_batch"] = _largest(model, loss, texts, batch, max_batch, device)
        out["sides"][side] = res
    f, s = out["sides"]["fused"], out["sides"]["spladepooling"]
    out["speedup"] = round(s["s_per_step"] / f["s_per_step"], 3)
    out["first_loss_relative_difference"] = abs(f["first_loss"] - s["first_loss"]) / max(1e-12, abs(s["first_loss"]))
    return out


def _largest(model, loss, texts, start: int, limit: int, device: str) -> dict:
    """:func:`largest_batch` for one side, with the seconds per step and peak memory of the largest."""
    seen: dict = {}

    def fits(b: int) -> bool:
        try:
            feats = _features(model, texts, b, device)
            mem: dict = {}
            with peak_memory(device, mem, "peak"):
                dt = _timed(lambda: _step(model, loss, feats, device), device)[0]
            seen[b] = {"s_per_step": round(dt, 4), "peak_memory_bytes": mem["peak"]}
            return True
        except Exception as exc:  # noqa: BLE001 - an OOM is the answer; anything else is an error
            if not _is_oom(exc):
                raise
            return False
        finally:
            feats = None
            _free(model, device)

    found = largest_batch(fits, start, min(limit, len(texts) // 3))
    if found["largest"] is not None:
        found.update(seen[found["largest"]])
        found["triplets_per_s"] = round(found["largest"] / found["s_per_step"], 1)
    return found


# -- agreement on Vaswani ------------------------------------------------------------------------------
def vaswani_agreement(model_dir: Path, vaswani: Path, device: str, docs_limit: int, batch: int,
                      length: int = 256) -> dict:
    """SPLADE-tiny's Vaswani vectors in fp32 and bf16 on ``device`` and in fp32 on the CPU (all
    threads): their agreement and nDCG@10 each (exact top-1000 search, ir_measures)."""
    import torch

    from lsrbench.data.beir import load_beir_folder
    from lsrbench.evaluate.evaluation import evaluate_vectors
    from lsrbench.index.encode import encode_texts
    from lsrbench.model.encoder import build_sparse_encoder, encode_autocast

    ds = load_beir_folder(vaswani)
    doc_ids = list(ds.corpus)[: docs_limit or None]
    docs_text = [ds.corpus[d] for d in doc_ids]
    query_ids = list(ds.queries)
    settings = [("device_fp32", device, "fp32"), ("device_bf16", device, "bf16")]
    if device != "cpu":
        settings.append(("cpu_fp32", "cpu", "fp32"))
    vectors, out = {}, {"documents": len(doc_ids), "queries": len(query_ids), "max_length": length,
                        "cpu_threads": torch.get_num_threads(), "runs": {}}
    for key, dev, precision in settings:
        model = build_sparse_encoder(str(model_dir), length, query_length=length, document_length=length, device=dev)
        ctx, _ = encode_autocast(dev, precision)
        start = time.perf_counter()
        with ctx:
            D = encode_texts(model, docs_text, "document", batch)
            Q = encode_texts(model, [ds.queries[q] for q in query_ids], "query", batch)
        seconds = time.perf_counter() - start
        res = evaluate_vectors(ds, D, doc_ids, Q, query_ids, top_k=1000, measures=["nDCG@10"], skip_identical_ids=False)
        out["runs"][key] = {"device": dev, "precision": precision, "encode_seconds": round(seconds, 2),
                            "nDCG@10": dict(res["rows"])["nDCG@10"]}
        vectors[key] = (D, Q)
        del model
    out["bf16_vs_fp32_documents"] = vector_agreement(vectors["device_bf16"][0], vectors["device_fp32"][0])
    out["bf16_vs_fp32_queries"] = vector_agreement(vectors["device_bf16"][1], vectors["device_fp32"][1])
    cpu = "cpu_fp32" if "cpu_fp32" in vectors else "device_fp32"
    out["device_fp32_vs_cpu_fp32_documents"] = vector_agreement(vectors["device_fp32"][0], vectors[cpu][0])
    out["ndcg10_bf16_minus_fp32"] = out["runs"]["device_bf16"]["nDCG@10"] - out["runs"]["device_fp32"]["nDCG@10"]
    out["ndcg10_device_fp32_minus_cpu"] = out["runs"]["device_fp32"]["nDCG@10"] - out["runs"][cpu]["nDCG@10"]
    return out


__all__ = ["FULL_CONFIGS", "QUICK_CONFIGS", "random_backbone", "encode_case", "vector_agreement", "train_case",
           "largest_batch", "vaswani_agreement", "load_texts", "peak_memory", "sync"]
