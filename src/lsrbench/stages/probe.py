"""The probe stage (docs/probe.md): every backbone at step 0 per ``[mode, k]``, its checkpoint loaded once;
upstream only of ``k: probe`` and a logit-scale ``k: auto``."""

from __future__ import annotations

import logging
from pathlib import Path

from lsrbench.config.grid import probe_settings, probed_ks, seed_recipe, training_seeds
from lsrbench.dag.stage import Stage
from lsrbench.errors import InputError
from lsrbench.model.probe_names import PROBE_RECIPE_KEYS
from lsrbench.names import AUTO_K
from lsrbench.provenance import manifest_fields, provenance, write_json
from lsrbench.stages.k_sources import k_source_identity, k_source_inputs, k_sources
from lsrbench.stages.loading import job_location, load_identity, loaded_entry
from lsrbench.stages.preflight import preflight_input
from lsrbench.stages.train import resolved_head_scale

log = logging.getLogger(__name__)

__all__ = ["STAGE", "probe"]


def _probe_sources(layout, backbone: str) -> dict:
    """What the probe's own k auto is read from: training's sources less this very probe."""
    ks = [k for _, k in probed_ks(layout.config, backbone)]
    return k_sources(layout, backbone, AUTO_K, own_probe=False) if AUTO_K in ks else {}


def _identity(layout, key: dict) -> dict:
    b, config = key["backbone"], layout.config
    settings = probe_settings(config)
    # the recipe of the first training seed (recipe.seeds): the probe samples once, whatever the seeds
    recipe = seed_recipe(config["recipe"], training_seeds(config)[0])
    identity = {"backbone": b, "load": load_identity(layout, b), "norms": layout.get("norms", backbone=b).id,
                "triplets": layout.get("triplets").id, "recipe": {key: recipe[key] for key in PROBE_RECIPE_KEYS},
                "n_triplets": settings["triplets"], "gradients": settings["gradients"], "ks": probed_ks(config, b)}
    identity |= {"released": True} if config["backbones"][b].get("evaluate_only") else {}
    return identity | k_source_identity(_probe_sources(layout, b))


def _inputs(layout, item) -> dict:
    b = item.fields["backbone"]
    inputs = {"triplets_jsonl": layout.get("triplets").path("triplets.jsonl"),
              "norms_json": layout.get("norms", backbone=b).path("norms.json")}
    return inputs | k_source_inputs(_probe_sources(layout, b)) | preflight_input(layout, item)


def _runtime(layout, item) -> dict:
    released = {"evaluate_only": True} if item.identity.get("released") else {}
    return {"entry": {**loaded_entry(layout, item.fields["backbone"]), **released}, **job_location(layout)}


def probe(backbone: str, ks: list, recipe: dict, n_triplets: int, gradients: bool, config_hash: str, entry: dict,
          mirror, cache_dir: str, config_file: str, triplets_jsonl: str, norms_json: str, probe_json: str,
          provenance_json: str, auto_k: dict | None = None, reference_norms_json: str | None = None,
          reference_probe_json: str | None = None, preflight_json: str | None = None) -> list[dict]:
    """The step-0 probe of one backbone at every ``[mode, k]`` of ``ks``, written as a JSON list; a k auto is
    resolved as training resolves it."""
    from lsrbench.data.triplets import read_triplets
    from lsrbench.model.checkpoint import resolve_model
    from lsrbench.model.probe import probe_backbone

    path = resolve_model(entry, mirror, cache_dir, config_file, backbone)
    entry = resolved_head_scale(entry, norms_json)
    auto = _probe_auto_k(backbone, auto_k, norms_json, reference_norms_json, reference_probe_json, config_file)
    results = probe_backbone(path, entry, [(k, mode) for mode, k in ks], read_triplets(triplets_jsonl), recipe,
                             backbone=backbone, n_triplets=n_triplets, auto_k=auto, gradients=gradients,
                             config_file=config_file)
    write_json(probe_json, results)
    inputs = [p for p in (triplets_jsonl, norms_json, reference_norms_json, reference_probe_json) if p]
    write_json(provenance_json, provenance("probe", config_hash, recipe["seed"], backbone=backbone, model=entry["model"],
                                           resolved_path=path, runs=[[r["mode"], r["k"]] for r in results],
                                           **manifest_fields(provenance_json, inputs + ([path] if Path(path).is_dir() else []),
                                                             [probe_json])))
    log.info("probe %s: %s", backbone, "; ".join(
        f"{r['backbone']} k={r['k']}: score scale {r['score_scale']}, ranking loss {r['ranking_loss']}" for r in results))
    return results


def _probe_auto_k(backbone: str, auto_k: dict | None, norms_json: str, reference_norms_json: str | None,
                  reference_probe_json: str | None, config_file: str):
    """The probe's k auto: training's number, or for a logit-scale statistic a function of the results probed
    before it."""
    if auto_k is None:
        return None
    from lsrbench.model.auto_k import auto_k_from_files, auto_k_ratio, read_head_statistic
    from lsrbench.model.probe_names import LOGIT_STATISTICS

    statistic = auto_k["statistic"]
    if statistic not in LOGIT_STATISTICS:
        return auto_k_from_files(norms_json, reference_norms_json, auto_k)

    def from_own_k1(results: list[dict]) -> float:
        # the forward pass at k = 1 is the same in every mode: its logit scale is the backbone's
        own = next((r[statistic] for r in results if r["k_value"] == 1.0 and r.get(statistic)), None)
        if own is None:
            raise InputError(config_file, "auto_k.statistic", f"{backbone} has no finite positive {statistic} at k = 1 "
                                                              "for k auto to divide")
        ref = own if reference_probe_json is None else read_head_statistic(norms_json, statistic, reference_probe_json)
        return auto_k_ratio({statistic: own}, {statistic: ref}, statistic)

    return from_own_k1


STAGE = Stage(
    name="probe", kind="probe", job=probe,
    priority=3,
    model_job=True,
    grid=lambda c: [{"backbone": b} for b in c["backbones"]],
    identity=_identity,
    inputs=_inputs,
    outputs={"probe_json": "probe.json", "provenance_json": "provenance.json"},
    runtime=_runtime,
)
