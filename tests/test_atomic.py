"""Atomic outputs: a writer killed in the middle of writing never leaves a file under its final
name, and a previous complete version of the file survives intact.

Each writer runs in a child process whose file-size limit (RLIMIT_FSIZE) is a few hundred bytes and
whose SIGXFSZ is restored to its default action, so the kernel kills it (a real kill, no Python
cleanup) at the write that crosses the limit: deterministically in the middle of the artifact.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = r'''
import json, resource, signal, sys
from pathlib import Path
import numpy as np, scipy.sparse as sp
which, out, limit = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])

def run():
    if which == "json":
        from lsrbench.provenance import write_json
        write_json(out, {"x": list(range(2000))})
    elif which == "npz":
        from lsrbench.index.sparse import save_sparse
        m = sp.random(200, 500, density=0.05, format="csr", random_state=0, dtype=np.float32)
        save_sparse(out, m, [f"d{i}" for i in range(200)])
    elif which == "trec":
        from lsrbench.evaluate.trec import write_trec_run
        write_trec_run(out, {f"q{i}": [(f"d{j}", 1.0 / (j + 1)) for j in range(50)] for i in range(20)}, tag="t")
    elif which == "triplets":
        from lsrbench.data.triplets import write_triplets
        write_triplets(out, [{"query": "q" * 50, "positive": "p" * 50, "negative": "n" * 50}] * 100)
    elif which == "train_log":
        from lsrbench.model.train_log import write_train_log as _write_log
        _write_log(out, [{"step": i, "loss": 1.0 / i} for i in range(1, 200)])
    elif which == "csv":
        from lsrbench.report.results import collect_metrics
        tsv = out.parent / "in.tsv"
        tsv.write_text("backbone\tk\tdataset\tmeasure\tvalue\n" + "".join(f"b\t1\td\tm{i}\t0.5\n" for i in range(300)))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        collect_metrics([str(tsv)], str(out))
    elif which == "model":
        import torch
        from lsrbench.atomic import atomic_dir
        with atomic_dir(out) as tmp:
            torch.save({"w": torch.zeros(5000)}, tmp / "weights.pt")

signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
if which != "csv":
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
run()
print("finished")
'''

WRITERS = ["json", "npz", "trec", "triplets", "train_log", "csv", "model"]


def _kill_mid_write(tmp_path: Path, which: str, out: Path, limit: int = 300) -> subprocess.CompletedProcess:
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    return subprocess.run([sys.executable, str(child), which, str(out), str(limit)], capture_output=True, text=True,
                          timeout=120)


def _leftovers(folder: Path, name: str) -> list[Path]:
    return [p for p in folder.iterdir() if p.name.startswith(f".{name}.tmp-")]


@pytest.mark.parametrize("which", WRITERS)
def test_killed_writer_leaves_no_file_under_the_final_name(tmp_path, which):
    out = tmp_path / f"artifact.{which}"
    proc = _kill_mid_write(tmp_path, which, out)
    assert proc.returncode == -signal.SIGXFSZ, (proc.returncode, proc.stderr[-2000:])
    assert "finished" not in proc.stdout
    assert not out.exists()
    assert _leftovers(tmp_path, out.name)  # it really was killed while writing the temporary


@pytest.mark.parametrize("which", ["json", "npz", "model"])
def test_killed_writer_keeps_the_previous_complete_file(tmp_path, which):
    out = tmp_path / f"artifact.{which}"
    done = _kill_mid_write(tmp_path, which, out, limit=10_000_000)
    assert done.returncode == 0 and out.exists(), done.stderr[-2000:]
    before = _snapshot(out)
    proc = _kill_mid_write(tmp_path, which, out)
    assert proc.returncode == -signal.SIGXFSZ
    assert _snapshot(out) == before


def _snapshot(path: Path):
    if path.is_dir():
        return {p.relative_to(path): p.read_bytes() for p in path.rglob("*") if p.is_file()}
    return path.read_bytes()


# --------------------------------------------------------------------------- permissions (issue 23.4)

def _write_json(out):
    from lsrbench.provenance import write_json

    write_json(out, {"x": 1})


def _write_npz(out):
    import scipy.sparse as sp

    from lsrbench.index.sparse import save_sparse

    save_sparse(out, sp.eye(3, format="csr", dtype="float32"), ["a", "b", "c"])


def _write_trec(out):
    from lsrbench.evaluate.trec import write_trec_run

    write_trec_run(out, {"q1": [("d1", 1.0)]}, tag="t")


WRITTEN = {"json": _write_json, "npz": _write_npz, "trec": _write_trec}  # real writers of results


@pytest.fixture(params=[0o022, 0o002, 0o077], ids=lambda m: f"umask{m:03o}")
def umask(request):
    import os

    old = os.umask(request.param)
    yield request.param
    os.umask(old)


@pytest.mark.parametrize("which", sorted(WRITTEN))
def test_results_get_the_permissions_a_plain_write_gives(tmp_path, umask, which):
    """A shared cluster filesystem: colleagues read a finished grid when the umask lets them, as
    with any file written by ``open()``; tempfile's 0600 must not leak into results."""
    import stat

    out = tmp_path / f"artifact.{which}"
    WRITTEN[which](out)
    plain = tmp_path / "plain"
    plain.write_text("x")
    assert stat.S_IMODE(out.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode) == 0o666 & ~umask


def test_atomic_folders_get_the_permissions_mkdir_gives(tmp_path, umask):
    import os
    import stat

    from lsrbench.atomic import atomic_dir

    for _ in range(2):  # a new folder, then one replacing it
        with atomic_dir(tmp_path / "model") as tmp:
            (tmp / "weights.bin").write_bytes(b"w")
            os.mkdir(tmp / "sub")
        assert stat.S_IMODE((tmp_path / "model").stat().st_mode) == 0o777 & ~umask
        assert stat.S_IMODE((tmp_path / "model" / "sub").stat().st_mode) == 0o777 & ~umask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # nothing left beside it
    assert sorted(p.name for p in (tmp_path / "model").iterdir()) == ["sub", "weights.bin"]  # no probe left


def test_what_a_library_writes_private_into_an_atomic_folder_is_made_plain(tmp_path, umask):
    """transformers saves model.safetensors through a private temporary of its own (0600): found
    by the DAG test of a finished run. The model folder's files get a plain write's mode."""
    import stat

    from transformers import BertConfig, BertForMaskedLM

    from lsrbench.atomic import atomic_dir

    with atomic_dir(tmp_path / "model") as tmp:
        BertForMaskedLM(BertConfig(vocab_size=10, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                   intermediate_size=8, max_position_embeddings=8)).save_pretrained(tmp)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "model").iterdir()}
    assert modes == {"config.json": 0o666 & ~umask, "model.safetensors": 0o666 & ~umask}, modes


def test_a_replaced_file_keeps_its_permissions(tmp_path, umask):
    """Like a plain rewrite of an existing file: its mode stays (here one the umask would not give)."""
    import os
    import stat

    from lsrbench.atomic import atomic_open

    path = tmp_path / "metrics.csv"
    path.write_text("old")
    os.chmod(path, 0o640)
    with atomic_open(path, "w") as fh:
        fh.write("new")
    assert path.read_text() == "new" and stat.S_IMODE(path.stat().st_mode) == 0o640
