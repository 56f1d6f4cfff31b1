"""Before the DAG runs: a finished output whose input file was rewritten after it (what Snakemake's
mtime trigger re-runs, deleting the finished output first) has that input checked, and a damaged
one (a truncated ``docs.npz``, a ``norms.json`` that is no JSON) is refused with one line naming
it, so that nothing computed from it is deleted for a job that would then fail on it. An input
that is whole re-runs what was made from it, as Snakemake decides (a real change).

Snakemake's own rule is followed exactly: an input is newer when its mtime is later than the
oldest output's (a ``directory()`` output by its ``.snakemake_timestamp``); see
``snakemake.dag.DAG.update_needrun``.
"""

from __future__ import annotations

import json
from pathlib import Path

from lsrbench.dag.layout import PARAMS_JSON
from lsrbench.errors import InputError

__all__ = ["check_finished_inputs", "check_artifact"]


def _mtime(path: Path) -> float:
    """The modification time Snakemake gives a file or folder (a folder: its timestamp file's)."""
    stamp = path / ".snakemake_timestamp"
    return stamp.stat().st_mtime if path.is_dir() and stamp.is_file() else path.stat().st_mtime


def _outputs(stage, item) -> list[Path]:
    return [Path(item.path(name.rstrip("/"))) for name in stage.outputs.values()] + [Path(item.path(PARAMS_JSON))]


def check_finished_inputs(layout) -> None:
    """Refuse (InputError) a damaged input file of any finished addressed output of ``layout`` that
    is newer than that output (see the module doc)."""
    for item in layout.all():
        stage = layout.stages[item.stage]
        outputs = _outputs(stage, item)
        if not all(p.exists() for p in outputs):
            continue  # not finished: it runs anyway, and deletes nothing finished
        oldest = min(_mtime(p) for p in outputs)
        for value in stage.inputs(layout, item).values():
            for path in map(Path, [value] if isinstance(value, str) else value):
                if path.exists() and _mtime(path) > oldest:
                    problem = check_artifact(path)
                    if problem:
                        raise InputError(path, None, f"{problem}; it was changed after {item.folder} was computed "
                                                     "from it, which is kept: restore the file, or delete its folder "
                                                     "to compute it (and what was made from it) again")


def check_artifact(path: Path) -> str | None:
    """What is wrong with a finished artifact, by its kind (None: it reads whole): a sparse matrix
    (``.npz``), JSON, JSON lines, a checkpoint folder's weights and config, a BEIR folder."""
    try:
        if path.is_dir():
            return _check_folder(path)
        if path.suffix == ".npz":
            from lsrbench.index.sparse import load_sparse

            load_sparse(path, mmap=True)
        elif path.suffix == ".json":
            json.loads(path.read_text(encoding="utf-8"))
        elif path.suffix == ".jsonl":
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    json.loads(line)
    except InputError as exc:
        return exc.message if exc.field is None else f"{exc.field}: {exc.message}"
    except (ValueError, OSError) as exc:
        return f"not readable ({' '.join(str(exc).split())})"
    return None


def _check_folder(path: Path) -> str | None:
    if (path / "qrels").is_dir():
        from lsrbench.data.beir import check_beir_folder, written_split

        check_beir_folder(path, written_split(path), unknown_docs="keep")
        return None
    for weights in sorted(path.rglob("*.safetensors")):
        problem = _safetensors_problem(weights)
        if problem:
            return f"{weights.relative_to(path)}: {problem}"
    for config in sorted(path.rglob("config.json")):
        json.loads(config.read_text(encoding="utf-8"))
    return None


def _safetensors_problem(path: Path) -> str | None:
    """A safetensors file's header reads and its tensors end where the file does (a truncated file
    is shorter than its header says)."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(8)
        if len(head) < 8:
            return "truncated (no header)"
        n = int.from_bytes(head, "little")
        if n > size - 8:
            return "truncated (header longer than the file)"
        header = json.loads(fh.read(n))
    ends = [t["data_offsets"][1] for name, t in header.items() if name != "__metadata__"]
    expected = 8 + n + max(ends, default=0)
    return None if expected == size else f"{size} bytes where its header describes {expected} (truncated or damaged)"
