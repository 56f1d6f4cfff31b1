"""The SPLADE training loss: sentence-transformers' ``SpladeLoss`` around
``SparseMultipleNegativesRankingLoss`` (in-batch negatives) with the FLOPS regularisers of Paria et
al., "Minimizing FLOPs to Learn Efficient Sparse Representations" (ICLR 2020), as SPLADE v2
(Formal et al., 2021) uses them on queries and documents, recording every loss part exactly.

A non-finite loss part stops training before that step's update (:class:`NonFiniteLoss`).

Data-parallel training: the ranking loss ranks each process's queries against the documents of all
processes (sentence-transformers' ``gather_across_devices``), and the FLOPS regularisers are
computed on the global batch too (:func:`global_flops`): ``sum_j (mean over the batch of w_j)^2``
of a share of the batch is a different, larger number (the square of a noisier mean), so the
result would depend on how many GPUs the job sees.
"""

from __future__ import annotations

import math

from lsrbench.model.ranks import any_rank

__all__ = ["NonFiniteLoss", "recording_splade_loss", "global_flops", "candidates_per_query"]


def candidates_per_query(batch_size: int) -> int:
    """The documents the ranking loss ranks each query against: the positive and the hard negative
    of every triplet of the (global) batch, ``2 x recipe.batch_size`` (data-parallel processes share
    theirs, ``gather_across_devices``). A model that scores them all alike (a collapsed one: every
    vector zero) has the ranking loss ln of this, the chance level the loss curves show."""
    return 2 * int(batch_size)


class NonFiniteLoss(Exception):
    """Raised inside the loss's forward, before any backward or optimiser step, when a loss part
    is NaN or infinite: the model then still holds the weights of the previous step."""

    def __init__(self, parts: dict):
        self.parts = parts
        super().__init__(f"non-finite loss {parts}")


def global_flops(embeddings):
    """FLOPS regulariser of the whole batch, ``sum_j (mean_i w_ij)^2``, when several processes hold
    a share of it each: the per-term sums and the row counts are all-reduced (summed), with the
    gradient flowing back to every process's share (``torch.distributed.nn.functional.all_reduce``
    sums the incoming gradients in its backward). Every process gets the global value; after DDP
    averages the gradients over the ``P`` processes, each parameter's gradient is that of the
    global regulariser exactly (each process contributes ``P`` times its share, divided by ``P``).
    One process: ``torch.mean`` as in sentence-transformers' ``FlopsLoss``."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return torch.sum(torch.mean(embeddings, dim=0) ** 2)
    from torch.distributed.nn.functional import all_reduce

    sums = all_reduce(embeddings.sum(dim=0))
    rows = torch.tensor([float(embeddings.shape[0])], device=embeddings.device)
    dist.all_reduce(rows)
    return torch.sum((sums / rows) ** 2)


def _mean_over_ranks(row: dict) -> dict:
    """The recorded loss parts and active dims averaged over the processes (equal shares): the
    ranking loss of the global batch, as one process would record it."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return row
    keys = sorted(row)
    device = "cuda" if dist.get_backend() == "nccl" else "cpu"
    t = torch.tensor([row[k] for k in keys], dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return dict(zip(keys, (t / dist.get_world_size()).tolist()))


def recording_splade_loss(model, lambda_q: float, lambda_d: float, gather: bool = False,
                          keep_embeddings: bool = False):
    """SpladeLoss(SparseMultipleNegativesRankingLoss) that keep, per forward, the exact loss parts and
    the active dims of queries and documents (the trainer's own logs round to 4 digits).
    ``gather``: several training processes share their documents as in-batch negatives
    (sentence-transformers' ``gather_across_devices``), so every query is ranked against the whole
    global batch as on one device. ``keep_embeddings``: the ranking loss keeps the pooled vectors
    of its last forward (``loss.loss.last_embeddings``: queries, positives, negatives, with their
    autograd graph), which the probe (:mod:`lsrbench.model.probe`) measures beside the loss."""
    import torch
    from sentence_transformers.sparse_encoder.losses import FlopsLoss, SparseMultipleNegativesRankingLoss, SpladeLoss

    class GlobalFlopsLoss(FlopsLoss):
        def compute_loss_from_embeddings(self, embeddings):
            return global_flops(embeddings)

    class RecordingRankingLoss(SparseMultipleNegativesRankingLoss):
        last_embeddings = None

        def compute_loss_from_embeddings(self, embeddings, labels=None):
            if keep_embeddings:
                self.last_embeddings = list(embeddings)
            with torch.no_grad():
                self.last_active = (
                    (embeddings[0] != 0).sum(dim=1).float().mean().item(),
                    torch.cat([(e != 0).sum(dim=1).float() for e in embeddings[1:]]).mean().item(),
                )
            return super().compute_loss_from_embeddings(embeddings, labels)

    class RecordingSpladeLoss(SpladeLoss):
        records: list[dict] = []

        def forward(self, sentence_features, labels=None):
            parts = super().forward(sentence_features, labels)
            if self.training:
                row = {name: float(value.detach()) for name, value in parts.items()}
                if any_rank(not all(math.isfinite(row[name]) for name in parts)):
                    raise NonFiniteLoss({name: row[name] for name in parts})
                row["query_active_dims"], row["document_active_dims"] = self.loss.last_active
                self.records.append(_mean_over_ranks(row))
            return parts

    loss = RecordingSpladeLoss(
        model,
        loss=RecordingRankingLoss(model, gather_across_devices=gather),
        query_regularizer_weight=lambda_q,
        document_regularizer_weight=lambda_d,
        query_regularizer=GlobalFlopsLoss(model),
        document_regularizer=GlobalFlopsLoss(model),
    )
    loss.records = []
    return loss
