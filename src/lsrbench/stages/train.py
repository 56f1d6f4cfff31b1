"""The train stage: a backbone's head rescaled by ``k``, trained with the recipe on the triplets, saved as a
SparseEncoder with its log, status and provenance; one folder per (run, k, seed)."""

from __future__ import annotations

import inspect
import json
import logging
import os
from pathlib import Path

from lsrbench.config.grid import is_released, run_keys
from lsrbench.dag.stage import Stage
from lsrbench.errors import InputError
from lsrbench.names import AUTO_K, PROBE_K, SEED, split_run_name
from lsrbench.provenance import manifest_fields, provenance, write_json
from lsrbench.stages.k_sources import k_source_identity, k_source_inputs, k_sources
from lsrbench.stages.loading import job_location, load_identity, loaded_entry
from lsrbench.stages.norm import match_identity, match_input
from lsrbench.stages.preflight import preflight_input
from lsrbench.stages.recipe import late_recipe_settings, results_recipe

log = logging.getLogger(__name__)

__all__ = ["STAGE", "TRAINED_OUTPUTS", "train", "k_from_probes", "resolved_head_scale"]


def _identity(layout, key: dict) -> dict:
    run, k = key["run"], key["k"]
    base, mode = split_run_name(run)
    # the seed is in the recipe (recipe.seed): another seed, another folder
    identity = {"run": run, "k": k, "load": load_identity(layout, base), "mode": mode,
                "recipe": results_recipe(layout.config, key.get(SEED)), "triplets": layout.get("triplets").id,
                "norms": layout.get("norms", backbone=base).id, **match_identity(layout, base)}
    return identity | k_source_identity(k_sources(layout, base, k))


def _inputs(layout, item) -> dict:
    base, _ = split_run_name(item.fields["run"])
    inputs = {"norms_json": layout.get("norms", backbone=base).path("norms.json"),
              "triplets_jsonl": layout.get("triplets").path("triplets.jsonl"), **match_input(layout, base)}
    return inputs | k_source_inputs(k_sources(layout, base, item.fields["k"])) | preflight_input(layout, item)


def _runtime(layout, item) -> dict:
    return {"entry": loaded_entry(layout, split_run_name(item.fields["run"])[0]),
            "checkpoint_dir": item.path("checkpoints"), "checkpoint_steps": layout.config["recipe"]["checkpoint_steps"],
            "report_to": layout.config["recipe"].get("report_to", []),
            "processes": layout.config["train_processes"], **job_location(layout)}


def train(run: str, k: str, mode: str, recipe: dict, config_hash: str, entry: dict, mirror, cache_dir: str,
          config_file: str, norms_json: str, triplets_jsonl: str, model_dir: str, train_log: str,
          provenance_json: str, status_json: str | None = None, reference_norms_json: str | None = None,
          auto_k: dict | None = None, probe_json: str | None = None, reference_probe_json: str | None = None,
          k_from_probe: dict | None = None, checkpoint_dir: str | None = None, checkpoint_steps: int | None = None,
          processes: int | str = 1, report_to: list | None = None, match_norms_json: str | None = None,
          preflight_json: str | None = None) -> dict:
    """Rescale by ``k`` (``auto``/``probe`` resolved from norms and probes, a matched ``head_scale`` from its
    recorded ratio) and train, resumably and collapse-tolerant; writes the model, log, status and provenance.
    ``processes`` > 1 trains data-parallel (the recipe's batch is global)."""
    from lsrbench.model.ranks import training_processes, world

    n = training_processes(processes)
    if n > 1 and "LOCAL_RANK" not in os.environ:
        if recipe["batch_size"] % n:
            raise InputError(config_file, "recipe.batch_size",
                             f"{recipe['batch_size']} is not a multiple of the {n} training processes (train_processes)")
        from lsrbench.stages.distributed import run_distributed

        call = {key: value for key, value in locals().items() if key in inspect.signature(train).parameters}
        return run_distributed(n, f"{__name__}:train", call, status_json)
    files = {"norms_json": norms_json, "reference_norms_json": reference_norms_json, "probe_json": probe_json,
             "reference_probe_json": reference_probe_json}
    k_value = _k_value(run, k, config_file, files, auto_k, k_from_probe)
    sources = [p for p in [*files.values(), match_norms_json] if p]
    entry = resolved_head_scale(entry, norms_json, match_norms_json)
    status, summary, path = _train_here(run, entry, k, k_value, mode, recipe, mirror, cache_dir, config_file,
                                        triplets_jsonl, model_dir, train_log, checkpoint_dir, checkpoint_steps,
                                        report_to)
    if world()[0] != 0:
        return status  # the main process writes the outputs
    if status_json:
        write_json(status_json, status)
    _write_train_provenance(provenance_json, config_hash, run, entry, k, k_value, recipe, summary, path, sources,
                            triplets_jsonl, model_dir, train_log, status_json, checkpoint_steps)
    if checkpoint_dir:
        from lsrbench.model.resume import discard_checkpoints

        discard_checkpoints(checkpoint_dir)
    return status


