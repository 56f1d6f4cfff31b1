"""Canonical on-disk format for sparse vectors: one ``.npz`` holding a CSR matrix and its row ids.

The keys are the ones ``scipy.sparse.load_npz`` reads (``format``, ``shape``, ``data``,
``indices``, ``indptr``) plus ``ids``, a numpy unicode array with one id per row. Nothing is
pickled, so a file can be loaded without trusting it, and scipy alone can read the matrix.
"""

from __future__ import annotations

import os
import zipfile
import zlib

import numpy as np
import scipy.sparse as sp

from .atomic import atomic_open
from .errors import InputError

__all__ = ["save_sparse", "load_sparse"]

_KEYS = ("format", "shape", "data", "indices", "indptr", "ids")


def save_sparse(path: str | os.PathLike, matrix: sp.spmatrix | sp.sparray, ids: list[str]) -> None:
    """Write ``matrix`` (as CSR, float32, sorted indices) and its row ``ids`` to ``path`` atomically.

    Duplicate entries are summed and indices sorted within rows, so one matrix always gives
    the same arrays; explicit zeros are kept as stored. The file is written under exactly
    ``path`` (no ``.npz`` is appended). Raises ``ValueError`` for a matrix or id list that
    could not be loaded back (wrong id count, non-finite values, too many columns).
    """
    if not sp.issparse(matrix):
        raise ValueError(f"save_sparse: expected a scipy sparse matrix, got {type(matrix).__name__}")
    # Overflow to inf is reported below as non-finite, not as a numpy warning.
    with np.errstate(over="ignore"):
        csr = sp.csr_matrix(matrix, dtype=np.float32, copy=True)
    csr.sum_duplicates()  # also sorts indices within each row
    n_rows, n_cols = csr.shape
    ids = [str(i) for i in ids]
    if len(ids) != n_rows:
        raise ValueError(f"save_sparse: {len(ids)} ids for {n_rows} rows")
    if n_cols > np.iinfo(np.int32).max:
        raise ValueError(f"save_sparse: {n_cols} columns do not fit int32 indices")
    data = np.ascontiguousarray(csr.data, dtype=np.float32)
    # Check after the float32 cast: a finite float64 beyond float32's range becomes inf.
    if not np.all(np.isfinite(data)):
        raise ValueError("save_sparse: matrix has non-finite values")
    # dtype=str on an empty list would give '<U1' anyway; be explicit so it is never object.
    ids_arr = np.array(ids, dtype=np.str_) if ids else np.zeros(0, dtype="<U1")
    with atomic_open(path, "wb") as fh:
        # A file handle stops np.savez from appending ".npz" to the temporary name.
        np.savez(
            fh,
            format=np.array(b"csr"),
            shape=np.array([n_rows, n_cols], dtype=np.int64),
            data=data,
            indices=np.ascontiguousarray(csr.indices, dtype=np.int32),
            indptr=np.ascontiguousarray(csr.indptr, dtype=np.int64),
            ids=ids_arr,
        )


def _read_arrays(path: str) -> dict[str, np.ndarray]:
    """Read every expected key of the npz at ``path``, turning any I/O or zip failure into InputError."""
    if not os.path.exists(path):
        raise InputError(path, None, "file not found")
    try:
        npz = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise InputError(path, None, f"not a readable .npz file ({_one_line(exc)})") from None
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise InputError(path, None, "not an .npz archive (a single .npy array?)")
    arrays: dict[str, np.ndarray] = {}
    with npz:
        for key in _KEYS:
            if key not in npz.files:
                raise InputError(path, key, "missing key")
            try:
                arrays[key] = npz[key]
            # A file cut short can still have a readable directory but broken members.
            except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
                raise InputError(path, key, f"unreadable array ({_one_line(exc)})") from None
    return arrays


def _one_line(exc: BaseException) -> str:
    """An exception's message squeezed onto one line (InputError messages must be one line)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def load_sparse(path: str | os.PathLike) -> tuple[sp.csr_matrix, list[str]]:
    """Load a file written by :func:`save_sparse`; return ``(csr_matrix float32, ids)``.

    Every structural problem (missing or truncated file, missing key, wrong dtypes, ``ids``
    not matching the rows, inconsistent ``indptr``, out-of-range ``indices``, NaN/inf in
    ``data``) raises :class:`InputError` naming the file and the key. A valid file whose rows
    are not in canonical form (written by other tools) is canonicalised on load.
    """
    path = str(path)
    a = _read_arrays(path)

    fmt = a["format"]
    fmt_val = fmt.item() if fmt.shape == () else None
    if isinstance(fmt_val, bytes):
        fmt_val = fmt_val.decode("ascii", "replace")
    if fmt_val != "csr":
        raise InputError(path, "format", f"expected 'csr', got {fmt_val!r}")

    shape = a["shape"]
    if shape.shape != (2,) or shape.dtype.kind not in "iu" or np.any(shape < 0):
        raise InputError(path, "shape", f"expected two non-negative integers, got {shape.tolist()!r}")
    n_rows, n_cols = int(shape[0]), int(shape[1])

    data = a["data"]
    if data.ndim != 1 or data.dtype.kind not in "fiu":
        raise InputError(path, "data", f"expected a 1-D numeric array, got {data.dtype} with shape {data.shape}")
    data = data.astype(np.float32, copy=False)
    if not np.all(np.isfinite(data)):
        bad = int(np.flatnonzero(~np.isfinite(data))[0])
        raise InputError(path, "data", f"non-finite value at position {bad}")
    nnz = data.shape[0]

    indptr = a["indptr"]
    if indptr.ndim != 1 or indptr.dtype.kind not in "iu":
        raise InputError(path, "indptr", f"expected a 1-D integer array, got {indptr.dtype} with shape {indptr.shape}")
    if indptr.shape[0] != n_rows + 1:
        raise InputError(path, "indptr", f"length {indptr.shape[0]}, expected rows + 1 = {n_rows + 1}")
    indptr = indptr.astype(np.int64, copy=False)
    if indptr[0] != 0 or indptr[-1] != nnz or np.any(np.diff(indptr) < 0):
        raise InputError(path, "indptr", f"must start at 0, be non-decreasing and end at nnz = {nnz}")

    indices = a["indices"]
    if indices.ndim != 1 or indices.dtype.kind not in "iu":
        raise InputError(path, "indices", f"expected a 1-D integer array, got {indices.dtype} with shape {indices.shape}")
    if indices.shape[0] != nnz:
        raise InputError(path, "indices", f"length {indices.shape[0]} differs from data length {nnz}")
    if nnz and (indices.min() < 0 or indices.max() >= n_cols):
        raise InputError(path, "indices", f"column index out of range [0, {n_cols})")

    ids_arr = a["ids"]
    if ids_arr.ndim != 1 or ids_arr.dtype.kind != "U":
        raise InputError(path, "ids", f"expected a 1-D unicode array, got {ids_arr.dtype} with shape {ids_arr.shape}")
    if ids_arr.shape[0] != n_rows:
        raise InputError(path, "ids", f"{ids_arr.shape[0]} ids for {n_rows} rows")
    ids = ids_arr.tolist()
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        dup = next(i for i in ids if i in seen or seen.add(i))
        raise InputError(path, "ids", f"duplicate id {dup!r}")

    matrix = sp.csr_matrix(
        (data, indices, indptr), shape=(n_rows, n_cols), copy=False
    )
    if not matrix.has_canonical_format:
        matrix.sum_duplicates()
    return matrix, ids
