"""The DAG as Snakemake plans it: a dry run (``snakemake -n``) of the Snakefile in a subprocess, and its output
parsed into job counts per rule and the wildcards of every job."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from lsrbench.errors import InputError
from lsrbench.snakemake_env import snakemake_env

__all__ = ["find_snakefile", "dry_run", "job_counts", "jobs_of", "planned_jobs"]


def find_snakefile(snakefile: str | None = None) -> Path:
    """``snakefile`` if given, else ``./Snakefile``, else the repository's (an editable install)."""
    candidates = [Path(snakefile)] if snakefile else [Path("Snakefile"), Path(__file__).resolve().parents[3] / "Snakefile"]
    for path in candidates:
        if path.is_file():
            return path.resolve()
    raise InputError(snakefile or "Snakefile", None,
                     "no Snakefile found (run from the lsrbench checkout or pass --snakefile)")


def dry_run(snakefile: Path, configfiles: list[str], workdir: str | Path = ".", *, forceall: bool = True,
            config: dict | None = None) -> str:
    """The output of ``snakemake -n`` for ``configfiles`` (and ``--config`` values) in ``workdir``: every job of
    the grid (``forceall``), or only those not finished there."""
    cmd = [sys.executable, "-m", "snakemake", "-n", "--nolock", "--cores", "1", "--snakefile", str(snakefile),
           "-d", str(workdir)]
    cmd += ["--forceall"] if forceall else []
    cmd += ["--configfile", *map(str, configfiles)]
    if config:
        cmd += ["--config", *(f"{key}={value}" for key, value in config.items())]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=snakemake_env(cmd))
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        errors = [line.removeprefix("lsrbench: error: ") for line in out.splitlines() if line.startswith("lsrbench: error:")]
        if errors:  # the Snakefile's own one-line error, passed on as it is
            raise InputError(None, None, errors[0])
        raise InputError(configfiles[-1], "snakemake -n", " | ".join(out.strip().splitlines()[-3:]))
    return out


def job_counts(output: str) -> dict[str, int]:
    """Parse Snakemake's 'Job stats' table: rule -> jobs (and ``total``)."""
    counts = {}
    block = output.split("Job stats:", 1)[1] if "Job stats:" in output else ""
    for line in block.splitlines()[3:]:
        m = re.match(r"^(\S+)\s+(\d+)$", line.strip())
        if not m:
            break
        counts[m.group(1)] = int(m.group(2))
    return counts


def planned_jobs(output: str) -> list[tuple[str, dict[str, str]]]:
    """``(rule, wildcards)`` of every planned job of a dry run's output."""
    found = []
    for block in re.split(r"\n(?=\[\w{3} \w{3} )|\n\s*\n", output):
        rule = re.search(r"^\s*(?:local)?rule (\w+):", block, re.M)
        if rule:
            m = re.search(r"wildcards: (.*)", block)
            found.append((rule.group(1), dict(kv.split("=", 1) for kv in m.group(1).split(", ")) if m else {}))
    return found


def jobs_of(output: str, rule: str) -> list[dict[str, str]]:
    """Wildcards of every planned job of ``rule`` in a dry run's output."""
    return [wildcards for name, wildcards in planned_jobs(output) if name == rule]
