"""The SPLADE training loss: sentence-transformers' ``SpladeLoss`` around
``SparseMultipleNegativesRankingLoss`` (in-batch negatives) with the FLOPS regularisers of Paria et
al., "Minimizing FLOPs to Learn Efficient Sparse Representations" (ICLR 2020), as SPLADE v2
(Formal et al., 2021) uses them on queries and documents, recording every loss part exactly.

A non-finite loss part stops training before that step's update (:class:`NonFiniteLoss`).
"""

from __future__ import annotations

import math

from lsrbench.model.ranks import any_rank

__all__ = ["NonFiniteLoss", "recording_splade_loss"]


class NonFiniteLoss(Exception):
    """Raised inside the loss's forward, before any backward or optimiser step, when a loss part
    is NaN or infinite: the model then still holds the weights of the previous step."""

    def __init__(self, parts: dict):
        self.parts = parts
        super().__init__(f"non-finite loss {parts}")


def recording_splade_loss(model, lambda_q: float, lambda_d: float, gather: bool = False):
    """SpladeLoss(SparseMultipleNegativesRankingLoss) that keep, per forward, the exact loss parts and
    the active dims of queries and documents (the trainer's own logs round to 4 digits).
    ``gather``: several training processes share their documents as in-batch negatives
    (sentence-transformers' ``gather_across_devices``), so every query is ranked against the whole
    global batch as on one device."""
    import torch
    from sentence_transformers.sparse_encoder.losses import SparseMultipleNegativesRankingLoss, SpladeLoss

    class RecordingRankingLoss(SparseMultipleNegativesRankingLoss):
        def compute_loss_from_embeddings(self, embeddings, labels=None):
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
                self.records.append(row)
            return parts

    loss = RecordingSpladeLoss(
        model,
        loss=RecordingRankingLoss(model, gather_across_devices=gather),
        query_regularizer_weight=lambda_q,
        document_regularizer_weight=lambda_d,
    )
    loss.records = []
    return loss