def resolved_head_scale(entry: dict, norms_json: str, match_norms_json: str | None = None) -> dict:
    """The entry with ``head_scale`` as the number the head is multiplied by at load, and its mode."""
    from lsrbench.model.head_match import loaded_head_scale

    scale, mode = loaded_head_scale(entry, norms_json, match_norms_json)
    return {**entry, "head_scale": scale, "head_scale_mode": mode}


def _k_value(run: str, k: str, config_file: str, files: dict, auto_k: dict | None, k_from_probe: dict | None) -> float:
    """The number a run's k stands for: itself, or what ``auto``/``probe`` read off ``files``."""
    from lsrbench.model.auto_k import auto_k_from_files

    if k == AUTO_K:
        return auto_k_from_files(files["norms_json"], files["reference_norms_json"], auto_k, files["probe_json"],
                                 files["reference_probe_json"])
    if k == PROBE_K:
        return k_from_probes(run, [files["probe_json"], files["reference_probe_json"]], k_from_probe, config_file)
    return float(k)


def k_from_probes(run: str, probe_files: list[str], k_from_probe: dict, config_file: str) -> float:
    """``k: probe``: the k where the run's step-0 statistic crosses the reference's at k = 1 (docs/probe.md); an
    unbracketed crossing is a one-line InputError saying which way to probe."""
    from lsrbench.report.probe.report import recommend_k

    results = []
    for path in dict.fromkeys(probe_files):
        results += json.loads(Path(path).read_text(encoding="utf-8"))
    rec = recommend_k(results, k_from_probe["reference"], k_from_probe["statistic"]).get(run)
    if rec is None or rec["k"] is None:
        why = rec["note"] if rec else f"{run} is not among the probed runs of {', '.join(dict.fromkeys(probe_files))}"
        raise InputError(config_file, f"backbones.{split_run_name(run)[0]}.k", f"k: probe: {why} (probe.k_grid)")
    log.info("k probe of %s: %.4g (%s crosses the reference's between k = %s)", run, rec["k"], rec["statistic"],
             " and ".join(f"{b:g}" for b in rec["bracket"]))
    return float(rec["k"])


def _train_here(run, entry, k, k_value, mode, recipe, mirror, cache_dir, config_file, triplets_path, model_dir,
                log_path, checkpoint_dir, checkpoint_steps, report_to=None):
    from lsrbench.data.triplets import read_triplets
    from lsrbench.model.checkpoint import resolve_model
    from lsrbench.model.train import train_splade

    base, _ = split_run_name(run)
    path = resolve_model(entry, mirror, cache_dir, config_file, base)
    summary = train_splade(
        path, read_triplets(triplets_path), recipe, model_dir, log_path,
        k=k_value, mode=mode, head_scale=entry["head_scale"], head_scale_mode=entry["head_scale_mode"],
        trust_remote_code=entry.get("trust_remote_code", False), revision=entry.get("revision"),
        checkpoint_dir=checkpoint_dir, checkpoint_steps=checkpoint_steps, config_file=config_file,
        report_to=report_to or (),
    )
    return {"backbone": run, "k": k, **summary["status"]}, summary, path


def _write_train_provenance(prov_path, config_hash, run, entry, k, k_value, recipe, summary, path, sources,
                            triplets_path, model_dir, log_path, status_path, checkpoint_steps):
    from lsrbench.model.checkpoint import resolved_revision

    inputs = [*sources, triplets_path] + ([path] if Path(path).is_dir() else [])
    revision = {"requested": entry.get("revision"), "resolved": resolved_revision(path, entry.get("revision"))}
    write_json(prov_path, provenance("train", config_hash, recipe["seed"], backbone=run, k=k, k_value=k_value,
                                     model=entry["model"], resolved_path=path, model_revision=revision,
                                     head_scale=entry["head_scale"], head_scale_mode=entry["head_scale_mode"],
                                     recipe=recipe, summary=summary, checkpoint_steps=checkpoint_steps,
                                     head_norms=json.loads(Path(sources[0]).read_text()),  # norms_json, always first
                                     **manifest_fields(prov_path, inputs, [model_dir, log_path, status_path])))


TRAINED_OUTPUTS = {"model_dir": "model/", "train_log": "train_log.jsonl", "provenance_json": "train_provenance.json",
                   "status_json": "status.json"}

STAGE = Stage(
    name="train", kind="train", job=train,
    priority=3,
    model_job=True,
    grid=lambda c: [key for key in run_keys(c) if not is_released(c, key["run"])],
    identity=_identity,
    late_settings=late_recipe_settings("recipe"),
    inputs=_inputs,
    outputs=TRAINED_OUTPUTS,
    runtime=_runtime,
    log="train.log",
)
