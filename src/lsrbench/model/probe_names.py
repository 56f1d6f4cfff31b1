"""Names of the probe's statistics and settings, free of imports so the schema, the DAG and the reports share them
without torch."""

from __future__ import annotations

# The initial logit scale, read at k = 1 (the backbone as loaded): mean over the
# probe's documents of the largest logit, and mean activation log1p(relu(.)) of active terms.
LOGIT_STATISTICS = ("max_logit", "mean_activation")
# The statistic whose match with the reference backbone's at k = 1 the probe recommends k by.
DEFAULT_PROBE_STATISTIC = "score_scale"
# Every number a probe result has at its top level (lsrbench.model.probe.probe_model; the gradient
# norms only with gradients on); its "head" holds the head's norms after the rescale
# (lsrbench.model.auto_k.NORM_STATISTICS).
PROBE_STATISTICS = (
    "score_scale", "positive_score", "negative_score", "score_gap",
    "ranking_loss", "flops_query_loss", "flops_document_loss", "flops_loss", "flops_to_ranking_loss",
    "ranking_grad_norm", "flops_grad_norm", "total_grad_norm", "flops_to_ranking_grad", "model_grad_norm",
    "query_active_terms", "query_active_share", "query_mean_weight", "query_max_weight",
    "document_active_terms", "document_active_share", "document_mean_weight", "document_max_weight",
) + LOGIT_STATISTICS
# The recipe keys a probe reads (the rest of the recipe, steps and learning rate among them, cannot
# change a step-0 measure; it always runs in fp32): the probe stage's identity holds exactly these.
PROBE_RECIPE_KEYS = ("seed", "batch_size", "query_max_length", "document_max_length", "lambda_q", "lambda_d",
                     "fused_pooling")
