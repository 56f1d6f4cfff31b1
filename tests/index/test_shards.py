"""Resumable sharded encoding (the index stage at MS MARCO scale) and the memory-lean loading of
its output.

* A document's vector depends on the batch it is encoded in (padding changes the backbone's
  matrix shapes: ~1e-6), so shards are runs of whole batches of the one-shot call's plan, and the
  assembled docs.npz is the one-shot encode's file byte for byte, whatever the shard size.
* A real SIGKILL of the index stage after some shards (and in the middle of writing the next):
  the rerun encodes only the missing shards and ends with the same bytes.
* A cut-short shard, and shards of another model or shard size, are never reused.
* ``load_sparse(mmap=True)`` maps the arrays (aligned members), so the evaluate stage holds one
  copy of the postings (the inverted index's), not two.

Real SPLADE-tiny on 96 documents of a slice of Vaswani, in batches of 8 (skipped without
../shared): shards of 2 batches, 6 of them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from helpers.paths import shared_or_skip

BATCH = 8
SHARD = 16  # 2 batches per shard
DOCS = 96  # 6 shards


@pytest.fixture(scope="module")
def shard_slice(tmp_path_factory, vaswani_slice) -> Path:
    """The first ``DOCS`` documents of the slice with its queries (their judgments on them)."""
    from helpers.beir import write_beir
    from lsrbench.data.beir import load_beir_folder

    ds = load_beir_folder(vaswani_slice)
    corpus = dict(list(ds.corpus.items())[:DOCS])
    qrels = [(q, d, s) for q, rels in ds.qrels.items() for d, s in rels.items() if d in corpus]
    return write_beir(tmp_path_factory.mktemp("shard_slice"), corpus, ds.queries, qrels)


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory) -> Path:
    """SPLADE-tiny saved as a SparseEncoder folder (what the train stage writes)."""
    from lsrbench.model.encoder import build_sparse_encoder

    src = shared_or_skip("models", "splade-tiny-msmarco")
    out = tmp_path_factory.mktemp("splade_tiny_encoder")
    build_sparse_encoder(str(src), 128, query_length=32, document_length=128, device="cpu").save(str(out))
    return out


@pytest.fixture(scope="module")
def other_encoder_dir(tmp_path_factory) -> Path:
    """Another model: SPLADE-tiny with its head x10."""
    from lsrbench.model.encoder import build_sparse_encoder

    src = shared_or_skip("models", "splade-tiny-msmarco")
    out = tmp_path_factory.mktemp("splade_tiny_x10_encoder")
    build_sparse_encoder(str(src), 128, query_length=32, document_length=128, head_scale=10,
                         device="cpu").save(str(out))
    return out


def _index(encoder, data, out: Path, shard_size, **kw) -> dict:
    from lsrbench.stages.index import index

    out.mkdir(parents=True, exist_ok=True)
    return index("slice", str(encoder), str(data), BATCH, "fp32", None, None, str(out / "queries.npz"),
                 str(out / "docs.npz"), shard_size=shard_size, shard_dir=str(out / "doc_shards"), **kw)


@pytest.fixture(scope="module")
def one_shot(tmp_path_factory, encoder_dir, shard_slice) -> Path:
    out = tmp_path_factory.mktemp("one_shot")
    stats = _index(encoder_dir, shard_slice, out, None)
    assert stats["documents"]["shards"] == 1
    return out


# -- assembly equals the one-shot encode ---------------------------------------------------------

def test_batches_change_floats_so_contiguous_slices_would_not_do(encoder_dir, shard_slice):
    """Why shards follow the one-shot plan: encoding contiguous slices of the corpus separately
    moves weights by float rounding (the premise; if it ever stops holding, nothing breaks)."""
    from sentence_transformers import SparseEncoder

    from lsrbench.data.beir import load_beir_folder
    from lsrbench.index.encode import encode_texts

    texts = list(load_beir_folder(shard_slice).corpus.values())[:DOCS]
    model = SparseEncoder(str(encoder_dir), device="cpu")
    whole = encode_texts(model, texts, "document", BATCH)
    sliced = sp.vstack([encode_texts(model, texts[i : i + SHARD], "document", BATCH) for i in range(0, len(texts), SHARD)],
                       format="csr")
    diff = abs(whole - sliced)
    assert diff.max() < 1e-4  # the same vectors up to rounding ...
    print(f"contiguous slices: {diff.nnz} weights differ, max {diff.max():.2e}")


@pytest.mark.parametrize("shard_size", [SHARD, 50, 7, 10_000])
def test_assembled_docs_equal_the_one_shot_file_byte_for_byte(tmp_path, encoder_dir, shard_slice, one_shot, shard_size):
    """50 is not a multiple of the batch (rounded down to 48), 7 is below one batch (rounded up to
    8), 10,000 exceeds the corpus (one shard: the one-shot path)."""
    stats = _index(encoder_dir, shard_slice, tmp_path, shard_size)["documents"]
    rows = {SHARD: SHARD, 50: 48, 7: BATCH, 10_000: None}[shard_size]
    if rows is not None:
        assert stats["shard_rows"] == rows and stats["shards"] > 1 and stats["encoded"] == stats["shards"]
    else:
        assert stats["shards"] == 1
    assert (tmp_path / "docs.npz").read_bytes() == (one_shot / "docs.npz").read_bytes()
    assert (tmp_path / "queries.npz").read_bytes() == (one_shot / "queries.npz").read_bytes()
    assert not (tmp_path / "doc_shards").exists()  # removed once the outputs exist


def test_plain_path_shards_are_whole_chunks(encoder_dir, shard_slice, monkeypatch):
    """A model the fast path does not take: sentence-transformers is called chunk by chunk; shards
    of whole chunks give exactly the one-shot rows."""
    from sentence_transformers import SparseEncoder

    from lsrbench.data.beir import load_beir_folder
    from lsrbench.index.encode import EncodePlan, encode_texts
    from lsrbench.index.fast_splade import FastSplade as _FastSplade

    monkeypatch.setattr(_FastSplade, "build", classmethod(lambda cls, *a, **k: None))
    texts = list(load_beir_folder(shard_slice).corpus.values())[:72]
    model = SparseEncoder(str(encoder_dir), device="cpu")
    whole = encode_texts(model, texts, "document", BATCH, chunk=24)
    plan = EncodePlan(model, texts, "document", BATCH, chunk=24)
    assert plan.path == "plain" and plan.shard_rows(50) == 48
    parts = plan.shards(50)
    assert [p.tolist() for p in parts] == [list(range(0, 48)), list(range(48, 72))]
    got = sp.vstack([plan.encode(p) for p in parts], format="csr")
    assert np.array_equal(got.indptr, whole.indptr) and np.array_equal(got.indices, whole.indices)
    assert np.array_equal(got.data, whole.data)


# -- a real SIGKILL, then a rerun --------------------------------------------------------------

DRIVER = r'''
import io, json, logging, os, signal, sys
import numpy as np
from lsrbench.index import shards
from lsrbench.stages.index import index as index_job

kill_after, model, data, out, shard_size, batch = sys.argv[1:7]
kill_after = int(kill_after)
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
calls = {"written": 0}
write = shards.write_shard

def write_shard(path, rows, matrix):
    if calls["written"] == kill_after:
        # SIGKILL half way through writing this shard (its temporary file has half the bytes).
        real = np.savez
        def half_then_die(fh, **arrays):
            buf = io.BytesIO()
            real(buf, **arrays)
            fh.write(buf.getvalue()[: len(buf.getvalue()) // 2])
            fh.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        np.savez = half_then_die
    write(path, rows, matrix)
    calls["written"] += 1

shards.write_shard = write_shard
stats = index_job("slice", model, data, int(batch), "fp32", None, None, out + "/queries.npz", out + "/docs.npz",
                     shard_size=int(shard_size), shard_dir=out + "/doc_shards")
print("RESULT " + json.dumps(stats))
'''


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run([sys.executable, str(driver), *args], capture_output=True, text=True, env=env, timeout=600)


def _result(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def test_killed_index_job_resumes_at_the_first_missing_shard(tmp_path, encoder_dir, shard_slice):
    """Separate processes, one thread each, as a restarted Snakemake job would run."""
    ref = tmp_path / "uninterrupted"
    ref.mkdir()
    full = _result(_run(tmp_path, "-1", str(encoder_dir), str(shard_slice), str(ref), str(SHARD), str(BATCH)))["documents"]
    assert full["reused"] == 0 and full["encoded"] == full["shards"] >= 5

    out = tmp_path / "killed"
    out.mkdir()
    killed = _run(tmp_path, "3", str(encoder_dir), str(shard_slice), str(out), str(SHARD), str(BATCH))
    assert killed.returncode == -9, killed.stderr[-2000:]  # SIGKILL
    assert not (out / "docs.npz").exists() and not (out / "queries.npz").exists()
    shards = out / "doc_shards"
    assert sorted(p.name for p in shards.glob("shard-*.npz")) == [f"shard-{j:06d}.npz" for j in range(3)]
    assert len(list(shards.glob(".shard-000003.npz.tmp-*"))) == 1  # the half-written 4th shard

    proc = _run(tmp_path, "-1", str(encoder_dir), str(shard_slice), str(out), str(SHARD), str(BATCH))
    resumed = _result(proc)["documents"]
    assert resumed == {**full, "reused": 3, "encoded": full["shards"] - 3}
    assert f"{full['shards']} shards of {SHARD} rows: 3 reused, {full['shards'] - 3} encoded" in proc.stderr
    assert (out / "docs.npz").read_bytes() == (ref / "docs.npz").read_bytes()
    assert (out / "queries.npz").read_bytes() == (ref / "queries.npz").read_bytes()
    assert not shards.exists()


# -- shards that must not be reused ------------------------------------------------------------

def _crash_after(monkeypatch, n: int):
    """Make the index stage die (an exception, in-process) once ``n`` shards are written."""
    from lsrbench.index import shards

    write, calls = shards.write_shard, {"n": 0}

    def write_shard(path, rows, matrix):
        if calls["n"] == n:
            raise KeyboardInterrupt("killed")
        write(path, rows, matrix)
        calls["n"] += 1

    monkeypatch.setattr(shards, "write_shard", write_shard)


def test_truncated_shard_is_encoded_again(tmp_path, encoder_dir, shard_slice, one_shot, monkeypatch):
    with monkeypatch.context() as m:
        _crash_after(m, 3)
        with pytest.raises(KeyboardInterrupt):
            _index(encoder_dir, shard_slice, tmp_path, SHARD)
    shard = tmp_path / "doc_shards" / "shard-000001.npz"
    shard.write_bytes(shard.read_bytes()[:-200])  # cut short (say, a full disk under another tool)
    stats = _index(encoder_dir, shard_slice, tmp_path, SHARD)["documents"]
    assert stats["reused"] == 2 and stats["encoded"] == stats["shards"] - 2
    assert (tmp_path / "docs.npz").read_bytes() == (one_shot / "docs.npz").read_bytes()


def test_shard_with_wrong_rows_or_corrupt_bytes_is_rejected(tmp_path):
    from lsrbench.index.shards import read_shard, write_shard

    m = sp.random(8, 50, density=0.2, format="csr", dtype=np.float32, random_state=0)
    rows = np.arange(8, 16)
    path = tmp_path / "shard-000001.npz"
    write_shard(path, rows, m)
    assert read_shard(path, rows, 50) is not None
    assert read_shard(path, np.arange(0, 8), 50) is None  # another shard's rows
    assert read_shard(path, rows, 40) is None  # another vocabulary
    raw = bytearray(path.read_bytes())
    pos = raw.find(m.data.tobytes()[:8])
    raw[pos] ^= 0xFF  # one flipped bit in the weights: the zip CRC no longer matches
    path.write_bytes(bytes(raw))
    assert read_shard(path, rows, 50) is None
    path.write_bytes(b"")
    assert read_shard(path, rows, 50) is None


@pytest.mark.parametrize("change", ["model", "shard_size"])
def test_shards_of_another_key_are_never_reused(tmp_path, encoder_dir, other_encoder_dir, shard_slice, one_shot,
                                                monkeypatch, change):
    first = (other_encoder_dir, SHARD) if change == "model" else (encoder_dir, 2 * SHARD)
    with monkeypatch.context() as m:
        _crash_after(m, 2)
        with pytest.raises(KeyboardInterrupt):
            _index(first[0], shard_slice, tmp_path, first[1])
    shards = tmp_path / "doc_shards"
    stale = {p.name: p.read_bytes() for p in shards.glob("shard-*.npz")}
    assert len(stale) == 2
    stats = _index(encoder_dir, shard_slice, tmp_path, SHARD)["documents"]
    assert stats["reused"] == 0 and stats["encoded"] == stats["shards"]
    assert (tmp_path / "docs.npz").read_bytes() == (one_shot / "docs.npz").read_bytes()


def test_key_changes_with_model_bytes_and_texts():
    from lsrbench.hashing import sha256_texts as texts_sha256

    assert texts_sha256(["a", "b"], ["x", "y"]) != texts_sha256(["a", "b"], ["y", "x"])
    assert texts_sha256(["a"], ["bc"]) != texts_sha256(["ab"], ["c"])


# -- the evaluate stage's loading: one copy of the postings ------------------------------------

def _postings(n_docs=20_000, vocab=3_000, seed=0):
    return sp.random(n_docs, vocab, density=0.03, format="csr", dtype=np.float32, random_state=seed)


def test_saved_members_are_aligned_and_mapped(tmp_path):
    import zipfile

    from lsrbench.index.sparse import _ALIGN, load_sparse, save_csr_arrays, save_sparse

    m = _postings()
    ids = [f"d{i}" for i in range(m.shape[0])]
    path = tmp_path / "docs.npz"
    save_sparse(path, m, ids)
    with zipfile.ZipFile(path) as zf:  # readable as a plain zip; np.load and scipy read it too
        assert [i.filename for i in zf.infolist()] == ["format.npy", "shape.npy", "data.npy", "indices.npy",
                                                       "indptr.npy", "ids.npy"]
    assert sp.load_npz(path).nnz == m.nnz
    mapped, got_ids = load_sparse(path, mmap=True)
    loaded, _ = load_sparse(path)
    assert got_ids == ids and (mapped != loaded).nnz == 0 and (mapped != m).nnz == 0
    for arr in (mapped.data, mapped.indices):
        assert not arr.flags.writeable  # a read-only map of the file, not a copy
        base = arr
        while getattr(base, "base", None) is not None and not isinstance(base, np.memmap):
            base = base.base
        assert isinstance(base, np.memmap) and base.offset % _ALIGN == 0
    # The arrays written as they are give the same file.
    again = tmp_path / "again.npz"
    save_csr_arrays(again, m.shape, m.indptr.astype(np.int64), m.indices, m.data, ids)
    assert again.read_bytes() == path.read_bytes()


def test_evaluate_loading_holds_one_copy_of_the_postings(tmp_path):
    """Load + inverted index build, as the evaluate stage does: the numpy peak (tracemalloc) is the
    index plus chunk temporaries with the mapped matrix, the matrix on top of that without."""
    from lsrbench.evaluate.flops import flops, mean_active_dims
    from lsrbench.evaluate.inverted_index import InvertedIndex
    from lsrbench.evaluate.retrieval import exact_topk
    from lsrbench.index.sparse import load_sparse, save_sparse

    m = _postings()
    path = tmp_path / "docs.npz"
    save_sparse(path, m, [f"d{i}" for i in range(m.shape[0])])
    postings = m.nnz * 8
    peaks, results = {}, {}
    queries = _postings(16, seed=1)
    for mmap in (False, True):
        tracemalloc.start()
        docs, _ = load_sparse(path, mmap=mmap)
        index = InvertedIndex.from_csr(docs)
        peaks[mmap] = tracemalloc.get_traced_memory()[1] / postings
        tracemalloc.stop()
        results[mmap] = (exact_topk(queries, index, 50), flops(queries, docs), mean_active_dims(docs))
        del docs, index
    assert peaks[True] < 1.5 < 2.0 < peaks[False], peaks
    (a, fa, ma), (b, fb, mb) = results[False], results[True]
    assert fa == fb and ma == mb
    assert all(np.array_equal(x[0], y[0]) and np.array_equal(x[1], y[1]) for x, y in zip(a, b))


@pytest.mark.slow
def test_dag_index_jobs_run_in_shards(micro_run):
    """The micro DAG's config sets encode_shard_size: the index jobs get their shard folder through
    the rule's runtime param, encode in shards, and leave no shard folder behind. (The collapsed
    run's NaN model takes the plain path, whose shards are whole chunks of 4,096 texts: one shot.)"""
    logs = {p: p.read_text() for p in sorted(micro_run["results"].rglob("index.log"))}
    sharded = [p for p, text in logs.items() if " shards of 64 rows: 0 reused, " in text]
    assert sharded, logs
    for p, text in logs.items():
        assert p in sharded or "plain sentence-transformers path" in text, p
    assert not list(micro_run["results"].rglob("doc_shards"))
