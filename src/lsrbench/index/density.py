"""Collapse caught early: the index stage encodes an even sample of its corpus first and stops in one line when
its density is outside the declared band; the sample also sizes ``docs.npz``."""

from __future__ import annotations

import numpy as np

from lsrbench.errors import InputError
from lsrbench.progress import human_bytes

__all__ = ["BYTES_PER_NONZERO", "ROW_BYTES", "npz_bytes", "sample_rows", "density", "check_density", "density_line"]

BYTES_PER_NONZERO = 8  # a float32 value and an int32 term index
ROW_BYTES = 8 + 4 * 12  # a CSR row's pointer (int64) and an id of about 12 characters (numpy unicode)


def npz_bytes(rows: float, nonzeros_per_row: float) -> float:
    """Bytes of a ``.npz`` of ``rows`` vectors with ``nonzeros_per_row`` non-zeros each (uncompressed)."""
    return rows * (nonzeros_per_row * BYTES_PER_NONZERO + ROW_BYTES)


def sample_rows(n: int, size: int) -> np.ndarray:
    """``min(n, size)`` row numbers spread evenly over ``n`` rows (the first lines of a corpus need
    not be typical of it)."""
    if size >= n:
        return np.arange(n, dtype=np.int64)
    return np.linspace(0, n - 1, num=size).round().astype(np.int64)


def density(matrix) -> dict:
    """The sample's documents, terms, mean non-zeros, active share and empty share, as docs.npz will hold
    them."""
    rows, terms = matrix.shape
    row_of = np.repeat(np.arange(rows), np.diff(matrix.indptr))
    # a stored zero is no term, nor a NaN/inf (set to 0 before docs.npz is written: zero_non_finite)
    per_row = np.bincount(row_of[(matrix.data != 0) & np.isfinite(matrix.data)], minlength=rows)
    mean = float(per_row.mean()) if rows else 0.0
    return {"documents": int(rows), "terms": int(terms), "mean_nonzeros": mean,
            "active_share": mean / terms if terms else 0.0,
            "empty_share": float((per_row == 0).mean()) if rows else 0.0}


def density_line(found: dict, corpus: int) -> str:
    """What the sample measured and the ``docs.npz`` it sizes for the ``corpus``' documents."""
    return (f"sample of {found['documents']:,} of {corpus:,} documents: {found['mean_nonzeros']:.1f} non-zeros per "
            f"document on average ({found['active_share']:.2%} of {found['terms']:,} terms), {found['empty_share']:.1%} "
            f"empty; docs.npz about {human_bytes(npz_bytes(corpus, found['mean_nonzeros']))}")


def check_density(found: dict, corpus: int, max_active_share: float, max_empty_share: float, model_dir: str) -> None:
    """One-line InputError when the sample activates more than ``max_active_share`` of the vocabulary or has
    more than ``max_empty_share`` empty documents."""
    if found["active_share"] > max_active_share:
        field, why = "evaluation.index_max_active_share", f"above index_max_active_share {max_active_share:g}"
    elif found["empty_share"] > max_empty_share:
        field, why = "evaluation.index_max_empty_share", f"more empty than index_max_empty_share {max_empty_share:g}"
    else:
        return
    every = npz_bytes(corpus, found["terms"])
    raise InputError(model_dir, field, f"collapsed model, index stopped before the rest of its corpus: "
                     f"{density_line(found, corpus)} ({why}; every term active: {human_bytes(every)}); nothing was "
                     "written. The run is collapsed (docs/results-layout.md); to index it anyway raise the band in the "
                     "config's evaluation section (not part of the index's identity: nothing re-runs)")
