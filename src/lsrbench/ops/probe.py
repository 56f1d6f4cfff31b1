"""``lsrbench probe``: the step-0 probe of every backbone of a config (docs/probe.md) through Snakemake, which
trains nothing for these targets, then its table on stdout."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from lsrbench.snakemake_env import snakemake_env

__all__ = ["probe_targets", "probe_command", "run_probe", "add_probe_arguments"]


def add_probe_arguments(parser) -> None:
    """``lsrbench probe``'s options besides ``--configfile``."""
    from lsrbench.cli_options import add_mirror_option, add_results_option

    add_mirror_option(parser)
    parser.add_argument("--cores", metavar="N", help="cores for snakemake (default: all)")
    parser.add_argument("--snakefile", help="the Snakefile (default: ./Snakefile, else the installed checkout's)")
    add_results_option(parser, directory_alias=True)  # snakemake runs in the folder that holds it
    parser.add_argument("-n", "--dry-run", action="store_true", help="list the probe's jobs without running them")


def probe_targets(results: str = "results") -> list[str]:
    """What ``lsrbench probe`` builds: the probe's report before training (and so every probe job)."""
    from lsrbench.report.reports import rule_files
    from lsrbench.report.reports.probe import REPORT

    return rule_files(REPORT.name, results)[:-1]  # its manifest aside


def probe_command(configfiles: list[str] | None, command_line: dict | None, cores: str | None,
                  snakefile: str | None = None, directory: str = ".") -> list[str]:
    """The snakemake arguments: the probe's targets first, then Snakefile, directory, cores, config files and
    ``--config`` values."""
    from lsrbench.cli_options import config_pairs
    from lsrbench.dag.dryrun import find_snakefile

    cmd = [*probe_targets(), "--snakefile", str(find_snakefile(snakefile)), "-d", directory, "--cores", cores or "all"]
    if configfiles:
        cmd += ["--configfile", *(_as_read_here(f, directory) for f in configfiles)]
    values = dict(command_line or {})
    if values.get("mirror"):
        values["mirror"] = _as_read_here(values["mirror"], directory)
    return cmd + (["--config", *config_pairs(values)] if values else [])


def _as_read_here(path: str, directory: str) -> str:
    return path if Path(directory).resolve() == Path.cwd().resolve() else str(Path(path).resolve())


def run_probe(configfiles: list[str] | None, command_line: dict | None, cores: str | None, backbones: dict,
              snakefile: str | None = None, directory: str = ".", dry_run: bool = False) -> int:
    """Run the probe's jobs in ``directory``, then print its table and the recommended k per run (``dry_run``:
    only list the jobs)."""
    from lsrbench.report.probe.report import probe_summary

    cmd = probe_command(configfiles, command_line, cores, snakefile, directory) + (["--dry-run"] if dry_run else [])
    print("$ snakemake " + shlex.join(cmd), file=sys.stderr)
    code = subprocess.run([sys.executable, "-m", "snakemake", *cmd], env=snakemake_env(cmd)).returncode
    if code or dry_run:
        return code
    md, record_json, png = (Path(directory) / target for target in probe_targets())
    record = json.loads(record_json.read_text(encoding="utf-8"))
    print(probe_summary(record["runs"], backbones, record["reference"], record["statistic"]), end="")
    print(f"\nEvery statistic: {md}; each against k: {png} (docs/probe.md).")
    return 0
