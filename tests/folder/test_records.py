"""The digest cache and the records a finished job is checked against (:mod:`lsrbench.dag.fingerprint`,
:mod:`lsrbench.folder.records`), on real files: an edit that keeps the size and sets the mtime back is
hashed again; a damaged record is damaged, not "no record"."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from lsrbench.dag.fingerprint import FileDigests
from lsrbench.folder.records import DamagedRecord, load_record, read_record


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_an_edit_of_the_same_size_with_the_mtime_set_back_is_hashed_again(tmp_path):
    """``touch -r`` after an edit: before, the cache (path, size, mtime) returned the old digest."""
    path, cache = tmp_path / "metrics.tsv", tmp_path / "digests.json"
    path.write_bytes(b"nDCG@10\t0.730\n")
    stat = path.stat()
    digests = FileDigests(cache)
    assert digests.file(path) == _sha(b"nDCG@10\t0.730\n")
    digests.save()
    path.write_bytes(b"nDCG@10\t0.930\n")  # one digit, same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the mtime set back
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    assert FileDigests(cache).file(path) == _sha(b"nDCG@10\t0.930\n")  # a fresh planning, from the saved cache
    assert digests.file(path) == _sha(b"nDCG@10\t0.930\n")  # and the same cache in memory


def test_a_file_replaced_by_another_of_the_same_times_is_hashed_again(tmp_path):
    """Another file moved over it (a new inode), its size and mtime the old one's."""
    path, other, cache = tmp_path / "model.safetensors", tmp_path / "other", tmp_path / "digests.json"
    path.write_bytes(b"a" * 64)
    stat = path.stat()
    digests = FileDigests(cache)
    digests.file(path)
    digests.save()
    other.write_bytes(b"b" * 64)
    os.utime(other, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.replace(other, path)
    assert FileDigests(cache).file(path) == _sha(b"b" * 64)


def test_an_unchanged_file_is_not_hashed_again(tmp_path):
    """The cache is used while the file is untouched: a cached digest (here a made-up one, to
    tell it apart from a re-hash) comes back as it is; an entry of the older (size, mtime) key does not."""
    path, cache = tmp_path / "docs.npz", tmp_path / "digests.json"
    path.write_bytes(b"vectors")
    digests = FileDigests(cache)
    digests.file(path)
    digests.save()
    entries = json.loads(cache.read_text())
    (key, stamp), = entries.items()
    cache.write_text(json.dumps({key: [*stamp[:-1], "f" * 64]}))
    assert FileDigests(cache).file(path) == "f" * 64
    stat = path.stat()
    cache.write_text(json.dumps({key: [stat.st_size, stat.st_mtime_ns, "f" * 64]}))
    assert FileDigests(cache).file(path) == _sha(b"vectors")


RECORD = {"kind": "evaluate", "identity": {}, "made_from": [],
          "outputs": {"results/x/metrics.tsv": {"sha256": "0" * 64, "bytes": 3}}}
MANIFEST = {"rule": "table1", "config": None, "manifest": "results/manifests/table1.json",
            "artifacts": {"inputs": {}, "outputs": {"results/table1.md": {"sha256": "0" * 64, "bytes": 3}}}}


@pytest.mark.parametrize("name, text, says", [
    ("table1.json", json.dumps(MANIFEST)[:50], "unreadable"),                      # truncated
    ("table1.json", json.dumps({**MANIFEST, "artifacts": "x"}), "no file hashes"),  # edited
    ("table1.json", "[]", "not a JSON object"),
    ("params.json", json.dumps(RECORD)[:-20], "unreadable"),
    ("params.json", json.dumps({**RECORD, "outputs": {"a": {"sha256": 1}}}), "no file hashes"),
])
def test_a_damaged_record_is_damaged_not_absent(tmp_path, name, text, says):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DamagedRecord, match=says):
        load_record(path)
    assert read_record(path) is None  # where only a readable record matters (which config made a report)


def test_records_that_are_there_and_records_that_are_not(tmp_path):
    manifest, params = tmp_path / "table1.json", tmp_path / "params.json"
    manifest.write_text(json.dumps(MANIFEST))
    params.write_text(json.dumps(RECORD))
    assert load_record(manifest).outputs == MANIFEST["artifacts"]["outputs"]
    assert load_record(params).outputs == RECORD["outputs"]
    assert load_record(tmp_path / "missing.json") is None
    params.write_text(json.dumps({"kind": "evaluate", "identity": {}}))  # written before records existed
    assert load_record(params) is None
