"""The MLM re-fit stage's declaration (:class:`lsrbench.dag.stage.Stage`; docs/miniature.md): a
backbone entry with ``mlm_refit: {...}`` starts from its checkpoint made into an MLM that never
trained for retrieval, as "Rescaling MLM-Head for Neural Sparse Retrieval" (arXiv 2606.18811) starts
from pretrained MLMs. One job per distinct (source checkpoint, re-fit settings): twins share it.
Its output folder, ``results/mlm_refit/<id>/``, is named by the source checkpoint, the settings and
the id of the dataset folder whose documents it reads; the norm, probe and train stages of the
backbones that name it load ``model/`` from there (:func:`lsrbench.dag.stage_parts.loaded_entry`)."""

from __future__ import annotations

from lsrbench.dag.stage import Stage
from lsrbench.dag.stage_parts import SOURCE_KEYS, job_location, refit_of, source_entry, source_identity

__all__ = ["MLM_REFIT", "refit_grid", "refit_inputs", "unshared_refits"]


def refit_grid(config: dict) -> list[dict]:
    """One key per distinct re-fit of the config, in backbone order."""
    keys: list[dict] = []
    for backbone in config["backbones"]:
        key = refit_of(config, backbone)
        if key and key not in keys:
            keys.append(key)
    return keys


def unshared_refits(layout) -> list[str]:
    """One line per backbone whose MLM re-fit looks like an earlier backbone's (the same model and
    re-fit settings) but is a job and a folder of its own, because its entry differs in what else
    says which checkpoint it starts from (a ``fetch`` block not copied, another ``revision``)."""
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
        differ = [k for k in SOURCE_KEYS if ours.get(k) != theirs.get(k)]
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
