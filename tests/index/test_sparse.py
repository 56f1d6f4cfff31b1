import os

import numpy as np
import pytest
import scipy.sparse as sp

from lsrbench.errors import InputError
from lsrbench.index.sparse import load_sparse, save_sparse


def _matrix():
    # Row 0 deliberately has unsorted indices; row 2 is empty.
    data = np.array([0.5, 2.0, 1.25, 3.0, 0.75], dtype=np.float32)
    indices = np.array([4, 1, 0, 2, 3], dtype=np.int32)
    indptr = np.array([0, 2, 4, 4, 5])
    return sp.csr_matrix((data, indices, indptr), shape=(4, 6))


def test_round_trip_exact(tmp_path):
    m = _matrix()
    ids = ["d0", "doc-1", "ü2", "3"]
    path = tmp_path / "vecs.npz"
    save_sparse(path, m, ids)
    loaded, loaded_ids = load_sparse(path)
    assert loaded_ids == ids
    assert isinstance(loaded, sp.csr_matrix)
    assert loaded.shape == (4, 6)
    assert loaded.dtype == np.float32
    np.testing.assert_array_equal(loaded.indptr, [0, 2, 4, 4, 5])
    # Sorted within rows on save.
    np.testing.assert_array_equal(loaded.indices, [1, 4, 0, 2, 3])
    np.testing.assert_array_equal(loaded.data, np.array([2.0, 0.5, 1.25, 3.0, 0.75], dtype=np.float32))
    np.testing.assert_array_equal(loaded.toarray(), m.toarray())
    # No stray temporary files beside the output.
    assert os.listdir(tmp_path) == ["vecs.npz"]


def test_saved_keys_and_dtypes(tmp_path):
    path = tmp_path / "vecs.npz"
    save_sparse(path, _matrix().astype(np.float64), ["a", "b", "c", "d"])
    with np.load(path, allow_pickle=False) as z:
        assert sorted(z.files) == ["data", "format", "ids", "indices", "indptr", "shape"]
        assert z["format"].item() == b"csr"
        assert z["data"].dtype == np.float32
        assert z["indices"].dtype == np.int32
        assert z["indptr"].dtype == np.int64
        assert z["ids"].dtype.kind == "U"
        np.testing.assert_array_equal(z["shape"], [4, 6])


def test_scipy_reads_file(tmp_path):
    path = tmp_path / "vecs.npz"
    m = _matrix()
    save_sparse(path, m, ["a", "b", "c", "d"])
    other = sp.load_npz(path)
    np.testing.assert_array_equal(other.toarray(), m.toarray())


def test_name_without_npz_suffix_kept(tmp_path):
    path = tmp_path / "vecs.bin"
    save_sparse(path, _matrix(), ["a", "b", "c", "d"])
    assert os.listdir(tmp_path) == ["vecs.bin"]
    assert load_sparse(path)[1] == ["a", "b", "c", "d"]


def test_empty_matrix_round_trip(tmp_path):
    path = tmp_path / "empty.npz"
    save_sparse(path, sp.csr_matrix((0, 5), dtype=np.float32), [])
    m, ids = load_sparse(path)
    assert m.shape == (0, 5) and m.nnz == 0 and ids == []


@pytest.mark.parametrize("keep", [0, 10, 100, -1])
def test_truncated_file(tmp_path, keep):
    path = tmp_path / "vecs.npz"
    save_sparse(path, _matrix(), ["a", "b", "c", "d"])
    raw = path.read_bytes()
    path.write_bytes(raw[: keep if keep >= 0 else len(raw) - 1])
    with pytest.raises(InputError) as ei:
        load_sparse(path)
    assert ei.value.file == str(path)
    assert "\n" not in str(ei.value)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="not found") as ei:
        load_sparse(tmp_path / "nope.npz")
    assert ei.value.file == str(tmp_path / "nope.npz")


def _write_raw(path, **overrides):
    m = _matrix()
    arrays = dict(
        format=np.array(b"csr"),
        shape=np.array(m.shape, dtype=np.int64),
        data=m.data.astype(np.float32),
        indices=m.indices.astype(np.int32),
        indptr=m.indptr.astype(np.int64),
        ids=np.array(["a", "b", "c", "d"]),
    )
    arrays.update(overrides)
    arrays = {k: v for k, v in arrays.items() if v is not None}
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


