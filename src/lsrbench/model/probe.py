"""The probe: what the paper's rescale ``W_head <- W_head / k`` ("Rescaling MLM-Head for Neural
Sparse Retrieval", arXiv 2606.18811) does to a backbone at step 0, measured in seconds on a CPU
instead of after a grid of training runs.

The paper's mechanism is a scale mismatch that exists before training: a large head inflates the
SPLADE activations ``w_j = max_t log(1 + relu(h_t . W_head[j] + b_j))`` (Formal et al., "SPLADE v2",
2021) and the dot-product scores, the in-batch contrastive loss starts very high, and the FLOPS
regulariser (Paria et al., ICLR 2020) pulls against it. The probe loads a checkpoint once and, per
requested ``(k, mode)``, applies the rescale exactly as training does (on a copy of the loaded
model: :func:`lsrbench.model.encoder.apply_rescale`, the function the train stage uses), then
measures on a fixed, seeded sample of the training triplets, in batches of the recipe's size
formed by the trainer's own no-duplicates sampler and tokenized by the trainer's own collator at
the recipe's lengths, without any optimiser step:

* activations: mean and max of ``w_j`` over active terms, active terms per query and per
  document, the share of the vocabulary active, the max logit per text;
* scores: mean positive and hard-negative score, their gap, the in-batch score scale (the standard
  deviation of one query's ``2B`` scores, averaged over queries);
* losses at step 0 through the training loss object (:func:`lsrbench.model.losses.recording_splade_loss`):
  the ranking loss and both FLOPS terms at the recipe's full lambda (training's quadratic warm-up
  starts them at 0), and their ratio;
* gradients: norms of the gradients of the ranking loss and of the FLOPS loss with respect to the
  head weight (the tensor the optimiser updates: for a tied head the embedding path is included),
  one backward pass each, their ratio, and the norm over all parameters of the ranking loss's
  gradient (what training logs as ``grad_norm`` at step 1, where the FLOPS weights are still 0);
* the head's norms after the rescale (:func:`lsrbench.model.rescale.head_norms`).

The model runs in eval mode (no dropout): the probe measures the checkpoint, not one dropout draw,
so a dropout-free model's probe equals training's first step exactly. Results are plain dicts
(non-finite values as None, named in ``non_finite``).
"""

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
    """``n`` triplets (all of them when there are fewer), the same for every backbone and k of a
    config: :func:`lsrbench.data.triplets.sample_indices` with the recipe's seed."""
    from lsrbench.data.triplets import sample_indices

    return [triplets[int(i)] for i in sample_indices(len(triplets), min(n, len(triplets)), seed)]


def probe_batches(sample: list[dict], batch_size: int, seed: int, config_file=None) -> list[list[dict]]:
    """The sample in batches of ``batch_size`` as the trainer forms them: sentence-transformers'
    ``NoDuplicatesBatchSampler`` (no text twice in a batch: in-batch negatives), last partial
    batch dropped; a sample that cannot fill one batch is refused as training refuses it."""
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
    """The SparseEncoder the train stage starts from before its rescale by k: the checkpoint at the
    recipe's lengths with a twin's ``head_scale`` applied, seeded as training seeds it; a released
    checkpoint (``evaluate_only``) as the released stage loads it, at the recipe's lengths."""
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
    """``model`` at rescale factor ``k`` in ``mode``: the loaded model itself where training leaves
    the head alone (k = 1, shared), else a copy with :func:`apply_rescale` applied once."""
    if k == 1.0 and mode == "shared":
        return model
    twin = copy.deepcopy(model)
    apply_rescale(mlm_of(twin), 1.0, k, mode)
    return twin


