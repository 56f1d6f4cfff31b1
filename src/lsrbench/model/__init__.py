"""Model stage: backbone families (:mod:`~lsrbench.model.families`: where each family's head is,
how it is tied, its position limit), backbones (:mod:`~lsrbench.model.checkpoint`), the paper's head rescale and head
norms (:mod:`~lsrbench.model.rescale`), SPLADE encoders (:mod:`~lsrbench.model.encoder`), the fused
decoder + max pooling (:mod:`~lsrbench.model.fused_pooling`) and the training driver
(:mod:`~lsrbench.model.train`) with its resumable checkpoints and per-step log."""
