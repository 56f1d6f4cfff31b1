"""The probe: what ``W_head <- W_head / k`` does to a backbone at step 0, in seconds on a CPU instead of a grid
of runs: activations, scores, losses, head gradient norms and head norms on seeded training batches, per ``(k,
mode)``, without an optimiser step."""

from __future__ import annotations

import contextlib
import copy
import logging
import math

from lsrbench.config.grid import PROBE_TRIPLETS
from lsrbench.errors import InputError
from lsrbench.model.encoder import apply_rescale
from lsrbench.model.families import family_of
from lsrbench.model.rescale import head_norms, mlm_head
from lsrbench.model.probe_names import LOGIT_STATISTICS
from lsrbench.names import AUTO_K, format_k, run_name

log = logging.getLogger(__name__)

__all__ = ["PROBE_TRIPLETS", "probe_backbone", "probe_model", "sample_triplets", "probe_batches", "load_backbone",
           "rescaled_copy", "mlm_of", "activation_stats", "score_stats", "LOGIT_STATISTICS"]



def sample_triplets(triplets: list[dict], n: int, seed: int) -> list[dict]:
    """``n`` seeded triplets, the same for every backbone and k of a config."""
    from lsrbench.data.triplets import sample_indices

    return [triplets[int(i)] for i in sample_indices(len(triplets), min(n, len(triplets)), seed)]


def probe_batches(sample: list[dict], batch_size: int, seed: int, config_file=None) -> list[list[dict]]:
    """The sample in batches as the trainer forms them (no duplicate texts, last partial batch dropped)."""
    import torch
    from datasets import Dataset
    from sentence_transformers.base.sampler import NoDuplicatesBatchSampler

    from lsrbench.model.train import TRIPLET_COLUMNS, check_batches_possible

    check_batches_possible(sample, batch_size, config_file)
    dataset = Dataset.from_list([{c: t[c] for c in TRIPLET_COLUMNS} for t in sample])
    sampler = NoDuplicatesBatchSampler(dataset, batch_size, drop_last=True, generator=torch.Generator().manual_seed(seed),
                                       seed=seed)
    return [[sample[i] for i in batch] for batch in sampler]


def load_backbone(model_path: str, entry: dict, recipe: dict, device: str | None = None):
    """The SparseEncoder the train stage starts from before its rescale by k."""
    from lsrbench.model.encoder import build_sparse_encoder, released_sparse_encoder, set_encode_lengths
    from lsrbench.model.train import set_seed

    set_seed(recipe["seed"])
    trust, revision = entry.get("trust_remote_code", False), entry.get("revision")
    lengths = recipe["query_max_length"], recipe["document_max_length"]
    if entry.get("evaluate_only"):
        model, _ = released_sparse_encoder(model_path, *lengths, trust_remote_code=trust, revision=revision)
        set_encode_lengths(model, *lengths)
        return model
    return build_sparse_encoder(model_path, lengths[1], trust_remote_code=trust, revision=revision,
                                head_scale=entry.get("head_scale", 1.0),
                                head_scale_mode=entry.get("head_scale_mode", "shared"), query_length=lengths[0],
                                document_length=lengths[1], device=device)


def mlm_of(model):
    """The ``*ForMaskedLM`` model inside a SparseEncoder (the one whose head the rescale divides)."""
    from transformers import PreTrainedModel

    for module in model.modules():
        if isinstance(module, PreTrainedModel) and family_of(module).decoder(module) is not None:
            return module
    raise ValueError(f"{type(model).__name__} holds no model with an MLM head")


def rescaled_copy(model, k: float, mode: str):
    """``model`` at rescale factor ``k`` in ``mode``: itself where training leaves the head alone, else a rescaled
    copy."""
    if k == 1.0 and mode == "shared":
        return model
    twin = copy.deepcopy(model)
    apply_rescale(mlm_of(twin), 1.0, k, mode)
    return twin


