"""Datasets: evaluation collections in BEIR's layout, their sources, BM25 and pooled subsets, and training
triplets."""
