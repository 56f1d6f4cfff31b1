"""Names of the probe's statistics ("Rescaling MLM-Head for Neural Sparse Retrieval", arXiv
2606.18811; issue 19) that other modules spell the same way, kept free of imports so that the head
norms (:mod:`lsrbench.model.auto_k`), the probe (:mod:`lsrbench.model.probe`) and the reports share
them without importing torch or each other."""

from __future__ import annotations

# The initial logit scale (issue 18, item 7), read at k = 1 (the backbone as loaded): mean over the
# probe's documents of the largest logit, and mean activation log1p(relu(.)) of active terms.
LOGIT_STATISTICS = ("max_logit", "mean_activation")
# The statistic whose match with the reference backbone's at k = 1 the probe recommends k by.
DEFAULT_PROBE_STATISTIC = "score_scale"
