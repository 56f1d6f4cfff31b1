"""Resumable encoding of a large corpus in shards of whole :class:`~lsrbench.index.encode.EncodePlan` batches,
bit-identical to a one-shot encode; a restarted job reuses complete shards of the same key."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import zipfile
import zlib
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from lsrbench.atomic import atomic_open, keyed_dir
from lsrbench.hashing import stable_hash
from lsrbench.index.sparse import save_csr_arrays, scatter_rows

log = logging.getLogger(__name__)

__all__ = ["SHARD_KEY", "encode_to_npz", "shard_key", "discard_shards"]

SHARD_KEY = "lsrbench_shards.json"
SHARD_FORMAT = 1
_SHARD_RE = re.compile(r"^shard-(\d{6})\.npz$")
_OURS_RE = re.compile(r"^(shard-\d{6}\.npz|\.shard-\d{6}\.npz\.tmp-.*|\." + re.escape(SHARD_KEY) + r"\.tmp-.*)$")


def shard_name(j: int) -> str:
    return f"shard-{j:06d}.npz"


def shard_key(parts: dict) -> str:
    return stable_hash(parts)


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("torch", "transformers", "sentence-transformers", "numpy", "scipy"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def prepare_shard_dir(shard_dir: str | os.PathLike, key: str, info: dict) -> None:
    """Make ``shard_dir`` hold only shards of ``key`` (others and killed writers' leftovers deleted)."""
    with keyed_dir(shard_dir, SHARD_KEY, key, info) as (root, stale):
        for child in root.iterdir():
            if not child.is_file() or not _OURS_RE.match(child.name):
                continue
            if child.name.startswith("."):
                log.info("removing the leftover of a killed writer %s", child)
                child.unlink(missing_ok=True)
            elif stale:
                log.warning("removing stale shard %s (another model, corpus or encoder setting)", child)
                child.unlink(missing_ok=True)


def write_shard(path: Path, rows: np.ndarray, matrix: sp.csr_matrix) -> None:
    """Write one finished shard atomically (a killed writer leaves only a ``.tmp-`` file)."""
    with atomic_open(path, "wb") as fh:
        np.savez(fh, rows=np.asarray(rows, dtype=np.int64), shape=np.array(matrix.shape, dtype=np.int64),
                 indptr=np.asarray(matrix.indptr, dtype=np.int64), indices=np.asarray(matrix.indices, dtype=np.int32),
                 data=np.asarray(matrix.data, dtype=np.float32))


def read_shard(path: Path, rows: np.ndarray, n_cols: int | None = None,
               keys=("rows", "shape", "indptr", "indices", "data")) -> dict | None:
    """A shard's arrays when it holds exactly ``rows`` as a valid canonical CSR, else None (reason logged)."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            a = {k: npz[k] for k in keys}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as exc:
        log.warning("shard %s is unreadable (%s): encoding it again", path, " ".join(str(exc).split()))
        return None
    problem = _shard_problem(a, rows, n_cols)
    if problem:
        log.warning("shard %s is invalid (%s): encoding it again", path, problem)
        return None
    return a


def _shard_problem(a: dict, rows: np.ndarray, n_cols: int | None) -> str | None:
    if not np.array_equal(a["rows"], rows):
        return "not the rows of this shard"
    if "shape" in a:
        shape = a["shape"]
        if shape.shape != (2,) or int(shape[0]) != rows.shape[0] or (n_cols is not None and int(shape[1]) != n_cols):
            return f"shape {shape.tolist()}"
        n_cols = int(shape[1])
    indptr = a["indptr"]
    if indptr.shape != (rows.shape[0] + 1,) or indptr[0] != 0 or np.any(np.diff(indptr) < 0):
        return "bad indptr"
    if "indices" in a:
        indices, data = a["indices"], a["data"]
        if indices.shape != (int(indptr[-1]),) or data.shape != indices.shape or data.dtype != np.float32:
            return "arrays of the wrong length"
        if indices.size and (indices.min() < 0 or (n_cols is not None and indices.max() >= n_cols)):
            return "column index out of range"
        if not np.isfinite(data).all():
            return "non-finite weights"
        m = sp.csr_matrix((data, indices, indptr), shape=(rows.shape[0], n_cols or int(indices.max(initial=-1)) + 1))
        if not m.has_canonical_format:
            return "rows not sorted"
    return None


def encode_to_npz(plan, ids: list[str], out_path: str | os.PathLike, shard_size: int, shard_dir: str | os.PathLike,
                  key_parts: dict, fix=None, progress=None) -> dict:
    """Encode ``plan``'s texts shard by shard into ``shard_dir`` (reusing complete ones), ``fix`` applied row by
    row, then assemble ``out_path``; returns the shard counts."""
    shards = plan.shards(shard_size)
    shard_rows = plan.shard_rows(shard_size)
    info = {"documents": len(plan.texts), "shard_rows": shard_rows, "shards": len(shards), "path": plan.path,
            **key_parts}
    key = shard_key({**info, "format": SHARD_FORMAT, "kind": plan.kind, "batch_size": plan.batch_size,
                     "chunk": plan.chunk, "unit": plan.unit, "device": str(plan.model.device), "versions": _versions()})
    root = Path(shard_dir)
    prepare_shard_dir(root, key, info)
    reused = encoded = 0
    n_cols = plan.vocab
    for j, rows in enumerate(shards):
        path = root / shard_name(j)
        if path.is_file():
            found = read_shard(path, rows, n_cols)
            if found is not None:
                n_cols = int(found["shape"][1])
                reused += 1
                if progress is not None:
                    progress.skip(rows.shape[0])
                continue
            path.unlink(missing_ok=True)
        matrix = plan.encode(rows, progress)
        if fix is not None:
            matrix = fix(matrix)
        n_cols = matrix.shape[1]
        write_shard(path, rows, matrix)
        encoded += 1
        log.info("%s: shard %d/%d encoded (%d texts)", out_path, j + 1, len(shards), rows.shape[0])
    log.info("%s: %d shards of %d rows: %d reused, %d encoded", out_path, len(shards), shard_rows, reused, encoded)
    _assemble(root, shards, len(plan.texts), n_cols, ids, out_path)
    return {"shards": len(shards), "shard_rows": shard_rows, "reused": reused, "encoded": encoded}


def _assemble(root: Path, shards: list[np.ndarray], n_rows: int, n_cols: int, ids: list[str], out_path) -> None:
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    for j, rows in enumerate(shards):
        a = _must_read(root / shard_name(j), rows, n_cols, keys=("rows", "shape", "indptr"))
        indptr[1:][rows] = np.diff(a["indptr"])
    np.cumsum(indptr, out=indptr)
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    data = np.empty(int(indptr[-1]), dtype=np.float32)
    for j, rows in enumerate(shards):
        a = _must_read(root / shard_name(j), rows, n_cols)
        part = sp.csr_matrix((a["data"], a["indices"], a["indptr"]), shape=(rows.shape[0], n_cols))
        scatter_rows(indptr, indices, data, rows, part)
        del a, part
    save_csr_arrays(out_path, (n_rows, n_cols), indptr, indices, data, ids)


def _must_read(path: Path, rows: np.ndarray, n_cols: int, keys=("rows", "shape", "indptr", "indices", "data")) -> dict:
    a = read_shard(path, rows, n_cols, keys)
    if a is None:  # checked a moment ago: something else is writing into the shard folder
        raise RuntimeError(f"{path} changed while the output was being assembled")
    return a


def discard_shards(shard_dir: str | os.PathLike | None) -> None:
    """Remove a shard folder once the outputs it was assembled into are all written."""
    if shard_dir is not None:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(shard_dir)
