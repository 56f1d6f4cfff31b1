"""The released stage: an ``evaluate_only`` backbone gets the train stage's outputs from its released checkpoint
(no training, k = 1), so the rest treats it like a run."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from lsrbench.config.grid import is_released, run_keys
from lsrbench.dag.stage import Stage
from lsrbench.names import split_run_name
from lsrbench.provenance import manifest_fields, provenance, write_json
from lsrbench.stages.loading import job_location, load_entry, load_identity
from lsrbench.stages.train import TRAINED_OUTPUTS

log = logging.getLogger(__name__)

__all__ = ["STAGE", "released"]


def _identity(layout, key: dict) -> dict:
    base, _ = split_run_name(key["run"])
    recipe = layout.config["recipe"]
    return {"run": key["run"], "k": key["k"], "load": load_identity(layout, base), "released": True,
            "query_max_length": recipe["query_max_length"], "document_max_length": recipe["document_max_length"],
            "norms": layout.get("norms", backbone=base).id}


def released(run: str, query_max_length: int, document_max_length: int, config_hash: str, entry: dict, mirror,
             cache_dir: str, config_file: str, norms_json: str, model_dir: str, train_log: str, provenance_json: str,
             status_json: str) -> dict:
    """The train stage's outputs for an ``evaluate_only`` backbone without training: the checkpoint as a
    SparseEncoder at k = 1, an empty log, status ``ok``, provenance saying released."""
    from lsrbench.atomic import atomic_dir
    from lsrbench.model.checkpoint import resolve_model, resolved_revision
    from lsrbench.model.encoder import released_sparse_encoder
    from lsrbench.model.train_log import write_train_log

    path = resolve_model(entry, mirror, cache_dir, config_file, run)
    model, fmt = released_sparse_encoder(path, query_max_length, document_max_length,
                                         trust_remote_code=entry.get("trust_remote_code", False),
                                         revision=entry.get("revision"))
    with atomic_dir(model_dir) as tmp_dir:
        model.save(str(tmp_dir))
    write_train_log(train_log, [])
    status = {"backbone": run, "k": "1", "status": "ok", "released": True}
    write_json(status_json, status)
    revision = {"requested": entry.get("revision"), "resolved": resolved_revision(path, entry.get("revision"))}
    inputs = [norms_json] + ([path] if Path(path).is_dir() else [])
    write_json(provenance_json, provenance("released", config_hash, None, backbone=run, k="1", k_value=1.0,
                                           model=entry["model"], resolved_path=path, model_revision=revision,
                                           released=True, trained=False, released_format=fmt,
                                           head_norms=json.loads(Path(norms_json).read_text()),
                                           **manifest_fields(provenance_json, inputs,
                                                             [model_dir, train_log, status_json])))
    log.info("released %s: %s checkpoint %s saved as a SparseEncoder without training (k = 1)", run, fmt, path)
    return status


STAGE = Stage(
    name="released", kind="train", job=released,
    priority=3,
    grid=lambda c: [key for key in run_keys(c) if is_released(c, key["run"])],
    identity=_identity,
    inputs=lambda layout, item: {"norms_json": layout.get("norms", backbone=item.fields["run"]).path("norms.json")},
    outputs=TRAINED_OUTPUTS,
    runtime=lambda layout, item: {"entry": load_entry(layout.config, item.fields["run"]), **job_location(layout)},
    log="train.log",
    constraints={"k": "1"},  # a released checkpoint as it is
)
