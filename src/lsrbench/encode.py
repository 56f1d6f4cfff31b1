"""The index stage: encode a corpus and its queries into sparse vectors (CSR) with a SparseEncoder."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def torch_sparse_to_csr(tensor, n_cols: int) -> sp.csr_matrix:
    """A torch sparse COO (or dense) [rows, vocab] tensor as a float32 scipy CSR without a dense copy."""
    import torch

    if tensor.is_sparse:
        t = tensor.coalesce().cpu()
        rows, cols = t.indices().numpy()
        vals = t.values().float().numpy()
        keep = vals != 0
        m = sp.csr_matrix((vals[keep], (rows[keep], cols[keep])), shape=(t.shape[0], n_cols), dtype=np.float32)
    else:
        m = sp.csr_matrix(tensor.detach().float().cpu().numpy())
    m.sum_duplicates()
    m.sort_indices()
    return m


def encode_texts(model, texts: list[str], kind: str, batch_size: int = 32, chunk: int = 4096) -> sp.csr_matrix:
    """Encode ``texts`` as queries (``kind='query'``) or documents, chunk by chunk, to CSR."""
    import torch

    encode = model.encode_query if kind == "query" else model.encode_document
    # The width comes from the encoded tensors: before its first forward pass a SparseEncoder
    # reports the transformer's hidden size, not the vocabulary size.
    n_cols = None
    parts = []
    with torch.inference_mode():
        for start in range(0, len(texts), chunk):
            emb = encode(texts[start : start + chunk], batch_size=batch_size, convert_to_tensor=True, show_progress_bar=False)
            n_cols = emb.shape[1]
            parts.append(torch_sparse_to_csr(emb, n_cols))
    if not parts:
        return sp.csr_matrix((0, _vocab_size(model)), dtype=np.float32)
    return sp.vstack(parts, format="csr")


def _vocab_size(model) -> int:
    return int(model[0].auto_model.config.vocab_size)
