"""A snakemake start lsrbench makes does not wait for a SLURM controller it does not use (the SLURM
executor plugin's ``scontrol show config`` at import), and one that submits to SLURM keeps its
environment."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from helpers.paths import REPO
from lsrbench.cli import build_parser, snakemake_command
from lsrbench.snakemake_env import NO_CONTROLLER, snakemake_env, uses_slurm


def _run_command(*argv: str) -> list[str]:
    args = build_parser().run_parser.parse_intermixed_args(list(argv))
    args.snakemake_args = []
    return snakemake_command(args)


@pytest.mark.parametrize(("args", "slurm"), [
    (["results/table1.md", "--cores", "2"], False),
    (["--executor", "slurm"], True),
    (["-e", "slurm"], True),
    (["--executor=slurm", "-n"], True),
    (["--executor", "local"], False),
    (["--profile", str(REPO / "profiles/slurm")], True),
    (["--profile=" + str(REPO / "profiles/slurm")], True),
    (["--profile", str(REPO / "profiles/local")], False),
    (["--workflow-profile", str(REPO / "profiles/default")], False),
    (["--profile", "a-profile-by-name-only"], True),  # unreadable here: the environment is left alone
])
def test_which_starts_may_submit_to_slurm(args, slurm):
    assert uses_slurm(args, {}) is slurm


def test_environment_of_a_start():
    user = {"PATH": "/usr/bin", "SLURM_CONF": "/etc/slurm/site.conf"}
    assert snakemake_env(["--cores", "1"], user) == {"PATH": "/usr/bin", "SLURM_CONF": os.devnull}
    assert snakemake_env(["--profile", str(REPO / "profiles/slurm")], user) == user  # the cluster's, untouched
    assert snakemake_env([], {**user, "SNAKEMAKE_PROFILE": str(REPO / "profiles/slurm")})["SLURM_CONF"] == \
        "/etc/slurm/site.conf"
    # lsrbench run's own command: local by default, SLURM with the profile or an executor after --
    assert not uses_slurm(_run_command("results/table1.md", "--cores", "2"), {})
    assert uses_slurm(_run_command("results/table1.md", "--profile", "profiles/slurm"), {})
    assert uses_slurm(_run_command("--cores", "2") + ["--executor", "slurm"], {})


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slurm
def test_plugin_import_does_not_wait_for_an_absent_controller(tmp_path):
    """The real plugin imported under a client config whose controller does not answer (scontrol retries
    once a second for MessageTimeout, 10 s by default): as it is, the import waits about 9 s; in the
    environment lsrbench starts a local snakemake in, it does not."""
    pytest.importorskip("snakemake_executor_plugin_slurm")
    conf = tmp_path / "slurm.conf"
    conf.write_text(f"ClusterName=none\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort={_closed_port()}\n")
    unreachable = {**os.environ, "SLURM_CONF": str(conf)}
    took = {}
    for name, env in (("as is", unreachable), ("lsrbench", snakemake_env(["--cores", "1"], unreachable))):
        start = time.monotonic()
        subprocess.run([sys.executable, "-c", "import snakemake_executor_plugin_slurm"], env=env, check=True)
        took[name] = time.monotonic() - start
    assert took["as is"] >= 8.0 and took["lsrbench"] < took["as is"] - 6.0, took
    assert NO_CONTROLLER == {"SLURM_CONF": os.devnull}
