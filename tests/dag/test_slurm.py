"""The micro DAG through a real SLURM cluster with the project's SLURM profile (``pytest -m slurm``).

The cluster is the one-node SLURM of ``.ci/slurm-up`` (run here: it is idempotent, and starts one
as root; without root it only finds one already running). It has no accounting storage, so the run
also checks the profile's job-status method. The profile is used as shipped, the real
snakemake-executor-plugin-slurm submits with sbatch; only the per-site values are this cluster's,
given the one documented way (a file named by LSRBENCH_SLURM_SITE, see profiles/slurm/config.yaml).

No cluster: the tests skip with the reason; with LSRBENCH_REQUIRE_SLURM=1 (CI) they fail instead.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from helpers.paths import REPO
from helpers.miniatures import write_zero_head_model
from helpers.snakemake import SNAKEMAKE, layout, micro_config

pytestmark = pytest.mark.slurm
PARTITION = "ci"  # .ci/slurm-up's partition
RUN_TIMEOUT = 900  # s; the micro DAG took 3.7 min through SLURM here (2 cores, shared and busy); CI runs it beside the slow suite
# For speed only: the plugin waits 40 s after a job finishes before it looks at the queue again
# (then 10 s longer each time nothing finished), so each step of the micro DAG's chain of ~9 would
# cost >= 40 s (7 min in all, measured); 5 s here. A scalar setting: no resource of the profile
# and not its status method (squeue) changes.
STATUS_INTERVAL = ("--slurm-init-seconds-before-status-checks", "5")


@pytest.fixture(scope="module")
def slurm_env(tmp_path_factory) -> dict:
    """The environment of a snakemake run on the one-node cluster: this cluster's site values."""
    proc = subprocess.run(["bash", str(REPO / ".ci/slurm-up")], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        why = f"no SLURM cluster: .ci/slurm-up exited {proc.returncode}: {proc.stderr.strip()[-1500:]}"
        if os.environ.get("LSRBENCH_REQUIRE_SLURM") == "1":
            pytest.fail(why + " (LSRBENCH_REQUIRE_SLURM=1)")
        pytest.skip(why)
    cpus, mem_mb = subprocess.run(["sinfo", "-h", "-p", PARTITION, "-o", "%c %m"], capture_output=True,
                                  text=True, check=True).stdout.split()[:2]
    site = {
        "account": None,  # no accounting: submit without --account
        "partition": PARTITION,
        "gpu_partition": PARTITION,
        "train_gpus": 0,  # no GPUs: train and index ask for CPUs
        "max_cpus": int(cpus),
        "max_mem_mb": int(mem_mb) // int(cpus),  # a core's share of the node's memory
        "max_runtime": 10,  # minutes: a job stuck beyond that is killed by SLURM
    }
    path = tmp_path_factory.mktemp("slurm_site") / "site.yaml"
    path.write_text(yaml.safe_dump(site))
    return {**os.environ, "LSRBENCH_SLURM_SITE": str(path)}


class SlurmRun:
    """``snakemake --profile profiles/slurm -d work ARGS`` started in the background (own process group)."""

    def __init__(self, env: dict, work: Path, *args: str, timeout: int):
        work.mkdir(parents=True, exist_ok=True)
        self.work, self.timeout, self.start = work, timeout, time.monotonic()
        cmd = [*SNAKEMAKE, "--profile", str(REPO / "profiles/slurm"), "-d", str(work), *STATUS_INTERVAL, *args]
        self.proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, start_new_session=True)

    def finish(self) -> "SlurmRun":
        """Wait for the run; one that outlives its timeout is killed (with its process group) and fails
        the test: it waited on a job instead of reporting it."""
        try:
            self.out, _ = self.proc.communicate(timeout=max(1.0, self.start + self.timeout - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGTERM)  # snakemake cancels its SLURM jobs on SIGTERM
            try:
                out, _ = self.proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                out, _ = self.proc.communicate()
            pytest.fail(f"snakemake on SLURM still running after {self.timeout} s (killed):\n{out[-4000:]}")
        self.returncode, self.took = self.proc.returncode, time.monotonic() - self.start
        return self


@pytest.fixture(scope="module")
def slurm_runs(request, slurm_env, tmp_path_factory, vaswani_slice, tiny_roberta):
    """The micro DAG on SLURM and a run whose one job fails inside SLURM, started together, and
    meanwhile the local run of the same micro config (the session's micro_run). A cluster run
    mostly waits on the plugin's status checks, so overlapping the three keeps this module at a
    few minutes."""
    tmp = tmp_path_factory.mktemp("slurm_runs")
    # The micro config as micro_run writes it (same slice, same model): its own file, so the
    # cluster run can start before the local one.
    cfg = micro_config(tmp, vaswani_slice, tiny_roberta)
    good = SlurmRun(slurm_env, tmp / "work", "--configfile", str(cfg), timeout=RUN_TIMEOUT)
    # A backbone whose head is all zeros as the `k: auto` reference: the config and every file pass
    # the checks before the DAG (a zero head is a valid checkpoint), the norm jobs run, and the
    # train job of k auto fails inside SLURM (it divides by the reference's norm). The target goes
    # before --configfile, which takes every value after it.
    (tmp / "bad").mkdir()
    zero = write_zero_head_model(tiny_roberta, tmp / "zero-head")
    bad_cfg = micro_config(tmp / "bad", vaswani_slice, tiny_roberta)
    config = yaml.safe_load(bad_cfg.read_text())
    config["backbones"]["rand-roberta"]["k"] = [*config["backbones"]["rand-roberta"].get("k", config["k_grid"]), "auto"]
    config["backbones"]["zero"] = {"model": str(zero), "k": [1]}
    config["auto_k"] = {"reference": "zero"}
    bad_cfg.write_text(yaml.safe_dump(config, sort_keys=False))
    bad_target = layout(bad_cfg).get("train", run="rand-roberta", k="auto").path("train_log.jsonl")
    bad = SlurmRun(slurm_env, tmp / "bad" / "work", bad_target, "--configfile", str(bad_cfg), timeout=600)
    try:
        local = request.getfixturevalue("micro_run")
        bad.finish()  # usually over by now: its time is the run's own
        yield {"good": good.finish(), "bad": bad, "bad_target": bad_target, "local": local}
    finally:
        for run in (good, bad):  # a run left behind by a failure above
            if run.proc.poll() is None:
                os.killpg(run.proc.pid, signal.SIGKILL)
                run.proc.communicate()


def test_micro_dag_on_slurm_equals_local_run(slurm_runs):
    run, local = slurm_runs["good"], slurm_runs["local"]
    assert run.returncode == 0, f"snakemake on SLURM failed ({run.returncode}):\n{run.out[-6000:]}"
    # every job but the target rule went through sbatch (none ran on the submitting host)
    submitted = run.out.count("has been submitted with SLURM jobid")
    assert submitted >= 10 and submitted == len(re.findall(r"^rule \w+:", run.out, re.M)), run.out[-6000:]
    assert (run.work / "results/metrics.csv").read_bytes() == (local["results"] / "metrics.csv").read_bytes()
    print(f"micro DAG on SLURM: {submitted} jobs, {run.took:.0f} s")


def test_failing_job_is_reported_not_waited_on(slurm_runs):
    run = slurm_runs["bad"]
    assert run.returncode != 0, run.out[-4000:]
    assert "has been submitted with SLURM jobid" in run.out, run.out[-4000:]
    assert "Error in rule train" in run.out and "failed, SLURM status is: 'FAILED'" in run.out, run.out[-4000:]
    assert not (run.work / slurm_runs["bad_target"]).exists() and list((run.work / "results" / "norms").rglob("norms.json"))
    # the job's own one-line error, in its SLURM log
    job_log = "".join(p.read_text() for p in (run.work / ".snakemake/slurm_logs").rglob("*.log"))
    assert "k auto divides head norms" in job_log, job_log[-4000:]
    print(f"failing job on SLURM reported, run over within {run.took:.0f} s")
