"""The SPLADE training loss: ``SpladeLoss`` around ``SparseMultipleNegativesRankingLoss`` with FLOPS regularisers
(Paria et al. 2020), every part recorded; a non-finite part stops training."""

from __future__ import annotations

import math

from lsrbench.model.ranks import any_rank

__all__ = ["NonFiniteLoss", "recording_splade_loss", "global_flops", "candidates_per_query"]


def candidates_per_query(batch_size: int) -> int:
    """Documents each query is ranked against, ``2 x recipe.batch_size``: ln of it is the ranking loss of a
    collapsed model."""
    return 2 * int(batch_size)


class NonFiniteLoss(Exception):
    """A loss part is NaN or infinite; raised before any backward, so the model holds the previous step's
    weights."""

    def __init__(self, parts: dict):
        self.parts = parts
        super().__init__(f"non-finite loss {parts}")


def global_flops(embeddings):
    """The FLOPS regulariser of the whole batch across processes, its sums all-reduced so each parameter's gradient
    is the global one after DDP averaging."""
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
    """SpladeLoss that keeps each forward's exact loss parts and active dims; ``gather`` shares in-batch negatives
    across processes, ``keep_embeddings`` keeps the last pooled vectors for the probe."""
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
