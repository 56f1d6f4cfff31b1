"""The MLM re-fit stage (docs/miniature.md): a backbone with ``mlm_refit`` starts from its checkpoint with the
MLM head re-fit (encoder and ``W_head`` are the checkpoint's). One job per (source checkpoint, settings), shared
by twins, in ``results/mlm_refit/<id>/``."""

from __future__ import annotations

import logging
from pathlib import Path

from lsrbench.dag.stage import Stage
from lsrbench.provenance import manifest_fields, provenance, write_json
from lsrbench.stages.loading import SOURCE_KEYS, job_location, refit_of, source_entry, source_identity
from lsrbench.stages.preflight import preflight_input

log = logging.getLogger(__name__)

__all__ = ["STAGE", "mlm_refit", "refit_grid", "refit_inputs", "unshared_refits"]


def refit_grid(config: dict) -> list[dict]:
    """One key per distinct re-fit of the config, in backbone order."""
    keys: list[dict] = []
    for backbone in config["backbones"]:
        key = refit_of(config, backbone)
        if key and key not in keys:
            keys.append(key)
    return keys


def unshared_refits(layout) -> list[str]:
    """One line per backbone whose re-fit looks like an earlier one's but is its own job, because its entry
    differs in what picks the checkpoint (``fetch``, ``revision``)."""
    config, lines = layout.config, []
    backbones = config["backbones"]
    owners = [b for b in backbones if refit_of(config, b).get("refit") == b]  # the first backbone of each re-fit
    for i, backbone in enumerate(owners):
        entry = backbones[backbone]
        first = next((b for b in owners[:i] if backbones[b]["mlm_refit"] == entry["mlm_refit"]
                      and backbones[b]["model"] == entry["model"]), None)
        if first is None:
            continue
        ours, theirs = source_entry(config, backbone), source_entry(config, first)
        differ = [key for key in SOURCE_KEYS if ours.get(key) != theirs.get(key)]
        lines.append(f"backbones.{backbone}: a second MLM re-fit of {entry['model']} "
                     f"({layout.get('refit', refit=backbone).folder}) beside {first}'s "
                     f"({layout.get('refit', refit=first).folder}), since its {', '.join(differ)} "
                     f"{'differs' if len(differ) == 1 else 'differ'} from {first}'s; give it {first}'s (like: "
                     f"{first}) to share that re-fit")
    return lines


def _settings(config: dict, key: dict) -> dict:
    return config["backbones"][key["refit"]]["mlm_refit"]


def _identity(layout, key: dict) -> dict:
    settings = _settings(layout.config, key)
    return {"source": source_identity(layout, key["refit"]),
            "texts": layout.get("data", dataset=settings["dataset"]).id,
            "settings": {key: v for key, v in settings.items() if key != "dataset"}}


def refit_inputs(layout, item) -> dict:
    """The dataset folder whose documents the MLM is fit on (and a GPU grid's preflight)."""
    return ({"full_dir": layout.get("data", dataset=_settings(layout.config, item.fields)["dataset"]).path("full")}
            | preflight_input(layout, item))


def _runtime(layout, item) -> dict:
    return {"entry": source_entry(layout.config, item.fields["refit"]), "backbone": item.fields["refit"],
            **job_location(layout)}


def mlm_refit(settings: dict, config_hash: str, entry: dict, backbone: str,
              mirror, cache_dir: str, config_file: str, full_dir: str, model_dir: str, refit_json: str, refit_log: str,
              provenance_json: str, preflight_json: str | None = None) -> dict:
    """Re-fit the source checkpoint of ``entry`` as an MLM on the documents of ``full_dir`` and write the
    checkpoint, log, summary and provenance."""
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


STAGE = Stage(
    name="mlm_refit", kind="refit", job=mlm_refit,
    priority=4,  # the head of every chain that trains from it
    model_job=True,
    grid=refit_grid,
    identity=_identity,
    inputs=refit_inputs,
    outputs={"model_dir": "model/", "refit_json": "refit.json", "refit_log": "refit_log.jsonl",
             "provenance_json": "provenance.json"},
    runtime=_runtime,
)
