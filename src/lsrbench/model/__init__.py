"""Backbones and their MLM head: families, loading, the paper's rescale, SPLADE encoders, the fused pooling and the
training driver."""
