"""The norm stage: load a backbone (checking its MLM head and tokenizer) and write its head norms after
``head_scale``; the first job to read a checkpoint."""

from __future__ import annotations

import logging

from lsrbench.dag.stage import Stage
from lsrbench.model.head_match import match_of
from lsrbench.provenance import write_json
from lsrbench.stages.loading import job_location, load_identity, loaded_entry, refit_of

log = logging.getLogger(__name__)

__all__ = ["STAGE", "norm", "refit_input", "match_identity", "match_input"]


def refit_input(layout, backbone: str) -> dict:
    """The re-fit checkpoint a backbone with ``mlm_refit`` loads (every later stage reads it after this one)."""
    refit = refit_of(layout.config, backbone)
    return {"refit_model": layout.get("refit", **refit).path("model")} if refit else {}


def _match_norms(layout, backbone: str):
    match = match_of(layout.config["backbones"][backbone])
    return layout.get("norms", backbone=match) if match else None


def match_identity(layout, backbone: str) -> dict:
    """The matched backbone's norm id, where the head scale is matched (nothing otherwise)."""
    match = _match_norms(layout, backbone)
    return {"head_scale_match": match.id} if match else {}


def match_input(layout, backbone: str) -> dict:
    """The matched backbone's norms.json: an input of the norm and train jobs of a matched head (the control's
    DAG edge)."""
    match = _match_norms(layout, backbone)
    return {"match_norms_json": match.path("norms.json")} if match else {}


def norm(backbone: str, entry: dict, mirror, cache_dir: str, config_file: str, norms_json: str,
         refit_model: str | None = None, match_norms_json: str | None = None) -> dict:
    """Load the backbone (checking its MLM head) and write its head norms after ``head_scale``, measuring and
    recording a matched ratio against ``match_norms_json``."""
    from lsrbench.model.checkpoint import check_tokenizer, load_mlm, model_origin, resolve_model, transformer_folder
    from lsrbench.model.head_match import apply_head_scale, is_matched, matched_scale, numeric_head_scale
    from lsrbench.model.rescale import head_norms

    # a released SparseEncoder folder (evaluate_only) holds its MLM checkpoint in its first module
    resolved = resolve_model(entry, mirror, cache_dir, config_file, backbone)
    path = transformer_folder(resolved)
    field, trust, revision = f"backbones.{backbone}.model", entry.get("trust_remote_code", False), entry.get("revision")
    model = load_mlm(path, config_file, field, trust_remote_code=trust, revision=revision)
    # here, not at training: a hub checkpoint is first read by this job, and its train jobs need the tokenizer
    check_tokenizer(path, model, config_file, field, trust, revision)
    match = matched_scale(head_norms(model), match_norms_json, entry["head_scale"]) if is_matched(entry) else None
    scale = match["ratio"] if match else numeric_head_scale(entry)
    apply_head_scale(model, scale, match["mode"] if match else "shared")
    result = {"backbone": backbone, "model": entry["model"], "resolved_path": path,
              "read_from": model_origin(entry, mirror, cache_dir, resolved), "head_scale": scale if match else
              entry.get("head_scale", 1), "architecture": type(model).__name__, **head_norms(model),
              **({"head_scale_match": match} if match else {})}
    if match:
        log.info("norm: %s: head multiplied by %.6g (%s mode) to %s's %s %.6g (its own %.6g)", backbone, scale,
                 match["mode"], match["match"], match["statistic"], match["target"], match["own"])
    log.info("norm: %s (%s from %s): head %d x %d, Frobenius norm %.6g, mean row norm %.6g, tied %s", backbone,
             result["architecture"], path, result["vocab_size"], result["hidden_size"], result["frobenius_norm"],
             result["mean_row_norm"], result["tied"])
    write_json(norms_json, result)
    return result


STAGE = Stage(
    name="norm", kind="norms", job=norm,
    priority=4,
    grid=lambda c: [{"backbone": b} for b in c["backbones"]],
    identity=lambda layout, key: {"backbone": key["backbone"], "load": load_identity(layout, key["backbone"]),
                                  **match_identity(layout, key["backbone"])},
    inputs=lambda layout, item: refit_input(layout, item.fields["backbone"]) | match_input(layout, item.fields["backbone"]),
    outputs={"norms_json": "norms.json"},
    # the entry as written (a local folder's path), where errors point and downloads go
    runtime=lambda layout, item: {"entry": loaded_entry(layout, item.fields["backbone"]), **job_location(layout)},
    remade_if_changed=True,
)
