"""The job function of the MLM re-fit stage (:mod:`lsrbench.dag.refit_stage`; docs/miniature.md):
a backbone's checkpoint made into an MLM that never trained for retrieval, the starting point the
paper ("Rescaling MLM-Head for Neural Sparse Retrieval", arXiv 2606.18811) trains SPLADE from."""

from __future__ import annotations

import logging
from pathlib import Path

from lsrbench.provenance import manifest_fields, provenance, write_json

log = logging.getLogger(__name__)

__all__ = ["mlm_refit"]


def mlm_refit(settings: dict, config_hash: str, entry: dict, backbone: str,
              mirror, cache_dir: str, config_file: str, full_dir: str, model_dir: str, refit_json: str, refit_log: str,
              provenance_json: str) -> dict:
    """Re-fit the source checkpoint of ``entry`` (as written; ``backbone``: the first entry naming
    this re-fit, where errors point) as an MLM on the documents of the dataset folder ``full_dir``
    (:func:`lsrbench.model.mlm_refit.refit_mlm`), and write the checkpoint, its per-step log, the
    summary (held-out MLM loss before and after) and the provenance."""
    from lsrbench.data.beir import read_written_folder
    from lsrbench.model.checkpoint import resolve_model
    from lsrbench.model.mlm_refit import refit_mlm
    from lsrbench.model.train_log import write_train_log

    path = resolve_model(entry, mirror, cache_dir, config_file, backbone)
    documents = list(read_written_folder(full_dir).corpus.values())
    rows: list[dict] = []
    summary = refit_mlm(path, documents, model_dir, settings, trust_remote_code=entry.get("trust_remote_code", False),
                        revision=entry.get("revision"), log_rows=rows, config_file=config_file,
                        field=f"backbones.{backbone}.mlm_refit")
    write_train_log(refit_log, rows)
    write_json(refit_json, {"source": entry["model"], "resolved_path": path, "texts_from": full_dir,
                            "settings": settings, **summary})
    inputs = [full_dir] + ([path] if Path(path).is_dir() else [])
    write_json(provenance_json, provenance("mlm_refit", config_hash, settings["seed"], backbone=backbone,
                                           model=entry["model"], resolved_path=path,
                                           **manifest_fields(provenance_json, inputs, [model_dir, refit_json, refit_log])))
    return summary
