"""The environment of a snakemake start lsrbench makes: one that does not submit to SLURM gets
``SLURM_CONF=/dev/null``, because the SLURM plugin runs ``scontrol`` at import, which waits ~10 s for an absent
controller."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["NO_CONTROLLER", "uses_slurm", "snakemake_env"]

NO_CONTROLLER = {"SLURM_CONF": os.devnull}


def _option_values(args: list[str], names: tuple[str, ...]) -> list[str]:
    values = []
    for i, arg in enumerate(args):
        name, sep, value = arg.partition("=")
        if name in names:
            values.append(value if sep else (args[i + 1] if i + 1 < len(args) else ""))
    return values


def _profile_executor(profile: str) -> str | None:
    import yaml

    try:
        text = (Path(profile) / "config.yaml").read_text(encoding="utf-8")
        return (yaml.safe_load(text) or {}).get("executor")
    except (OSError, yaml.YAMLError, AttributeError):
        return "unknown"


def uses_slurm(args: list[str], environ: dict | None = None) -> bool:
    """Whether ``snakemake ARGS`` may submit to SLURM: a non-local executor given or named by a profile."""
    environ = os.environ if environ is None else environ
    executors = _option_values(args, ("--executor", "-e"))
    profiles = _option_values(args, ("--profile", "--workflow-profile"))
    if environ.get("SNAKEMAKE_PROFILE") and not profiles:
        profiles.append(environ["SNAKEMAKE_PROFILE"])
    executors += [executor for executor in map(_profile_executor, profiles) if executor]
    return any(executor not in ("local", "dryrun", "touch") for executor in executors)


def snakemake_env(args: list[str], environ: dict | None = None) -> dict:
    """The environment to start ``snakemake ARGS`` in: ``environ`` (default: this process's), with
    :data:`NO_CONTROLLER` unless the start may submit to SLURM."""
    environ = dict(os.environ if environ is None else environ)
    return environ if uses_slurm(args, environ) else {**environ, **NO_CONTROLLER}
