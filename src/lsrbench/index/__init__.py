"""Index stage: encode a corpus and its queries into SPLADE vectors (:mod:`~lsrbench.index.encode`,
its fast path :mod:`~lsrbench.index.fast_splade`), in resumable shards for large corpora
(:mod:`~lsrbench.index.shards`), stored in the canonical sparse ``.npz`` format
(:mod:`~lsrbench.index.sparse`)."""
