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
    n_cols = model.get_embedding_dimension() if hasattr(model, "get_embedding_dimension") else None
    parts = []
    with torch.inference_mode():
        for start in range(0, len(texts), chunk):
            emb = encode(texts[start : start + chunk], batch_size=batch_size, convert_to_tensor=True, show_progress_bar=False)
            parts.append(torch_sparse_to_csr(emb, n_cols or emb.shape[1]))
    if not parts:
        return sp.csr_matrix((0, n_cols or 0), dtype=np.float32)
    return sp.vstack(parts, format="csr")