def probe_backbone(model_path: str, entry: dict, ks_and_modes, triplets: list[dict], recipe: dict, *,
                   backbone: str | None = None, n_triplets: int = PROBE_TRIPLETS, auto_k=None,
                   gradients: bool = True, config_file=None, device: str | None = None) -> list[dict]:
    """Probe one backbone at every ``(k, mode)``, loading the checkpoint once; one :func:`probe_model` dict per
    pair with its run name, k and mode."""
    name = backbone or str(entry["model"])
    batches = probe_batches(sample_triplets(triplets, n_triplets, recipe["seed"]), recipe["batch_size"],
                            recipe["seed"], config_file)
    loaded = load_backbone(model_path, entry, recipe, device)
    recipe = _fused_checked(loaded, batches, recipe)
    results = []
    for k, mode in ks_and_modes:
        value = _k_value(k, auto_k(results) if callable(auto_k) and k == AUTO_K else auto_k, config_file, name)
        model = rescaled_copy(loaded, value, mode)
        measures = probe_model(model, batches, recipe, gradients=gradients, check_fused=False)
        results.append({"backbone": run_name(name, mode), "k": format_k(k), "k_value": value, "mode": mode,
                        "head_scale": float(entry.get("head_scale", 1.0)), **measures})
        del model
    return results


def _fused_checked(model, batches: list[list[dict]], recipe: dict) -> dict:
    """The recipe with ``fused_pooling`` off when the fused path does not reproduce ``model`` (as training then
    falls back to sentence-transformers' pooling)."""
    if not recipe.get("fused_pooling", True):
        return recipe
    from lsrbench.model.fused_pooling import fused_pooling_problem

    problem = fused_pooling_problem(model, [t["positive"] for t in batches[0][:4]])
    if problem is None:
        return recipe
    log.warning("probe with sentence-transformers' SpladePooling (%s)", problem)
    return {**recipe, "fused_pooling": False}


def _k_value(k, auto_k: float | None, config_file, name: str) -> float:
    if k == AUTO_K:
        if auto_k is None:
            raise InputError(config_file, f"backbones.{name}.k", "k auto needs its value (from the head norms) to be probed")
        return float(auto_k)
    return float(k)


def probe_model(model, batches: list[list[dict]], recipe: dict, *, gradients: bool = True,
                check_fused: bool = True) -> dict:
    """The probe's step-0 measures of one rescaled SparseEncoder on ``batches``; no weight changes."""
    import torch

    from lsrbench.model.losses import recording_splade_loss

    loss = recording_splade_loss(model, recipe["lambda_q"], recipe["lambda_d"], keep_embeddings=True)
    loss.eval()  # no dropout, and the loss neither records nor stops on a non-finite part
    fused = contextlib.nullcontext(False)
    if recipe.get("fused_pooling", True):
        from lsrbench.model.fused_pooling import fused_pooling

        fused = fused_pooling(model, [t["positive"] for t in batches[0][:4]], check=check_fused)
    rows, queries, documents = [], [], []
    with fused as pooling_fused:
        for batch in batches:
            row, embeddings = _batch_measures(model, loss, batch, gradients)
            rows.append(row)
            queries.append(embeddings[0])
            documents.append(torch.cat(embeddings[1:]))
    vocab = int(queries[0].shape[1])
    out = {name: float(sum(r[name] for r in rows) / len(rows)) for name in rows[0]}
    out |= activation_stats(torch.cat(queries), "query", vocab) | activation_stats(torch.cat(documents), "document", vocab)
    out |= _logit_scale(torch.cat(documents)) | {"flops_to_ranking_loss": _ratio(out["flops_loss"], out["ranking_loss"])}
    if gradients:
        out["flops_to_ranking_grad"] = _ratio(out["flops_grad_norm"], out["ranking_grad_norm"])
    out |= {"head": head_norms(mlm_of(model)), "fused_pooling": bool(pooling_fused), "gradients": gradients,
            "batches": len(batches), "batch_size": len(batches[0]), "triplets": sum(len(b) for b in batches),
            "query_max_length": recipe["query_max_length"], "document_max_length": recipe["document_max_length"]}
    return _finite(out)


