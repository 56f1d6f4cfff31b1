"""Data stage: evaluation collections in BEIR's layout (:mod:`~lsrbench.data.beir`), their sources
(:mod:`~lsrbench.data.sources`: BEIR folders and downloads, ir_datasets, Hugging Face), BM25 and
pooled subsets (:mod:`~lsrbench.data.bm25`), and training triplets (:mod:`~lsrbench.data.triplets`)."""
