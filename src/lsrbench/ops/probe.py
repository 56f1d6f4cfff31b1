"""``lsrbench probe``: the step-0 probe of every backbone of a config (docs/probe.md; "Rescaling
MLM-Head for Neural Sparse Retrieval", arXiv 2606.18811), the first thing to run for a new backbone:
only the probe jobs and their report (``results/probe.md``, ``probe.json``, ``probe.png``) through
Snakemake, which never trains anything for these targets, then the probe's table on stdout."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from lsrbench.dag.reports import PROBE_REPORTS
from lsrbench.errors import InputError

__all__ = ["probe_targets", "probe_command", "run_probe"]


def probe_targets(results: str = "results") -> list[str]:
    """What ``lsrbench probe`` builds: the probe's report before training (and so every probe job)."""
    return [f"{results}/{name}" for name in PROBE_REPORTS]


def probe_command(configfiles: list[str] | None, mirror: str | None, cores: str | None) -> list[str]:
    """The snakemake arguments: the probe's targets first (no option taking several values may
    swallow one), then the cores, the config files and the mirror."""
    cmd = [*probe_targets(), "--cores", cores or "all"]
    if configfiles:
        cmd += ["--configfile", *configfiles]
    return cmd + (["--config", f"mirror={mirror}"] if mirror else [])


def run_probe(configfiles: list[str] | None, mirror: str | None, cores: str | None, backbones: dict) -> int:
    """Run the probe's jobs through Snakemake in this folder, then print its table (per run the
    crossed statistic, the losses at step 0, the largest logit) and the recommended k per run;
    ``backbones``: the checked config's, for their labels."""
    from lsrbench.report.probe_report import probe_summary

    if not Path("Snakefile").is_file():
        raise InputError(Path.cwd(), None, "no Snakefile here: run lsrbench probe from the lsrbench checkout")
    cmd = probe_command(configfiles, mirror, cores)
    print("$ snakemake " + shlex.join(cmd), file=sys.stderr)
    code = subprocess.run([sys.executable, "-m", "snakemake", *cmd]).returncode
    if code:
        return code
    record = json.loads(Path(probe_targets()[1]).read_text(encoding="utf-8"))
    print(probe_summary(record["runs"], backbones, record["reference"], record["statistic"]), end="")
    print(f"\nEvery statistic: {probe_targets()[0]}; each against k: {probe_targets()[2]} (docs/probe.md).")
    return 0
