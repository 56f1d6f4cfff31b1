"""Names of the probe's statistics and settings, free of imports so the schema, the DAG and the reports share them
without torch."""

from __future__ import annotations

# The initial logit scale at k = 1: mean largest logit and mean active weight.
LOGIT_STATISTICS = ("max_logit", "mean_activation")
DEFAULT_PROBE_STATISTIC = "score_scale"
# Every top-level number of a probe result (gradient norms only with gradients on).
PROBE_STATISTICS = (
    "score_scale", "positive_score", "negative_score", "score_gap",
    "ranking_loss", "flops_query_loss", "flops_document_loss", "flops_loss", "flops_to_ranking_loss",
    "ranking_grad_norm", "flops_grad_norm", "total_grad_norm", "flops_to_ranking_grad", "model_grad_norm",
    "query_active_terms", "query_active_share", "query_mean_weight", "query_max_weight",
    "document_active_terms", "document_active_share", "document_mean_weight", "document_max_weight",
) + LOGIT_STATISTICS
# The recipe keys a probe reads (nothing else changes a step-0 measure): its identity holds exactly these.
PROBE_RECIPE_KEYS = ("seed", "batch_size", "query_max_length", "document_max_length", "lambda_q", "lambda_d",
                     "fused_pooling")