def _batch_measures(model, loss, batch: list[dict], gradients: bool):
    import torch

    features, labels = _features(model, batch)
    with torch.set_grad_enabled(gradients):
        parts = loss(features, labels)
        embeddings = loss.loss.last_embeddings
        row = {"ranking_loss": float(parts["base_loss"].detach()),
               "flops_query_loss": float(parts["query_regularizer_loss"].detach()),
               "flops_document_loss": float(parts["document_regularizer_loss"].detach())}
        row["flops_loss"] = row["flops_query_loss"] + row["flops_document_loss"]
        if gradients:
            row |= _gradients(model, parts)
    embeddings = [e.detach() for e in embeddings]
    loss.loss.last_embeddings = None
    return row | score_stats(*embeddings), embeddings


def _features(model, batch: list[dict]):
    from sentence_transformers.sparse_encoder import SparseEncoderTrainer
    from sentence_transformers.sparse_encoder.data_collator import SparseEncoderDataCollator
    from sentence_transformers.util import batch_to_device

    from lsrbench.model.train import ROUTER_MAPPING, TRIPLET_COLUMNS

    collator = SparseEncoderDataCollator(preprocess_fn=model.preprocess, router_mapping=ROUTER_MAPPING)
    inputs = collator([{c: t[c] for c in TRIPLET_COLUMNS} for t in batch])
    # the trainer's own split (an instance method that reads only its argument)
    features, labels = SparseEncoderTrainer.collect_features(None, inputs)
    return [batch_to_device(f, model.device) for f in features], labels


def _gradients(model, parts: dict) -> dict:
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    weight = mlm_head(mlm_of(model)).weight
    at = next(i for i, p in enumerate(params) if p is weight)
    ranking = torch.autograd.grad(parts["base_loss"], params, retain_graph=True, allow_unused=True)
    flops = parts["query_regularizer_loss"] + parts["document_regularizer_loss"]
    (flops_head,) = torch.autograd.grad(flops, [weight], allow_unused=True)
    rank_head = ranking[at] if ranking[at] is not None else torch.zeros_like(weight)
    flops_head = flops_head if flops_head is not None else torch.zeros_like(weight)
    norms = torch.stack([torch.linalg.vector_norm(g.double()) for g in ranking if g is not None])
    return {"ranking_grad_norm": float(torch.linalg.vector_norm(rank_head.double())),
            "flops_grad_norm": float(torch.linalg.vector_norm(flops_head.double())),
            "total_grad_norm": float(torch.linalg.vector_norm((rank_head + flops_head).double())),
            "model_grad_norm": float(torch.linalg.vector_norm(norms))}


def score_stats(queries, positives, negatives) -> dict:
    """Mean positive and hard-negative score, their gap, and the in-batch score scale of one batch."""
    import torch

    scores = queries.double() @ torch.cat([positives, negatives]).double().T
    rows = torch.arange(queries.shape[0])
    positive, negative = scores[rows, rows], scores[rows, rows + queries.shape[0]]
    return {"positive_score": float(positive.mean()), "negative_score": float(negative.mean()),
            "score_gap": float((positive - negative).mean()), "score_scale": float(scores.std(dim=1, correction=0).mean())}


def activation_stats(vectors, prefix: str, vocab: int) -> dict:
    """Active terms per text (and share of the vocabulary), mean and max weight over active pairs."""
    active = vectors > 0
    counts = active.sum(dim=1).double()
    values = vectors[active].double()
    return {f"{prefix}_active_terms": float(counts.mean()), f"{prefix}_active_share": float(counts.mean()) / vocab,
            f"{prefix}_mean_weight": float(values.mean()) if values.numel() else 0.0,
            f"{prefix}_max_weight": float(values.max()) if values.numel() else 0.0}


def _logit_scale(documents) -> dict:
    import torch

    values = documents[documents > 0].double()
    max_logit = float(torch.expm1(documents.max(dim=1).values.double()).mean())
    return dict(zip(LOGIT_STATISTICS, (max_logit, float(values.mean()) if values.numel() else 0.0)))


def _ratio(a: float, b: float) -> float:
    return a / b if b and math.isfinite(a) and math.isfinite(b) else math.nan


def _finite(result: dict) -> dict:
    bad = sorted(k for k, v in result.items() if isinstance(v, float) and not math.isfinite(v))
    return {**{k: (None if k in bad else v) for k, v in result.items()}, "non_finite": bad}
