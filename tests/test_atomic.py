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
