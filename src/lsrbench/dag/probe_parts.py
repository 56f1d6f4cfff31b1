"""The parts of two stage declarations (:mod:`lsrbench.dag.declarations`) that the step-0 probe
(docs/probe.md; "Rescaling MLM-Head for Neural Sparse Retrieval", arXiv 2606.18811) brings: what a
symbolic k of a training is read from (``k: auto`` by a head statistic, ``k: probe`` by the probe's
crossing), and what one backbone's probe is (its identity, inputs and runtime)."""

from __future__ import annotations

from lsrbench.config.grid import probe_settings, probed_ks, seed_recipe, training_seeds
from lsrbench.dag.stage_parts import job_location, load_identity, loaded_entry
from lsrbench.model.probe_names import LOGIT_STATISTICS, PROBE_RECIPE_KEYS
from lsrbench.names import AUTO_K, PROBE_K, SYMBOLIC_KS

__all__ = ["k_sources", "k_source_identity", "k_source_inputs", "probe_identity", "probe_inputs", "probe_runtime"]

# The job arguments of the files a symbolic k is read from, by source (k_sources' keys).
SOURCE_FILES = {"probe": ("probe_json", "probe.json"), "reference_probe": ("reference_probe_json", "probe.json"),
                "reference_norms": ("reference_norms_json", "norms.json")}
# Sources that are settings, not addressed outputs.
SOURCE_SETTINGS = ("auto_k", "k_from_probe")


def k_sources(layout, base: str, k: str, own_probe: bool = True) -> dict:
    """What a symbolic k of backbone ``base`` is read from: ``auto``, the reference's head norms
    with the ``auto_k`` settings (for a logit-scale statistic both backbones' probes too);
    ``probe``, both backbones' probes with the statistic crossed (``k_from_probe``). Values:
    addressed outputs, or the settings (:data:`SOURCE_SETTINGS`). ``own_probe=False``: for the
    backbone's probe itself, which measures its own k = 1 before its k auto."""
    if k not in SYMBOLIC_KS:
        return {}
    auto = layout.config["auto_k"]

    def probes() -> dict:
        named = {"probe": base, "reference_probe": auto["reference"]}
        return {name: layout.get("probe", backbone=b) for name, b in named.items() if own_probe or b != base}

    if k == PROBE_K:
        return {"k_from_probe": {"reference": auto["reference"], "statistic": probe_settings(layout.config)["statistic"]},
                **probes()}
    norms = {"auto_k": auto, "reference_norms": layout.get("norms", backbone=auto["reference"])}
    return norms | (probes() if auto["statistic"] in LOGIT_STATISTICS else {})


def k_source_identity(sources: dict) -> dict:
    """Sources as an identity records them: the settings, and the ids of the outputs."""
    return {name: item if name in SOURCE_SETTINGS else item.id for name, item in sources.items()}


def k_source_inputs(sources: dict) -> dict:
    """Sources as a job's named inputs (:data:`SOURCE_FILES`)."""
    return {SOURCE_FILES[name][0]: item.path(SOURCE_FILES[name][1]) for name, item in sources.items()
            if name in SOURCE_FILES}


def _probe_sources(layout, backbone: str) -> dict:
    """What the probe's own k auto is read from: training's sources less this very probe."""
    ks = [k for _, k in probed_ks(layout.config, backbone)]
    return k_sources(layout, backbone, AUTO_K, own_probe=False) if AUTO_K in ks else {}


def probe_identity(layout, key: dict) -> dict:
    """One backbone's probe: the backbone as loaded (as released, for ``evaluate_only``), its head
    norms' id (the norm job reads the checkpoint first), the sample of the triplets and the recipe
    keys the probe reads, every ``[mode, k]`` it measures and what its k auto is read from."""
    b, config = key["backbone"], layout.config
    settings = probe_settings(config)
    # the recipe of the first training seed (recipe.seeds): the probe samples once, whatever the seeds
    recipe = seed_recipe(config["recipe"], training_seeds(config)[0])
    identity = {"backbone": b, "load": load_identity(layout, b), "norms": layout.get("norms", backbone=b).id,
                "triplets": layout.get("triplets").id, "recipe": {k: recipe[k] for k in PROBE_RECIPE_KEYS},
                "n_triplets": settings["triplets"], "gradients": settings["gradients"], "ks": probed_ks(config, b)}
    identity |= {"released": True} if config["backbones"][b].get("evaluate_only") else {}
    return identity | k_source_identity(_probe_sources(layout, b))


def probe_inputs(layout, item) -> dict:
    b = item.fields["backbone"]
    inputs = {"triplets_jsonl": layout.get("triplets").path("triplets.jsonl"),
              "norms_json": layout.get("norms", backbone=b).path("norms.json")}
    return inputs | k_source_inputs(_probe_sources(layout, b))


def probe_runtime(layout, item) -> dict:
    """The backbone entry as written (``evaluate_only`` kept: a released checkpoint loads as such)."""
    released = {"evaluate_only": True} if item.identity.get("released") else {}
    return {"entry": {**loaded_entry(layout, item.fields["backbone"]), **released}, **job_location(layout)}
