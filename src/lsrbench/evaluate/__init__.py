"""Evaluate stage: exact top-k retrieval over an inverted index (:mod:`~lsrbench.evaluate.retrieval`,
:mod:`~lsrbench.evaluate.inverted_index`, numba kernels in :mod:`~lsrbench.evaluate.kernels`), TREC
run files (:mod:`~lsrbench.evaluate.trec`), effectiveness through ir_measures
(:mod:`~lsrbench.evaluate.metrics`) and efficiency (:mod:`~lsrbench.evaluate.flops`)."""