def probe_backbone(model_path: str, entry: dict, ks_and_modes, triplets: list[dict], recipe: dict, *,
                   backbone: str | None = None, n_triplets: int = PROBE_TRIPLETS, auto_k=None,
                   gradients: bool = True, config_file=None, device: str | None = None) -> list[dict]:
    """Probe one backbone at every ``(k, mode)`` of ``ks_and_modes``, loading the checkpoint once.

    ``k`` is a number or ``"auto"`` (then ``auto_k`` is its value, as the train stage resolves it:
    :func:`lsrbench.model.auto_k.auto_k_from_files`; or a function of the results probed before
    it, for a statistic the probe itself measures at k = 1); ``backbone`` names the runs (default: the
    entry's model). Returns one :func:`probe_model` dict per ``(k, mode)``, with the run name
    (:func:`lsrbench.names.run_name`), ``k`` as text and its value, the mode and ``head_scale``.
    The fused pooling's self-check (which training runs per run) runs once, on the loaded model."""
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
    """The recipe with ``fused_pooling`` off when the fused path does not reproduce ``model`` (as
    training then falls back to sentence-transformers' pooling)."""
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
    """The probe's measures of one SparseEncoder (already rescaled) on ``batches`` of triplets, at
    step 0: per-batch quantities (losses, scores, gradients) averaged over the batches, per-text
    ones (activations) over every text of the sample. No weight changes. ``gradients=False``
    leaves the gradient norms out (one forward pass per batch, without autograd graph);
    ``check_fused=False`` skips the fused pooling's probe batch (see :func:`probe_backbone`)."""
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
    """One batch: the training loss's parts (full lambda), the score statistics and the gradient
    norms; returns them and the batch's pooled vectors (detached)."""
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
    """The batch as the trainer feeds it to the loss: its data collator (the training router
    mapping: query vs document lengths) and its split into per-column features."""
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
    """Norms of the ranking loss's and the FLOPS loss's gradients w.r.t. the head weight (one
    backward pass each; ``torch.autograd.grad`` leaves ``.grad`` untouched), of their sum, and
    of the ranking loss's gradient over all parameters (clip_grad_norm_'s total norm)."""
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
    """Dot-product scores of one batch as the ranking loss sees them (each query against the
    batch's ``2B`` documents): mean positive and hard-negative score, their mean gap, and the
    in-batch score scale, the standard deviation of a query's ``2B`` scores averaged over queries."""
    import torch

    scores = queries.double() @ torch.cat([positives, negatives]).double().T
    rows = torch.arange(queries.shape[0])
    positive, negative = scores[rows, rows], scores[rows, rows + queries.shape[0]]
    return {"positive_score": float(positive.mean()), "negative_score": float(negative.mean()),
            "score_gap": float((positive - negative).mean()), "score_scale": float(scores.std(dim=1, correction=0).mean())}


def activation_stats(vectors, prefix: str, vocab: int) -> dict:
    """SPLADE weights of a set of texts: active terms per text (and as a share of the vocabulary),
    mean and max weight over the active (text, term) pairs (0 when none is active)."""
    active = vectors > 0
    counts = active.sum(dim=1).double()
    values = vectors[active].double()
    return {f"{prefix}_active_terms": float(counts.mean()), f"{prefix}_active_share": float(counts.mean()) / vocab,
            f"{prefix}_mean_weight": float(values.mean()) if values.numel() else 0.0,
            f"{prefix}_max_weight": float(values.max()) if values.numel() else 0.0}


def _logit_scale(documents) -> dict:
    """The initial logit scale over the sample's documents: the mean over texts of
    the largest logit (``expm1`` of the largest weight, exact since ``w = log1p(relu(max logit))``;
    0 for a text with no positive logit) and the mean activation of active terms."""
    import torch

    values = documents[documents > 0].double()
    max_logit = float(torch.expm1(documents.max(dim=1).values.double()).mean())
    return dict(zip(LOGIT_STATISTICS, (max_logit, float(values.mean()) if values.numel() else 0.0)))


def _ratio(a: float, b: float) -> float:
    return a / b if b and math.isfinite(a) and math.isfinite(b) else math.nan


def _finite(result: dict) -> dict:
    """Non-finite numbers as None (plain JSON), their names listed in ``non_finite``."""
    bad = sorted(k for k, v in result.items() if isinstance(v, float) and not math.isfinite(v))
    return {**{k: (None if k in bad else v) for k, v in result.items()}, "non_finite": bad}
