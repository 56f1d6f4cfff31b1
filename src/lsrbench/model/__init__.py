"""Model stage: backbones (:mod:`~lsrbench.model.checkpoint`), the paper's head rescale and head
norms (:mod:`~lsrbench.model.rescale`), SPLADE encoders (:mod:`~lsrbench.model.encoder`), the fused
decoder + max pooling (:mod:`~lsrbench.model.fused_pooling`) and the training driver
(:mod:`~lsrbench.model.train`) with its resumable checkpoints and per-step log."""