@pytest.mark.parametrize(
    "overrides, field",
    [
        (dict(ids=np.array(["a", "b", "c"])), "ids"),
        (dict(ids=np.array(["a", "b", "a", "d"])), "ids"),
        (dict(ids=None), "ids"),
        (dict(data=None), "data"),
        (dict(indptr=np.array([0, 2, 5, 4, 5])), "indptr"),
        (dict(indptr=np.array([0, 2, 4, 5])), "indptr"),
        (dict(indptr=np.array([0, 2, 4, 4, 6])), "indptr"),
        (dict(data=np.array([0.5, np.nan, 1.0, 3.0, 0.75], dtype=np.float32)), "data"),
        (dict(data=np.array([0.5, 2.0, np.inf, 3.0, 0.75], dtype=np.float32)), "data"),
        (dict(indices=np.array([4, 1, -1, 2, 3], dtype=np.int32)), "indices"),
        (dict(indices=np.array([4, 1, 6, 2, 3], dtype=np.int32)), "indices"),
        (dict(indices=np.array([4, 1, 0, 2], dtype=np.int32)), "indices"),
        (dict(format=np.array(b"csc")), "format"),
        (dict(shape=np.array([4])), "shape"),
    ],
)
def test_invalid_contents(tmp_path, overrides, field):
    path = tmp_path / "bad.npz"
    _write_raw(path, **overrides)
    with pytest.raises(InputError) as ei:
        load_sparse(path)
    assert ei.value.file == str(path)
    assert ei.value.field == field
    assert str(ei.value).startswith(f"{path}: {field}: ")


def test_not_an_npz(tmp_path):
    path = tmp_path / "text.npz"
    path.write_text("hello\n")
    with pytest.raises(InputError) as ei:
        load_sparse(path)
    assert ei.value.file == str(path)


def test_save_rejects_bad_input(tmp_path):
    with pytest.raises(ValueError, match="ids"):
        save_sparse(tmp_path / "x.npz", _matrix(), ["a"])
    bad = _matrix().astype(np.float64)
    bad.data[0] = 1e300  # finite in float64, inf in float32
    with pytest.raises(ValueError, match="non-finite"):
        save_sparse(tmp_path / "x.npz", bad, ["a", "b", "c", "d"])
    assert not (tmp_path / "x.npz").exists()


def test_failed_save_keeps_previous_file(tmp_path):
    path = tmp_path / "vecs.npz"
    save_sparse(path, _matrix(), ["a", "b", "c", "d"])
    before = path.read_bytes()
    with pytest.raises(ValueError):
        save_sparse(path, _matrix(), ["a"])
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["vecs.npz"]


def test_non_canonical_file_from_scipy_is_canonicalised(tmp_path):
    # Duplicate (row 0, col 1) entries and unsorted indices, as other tools may write them.
    m = sp.csr_matrix(
        (np.array([1.0, 0.5, 0.25], dtype=np.float32), np.array([3, 1, 1]), np.array([0, 3, 3])), shape=(2, 4)
    )
    path = tmp_path / "raw.npz"
    _write_raw(
        path,
        shape=np.array([2, 4]),
        data=m.data,
        indices=m.indices.astype(np.int32),
        indptr=m.indptr.astype(np.int64),
        ids=np.array(["x", "y"]),
    )
    loaded, ids = load_sparse(path)
    assert ids == ["x", "y"]
    np.testing.assert_array_equal(loaded.indices, [1, 3])
    np.testing.assert_array_equal(loaded.data, [0.75, 1.0])


def test_corrupted_member_names_key(tmp_path):
    path = tmp_path / "vecs.npz"
    m = sp.random(50, 70, density=0.4, format="csr", random_state=0, dtype=np.float32)
    save_sparse(path, m, [str(i) for i in range(50)])
    raw = bytearray(path.read_bytes())
    with np.load(path) as z:
        names = z.files
    assert "data" in names
    # Flip one byte inside the stored data array: the zip directory is intact, the CRC is not.
    offset = bytes(raw).index(m.tocsr().data.tobytes()[:16]) + 8
    raw[offset] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(InputError) as ei:
        load_sparse(path)
    assert ei.value.file == str(path) and ei.value.field == "data"
