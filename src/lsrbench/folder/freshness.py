"""Before the DAG runs: a finished output whose input file was rewritten after it (what Snakemake's mtime trigger
re-runs, deleting the finished output first) has that input checked, and a damaged one (a truncated
``docs.npz``, a ``norms.json`` that is no JSON) is refused with one line naming it, so that nothing computed
from it is deleted for a job that would then fail on it."""

from __future__ import annotations

import json
from pathlib import Path

from lsrbench.dag.layout import PARAMS_JSON
from lsrbench.folder.records import mtime as _mtime
from lsrbench.errors import InputError
from lsrbench.model.weights_header import damaged_weights

__all__ = ["check_finished_inputs", "check_artifact"]


def _outputs(stage, item) -> list[Path]:
    return [Path(item.path(name.rstrip("/"))) for name in stage.outputs.values()] + [Path(item.path(PARAMS_JSON))]


def check_finished_inputs(layout) -> None:
    """Refuse (InputError) a damaged input file of any finished addressed output of ``layout`` that
    is newer than that output, and a damaged checkpoint folder that a job still to run reads (see
    the module doc)."""
    finished, pending = [], []
    for item in layout.all():
        outputs = _outputs(layout.stages[item.stage], item)
        (finished if all(p.exists() for p in outputs) else pending).append((item, outputs))
    made = {p for _, outputs in finished for p in outputs}
    for item, outputs in finished:
        _check_newer_inputs(layout, item, outputs)
    whole: set[Path] = set()  # folders already read (a model is read by one index job per dataset)
    for item, _ in pending:
        _check_finished_checkpoints(layout, item, made, whole)


def _inputs(layout, item) -> list[Path]:
    values = layout.stages[item.stage].inputs(layout, item).values()
    return [Path(p) for value in values for p in ([value] if isinstance(value, str) else value)]


def _check_finished_checkpoints(layout, item, made: set[Path], whole: set[Path]) -> None:
    for path in _inputs(layout, item):
        if path in whole or path not in made or not path.is_dir():
            continue
        damaged = damaged_weights(path)
        if damaged:
            raise InputError(damaged[0], None, f"{damaged[1]}: a finished checkpoint is damaged, and {item.folder} "
                                               f"would be computed from it; delete {path.parent} to train it again "
                                               "(`lsrbench verify --results results` lists what else is damaged)")
        whole.add(path)


def _check_newer_inputs(layout, item, outputs: list[Path]) -> None:
    oldest = min(_mtime(p) for p in outputs)
    for path in _inputs(layout, item):
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
    damaged = damaged_weights(path)
    if damaged:
        return f"{damaged[0].relative_to(path)}: {damaged[1]}"
    for config in sorted(path.rglob("config.json")):
        json.loads(config.read_text(encoding="utf-8"))
    return None
