"""The MLM re-fit stage's declaration (:class:`lsrbench.dag.stage.Stage`; docs/miniature.md): a
backbone entry with ``mlm_refit: {...}`` starts from its checkpoint made into an MLM that never
trained for retrieval, as "Rescaling MLM-Head for Neural Sparse Retrieval" (arXiv 2606.18811) starts
from pretrained MLMs. One job per distinct (source checkpoint, re-fit settings): twins share it.
Its output folder, ``results/mlm_refit/<id>/``, is named by the source checkpoint, the settings and
the id of the dataset folder whose documents it reads; the norm, probe and train stages of the
backbones that name it load ``model/`` from there (:func:`lsrbench.dag.stage_parts.loaded_entry`)."""

from __future__ import annotations

from lsrbench.dag.stage import Stage
from lsrbench.dag.stage_parts import job_location, refit_of, source_entry, source_identity

__all__ = ["MLM_REFIT", "refit_grid", "refit_inputs"]


def refit_grid(config: dict) -> list[dict]:
    """One key per distinct re-fit of the config, in backbone order."""
    keys: list[dict] = []
    for backbone in config["backbones"]:
        key = refit_of(config, backbone)
        if key and key not in keys:
            keys.append(key)
    return keys


def _settings(config: dict, key: dict) -> dict:
    return config["backbones"][key["refit"]]["mlm_refit"]


def _identity(layout, key: dict) -> dict:
    settings = _settings(layout.config, key)
    return {"source": source_identity(layout, key["refit"]),
            "texts": layout.get("data", dataset=settings["dataset"]).id,
            "settings": {k: v for k, v in settings.items() if k != "dataset"}}


def refit_inputs(layout, item) -> dict:
    """The dataset folder whose documents the MLM is fit on."""
    return {"full_dir": layout.get("data", dataset=_settings(layout.config, item.fields)["dataset"]).path("full")}


def _runtime(layout, item) -> dict:
    """The source checkpoint's entry as written (where it is read from, where errors point)."""
    return {"entry": source_entry(layout.config, item.fields["refit"]), "backbone": item.fields["refit"],
            **job_location(layout)}


MLM_REFIT = Stage(
    name="mlm_refit", kind="refit",
    priority=4,  # the head of every chain that trains from it
    grid=refit_grid,
    identity=_identity,
    inputs=refit_inputs,
    outputs={"model_dir": "model/", "refit_json": "refit.json", "refit_log": "refit_log.jsonl",
             "provenance_json": "provenance.json"},
    runtime=_runtime,
)
