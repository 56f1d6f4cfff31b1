"""The on-disk format for sparse vectors: one ``.npz`` with a CSR matrix (scipy's keys) and its row ``ids``,
nothing pickled, byte-deterministic, members 64-byte aligned so they can be memory-mapped."""

from __future__ import annotations

import io
import os
import struct
import zipfile
import zlib

import numpy as np
import scipy.sparse as sp

from lsrbench.atomic import atomic_open
from lsrbench.errors import InputError

__all__ = ["save_sparse", "save_csr_arrays", "load_sparse", "scatter_rows"]

_KEYS = ("format", "shape", "data", "indices", "indptr", "ids")
_ALIGN = 64  # data offset of every member in the file (a multiple of any dtype's alignment)
_PAD_EXTRA_ID = 0xD935  # zipalign's extra-field id for alignment padding
_CHUNK = 1 << 24


def save_sparse(path: str | os.PathLike, matrix: sp.spmatrix | sp.sparray, ids: list[str]) -> None:
    """Write ``matrix`` (canonical float32 CSR) and its row ``ids`` to exactly ``path`` atomically; ValueError
    for what could not be loaded back."""
    if not sp.issparse(matrix):
        raise ValueError(f"save_sparse: expected a scipy sparse matrix, got {type(matrix).__name__}")
    # Overflow to inf is reported below as non-finite, not as a numpy warning.
    with np.errstate(over="ignore"):
        csr = sp.csr_matrix(matrix, dtype=np.float32)
    if not csr.has_canonical_format:
        csr = csr.copy()
        csr.sum_duplicates()
    save_csr_arrays(path, csr.shape, csr.indptr, csr.indices, csr.data, ids)


def save_csr_arrays(path: str | os.PathLike, shape: tuple[int, int], indptr: np.ndarray, indices: np.ndarray,
                    data: np.ndarray, ids: list[str]) -> None:
    """Write a canonical CSR given as arrays, as :func:`save_sparse` does, without copying them."""
    n_rows, n_cols = int(shape[0]), int(shape[1])
    ids = [str(i) for i in ids]
    if len(ids) != n_rows:
        raise ValueError(f"save_sparse: {len(ids)} ids for {n_rows} rows")
    if n_cols > np.iinfo(np.int32).max:
        raise ValueError(f"save_sparse: {n_cols} columns do not fit int32 indices")
    if indptr.shape != (n_rows + 1,) or indices.shape != data.shape or int(indptr[-1]) != data.shape[0]:
        raise ValueError("save_sparse: inconsistent CSR arrays")
    data = np.ascontiguousarray(data, dtype=np.float32)
    # Check after the float32 cast: a finite float64 beyond float32's range becomes inf.
    if not _all_finite(data):
        raise ValueError("save_sparse: matrix has non-finite values")
    ids_arr = np.array(ids, dtype=np.str_) if ids else np.zeros(0, dtype="<U1")
    arrays = {
        "format": np.array(b"csr"),
        "shape": np.array([n_rows, n_cols], dtype=np.int64),
        "data": data,
        "indices": np.ascontiguousarray(indices, dtype=np.int32),
        "indptr": np.ascontiguousarray(indptr, dtype=np.int64),
        "ids": ids_arr,
    }
    with atomic_open(path, "wb") as fh:
        _write_npz(fh, arrays)


def _all_finite(data: np.ndarray) -> bool:
    return all(np.isfinite(data[lo : lo + _CHUNK]).all() for lo in range(0, data.shape[0], _CHUNK))


def _write_npz(fh, arrays: dict[str, np.ndarray]) -> None:
    """``np.savez(fh, **arrays)``, with every member's data at a multiple of :data:`_ALIGN` in the file."""
    with zipfile.ZipFile(fh, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for key, arr in arrays.items():
            info = zipfile.ZipInfo(key + ".npy")  # date_time 1980-01-01, as np.savez
            info.compress_type = zipfile.ZIP_STORED
            header = io.BytesIO()
            np.lib.format.write_array_header_1_0(header, np.lib.format.header_data_from_array_1_0(arr))
            # Local header: 30 bytes, name, extra field (padding, then zip64), .npy header, data.
            used = fh.tell() + 30 + len(info.filename.encode("ascii")) + 20 + len(header.getvalue())
            pad = -used % _ALIGN
            if pad < 4:
                pad += _ALIGN
            info.extra = struct.pack("<HH", _PAD_EXTRA_ID, pad - 4) + bytes(pad - 4)
            with zf.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, arr, version=(1, 0), allow_pickle=False)


def _read_arrays(path: str, mmap: bool = False) -> dict[str, np.ndarray]:
    """Read every expected key of the npz (large members memory-mapped with ``mmap``); I/O or zip failures
    become InputError."""
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
                mapped = _map_member(path, npz.zip.getinfo(key + ".npy")) if mmap and key in ("data", "indices", "indptr") else None
                arrays[key] = mapped if mapped is not None else npz[key]
            # A file cut short can still have a readable directory but broken members.
            except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error, struct.error) as exc:
                raise InputError(path, key, f"unreadable array ({_one_line(exc)})") from None
    return arrays


def _map_member(path: str, info: zipfile.ZipInfo) -> np.ndarray | None:
    if info.compress_type != zipfile.ZIP_STORED:
        return None
    with open(path, "rb") as fh:
        fh.seek(info.header_offset)
        local = fh.read(30)
        if len(local) != 30 or local[:4] != b"PK\x03\x04":
            raise ValueError("bad local zip header")
        name_len, extra_len = struct.unpack("<HH", local[26:30])
        fh.seek(info.header_offset + 30 + name_len + extra_len)
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
        else:
            return None
        offset = fh.tell()
    count = int(np.prod(shape, dtype=np.int64))
    if fortran or dtype.hasobject or len(shape) != 1 or offset % max(1, dtype.alignment):
        return None
    if offset + count * dtype.itemsize > os.path.getsize(path):
        raise ValueError("member data runs past the end of the file")
    if count == 0:
        return np.zeros(0, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=(count,))


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def load_sparse(path: str | os.PathLike, mmap: bool = False) -> tuple[sp.csr_matrix, list[str]]:
    """Load a :func:`save_sparse` file as ``(csr_matrix float32, ids)``; every structural problem is an
    InputError naming file and key. ``mmap=True`` maps ``data`` and ``indices`` from the file."""
    path = str(path)
    a = _read_arrays(path, mmap=mmap)

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
    if not _all_finite(data):
        bad = next(lo + int(np.flatnonzero(~np.isfinite(data[lo : lo + _CHUNK]))[0])
                   for lo in range(0, data.shape[0], _CHUNK) if not np.isfinite(data[lo : lo + _CHUNK]).all())
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
        if mmap:
            matrix = matrix.copy()  # the maps are read-only
        matrix.sum_duplicates()
    return matrix, ids


def scatter_rows(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, positions: np.ndarray,
                 part: sp.csr_matrix) -> None:
    """Copy the rows of ``part`` into a preallocated CSR at ``positions``."""
    lengths = np.diff(part.indptr)
    if part.nnz == 0:
        return
    # Destination of the k-th stored entry of part: its row's start there, plus its rank in its row.
    dest = np.repeat(indptr[positions] - part.indptr[:-1], lengths) + np.arange(part.nnz, dtype=np.int64)
    indices[dest] = part.indices
    data[dest] = part.data
