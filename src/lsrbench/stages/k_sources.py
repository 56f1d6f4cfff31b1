"""What a symbolic k is read from (``auto``: a head statistic; ``probe``: the probe's crossing) as addressed
outputs, in the identity and the job's inputs."""

from __future__ import annotations

from lsrbench.config.grid import probe_settings
from lsrbench.model.probe_names import LOGIT_STATISTICS
from lsrbench.names import PROBE_K, SYMBOLIC_KS

__all__ = ["k_sources", "k_source_identity", "k_source_inputs"]

# The job arguments of the files a symbolic k is read from, by source (k_sources' keys).
SOURCE_FILES = {"probe": ("probe_json", "probe.json"), "reference_probe": ("reference_probe_json", "probe.json"),
                "reference_norms": ("reference_norms_json", "norms.json")}
# Sources that are settings, not addressed outputs.
SOURCE_SETTINGS = ("auto_k", "k_from_probe")


def k_sources(layout, base: str, k: str, own_probe: bool = True) -> dict:
    """What a symbolic k of backbone ``base`` is read from: ``auto`` the reference's head norms (and probes for
    a logit-scale statistic), ``probe`` both probes; ``own_probe=False`` for the backbone's own probe."""
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
