"""A results folder follows the config the command runs (issue 47), as a user meets it: ``snakemake``
on copies of the finished micro run (``pytest -m slow``).

- A byte-identical copy of the config at another path is the same config: nothing planned, nothing
  refused.
- One ``like:`` twin added to the config file in place, then ``snakemake results/table1.md``: only
  the twin's jobs run, Table 1 has its rows, no report of the config before the edit is left, and
  ``lsrbench verify`` passes from the working directory and from ``/``.
- ``--until collect`` and a switch interrupted half way (Ctrl-C) leave one config's reports (some
  absent), never two configs'; the first config's reports come back byte for byte.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers.preloaded import run_module
from helpers.snakemake import SNAKEMAKE, copy_run, job_counts, jobs_of, run_snakemake

pytestmark = pytest.mark.slow
LSRBENCH = [sys.executable, "-m", "lsrbench.cli"]
TWIN = {"like": "rand-roberta", "head_scale": 10, "synthetic": True, "label": "random RoBERTa 1L x10"}


def _config_id(config: Path) -> str:
    """The id of a config file's snapshot, its ``base:`` and ``like:`` entries resolved."""
    from lsrbench.dag.fingerprint import FileDigests
    from lsrbench.ops.gc import config_layout

    return config_layout([str(config)], None, "results", FileDigests(None)).get("configs").id


def _snakemake(work: Path, config: Path, *args: str) -> subprocess.CompletedProcess:
    return run_snakemake(*args, "--cores", "2", "-d", str(work), "--configfile", str(config), check=False)


def _ok(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "lsrbench: error" not in proc.stderr, proc.stderr[-3000:]
    return proc


def _verify(results: Path, cwd: Path) -> subprocess.CompletedProcess:
    return run_module([*LSRBENCH, "verify", "--results", str(results)], cwd=cwd, timeout=900)


def _files(results: Path) -> dict[str, bytes]:
    return {str(p.relative_to(results)): p.read_bytes() for p in results.rglob("*")
            if p.is_file() and ".cache" not in p.relative_to(results).parts}


def _report_configs(results: Path) -> dict[str, set[str]]:
    """Config id -> the report files made with it, read from each report's own statement (the
    manifests, and the Markdown reports' last line), independently of the code under test."""
    found: dict[str, set[str]] = {}
    for manifest in (results / "manifests").glob("*.json"):
        record = json.loads(manifest.read_text())
        for path in [*record["artifacts"]["outputs"], str(manifest)]:
            found.setdefault(record["config"]["id"], set()).add(Path(path).name)
    for md in results.glob("*.md"):
        stated = re.search(r"^Made with config ([0-9a-f]{12}) ", md.read_text(), re.M)
        found.setdefault(stated.group(1) if stated else "none", set()).add(md.name)
    return found


def _interrupted(work: Path, config: Path) -> subprocess.CompletedProcess:
    """``snakemake`` with ``config``, Ctrl-C (SIGINT to its process group, as a terminal sends it) as
    soon as a training starts, and again every 10 s until it ends (one that lands while a job
    starts can be lost, as a user then presses it again)."""
    proc = subprocess.Popen([*SNAKEMAKE, "--cores", "2", "-d", str(work), "--configfile", str(config)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    out = []
    for line in proc.stdout:
        out.append(line)
        if re.match(r"(local)?rule train:", line):
            os.killpg(proc.pid, signal.SIGINT)
            break
    for _ in range(30):
        try:
            out.append(proc.communicate(timeout=10)[0])
            break
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGINT)
    return subprocess.CompletedProcess(proc.args, proc.wait(timeout=60), "".join(out), "")


def _with_twin(source: Path, dest: Path, twin: dict = TWIN) -> Path:
    """``dest``: the config at ``source`` with one twin entry added (written over it when the same)."""
    config = yaml.safe_load(source.read_text())
    config["backbones"]["twin"] = twin
    dest.write_text(yaml.safe_dump(config, sort_keys=False))
    return dest


def test_a_copy_of_the_config_elsewhere_is_the_same_config(micro_run, tmp_path):
    work = copy_run(micro_run, tmp_path / "work")
    copy = tmp_path / "elsewhere" / "copy.yaml"
    copy.parent.mkdir()
    copy.write_bytes(micro_run["config"].read_bytes())
    before = _files(work / "results")
    proc = _ok(_snakemake(work, copy, "-n"))
    assert job_counts(proc.stdout) == {} and "Nothing to be done" in proc.stdout + proc.stderr, proc.stdout[-2000:]
    proc = _ok(_snakemake(work, copy, "results/table1.md"))
    assert "Nothing to be done" in proc.stdout + proc.stderr and _files(work / "results") == before


def test_a_twin_added_in_place_then_table1_runs_only_the_twin(micro_run, tmp_path):
    """Before: refused, "one results folder holds the reports of one config"."""
    work = copy_run(micro_run, tmp_path / "work")
    results = work / "results"
    config = tmp_path / "config.yaml"
    config.write_bytes(micro_run["config"].read_bytes())
    first = _config_id(config)
    assert set(_report_configs(results)) == {first}
    _with_twin(config, config)  # the edit, in place
    second = _config_id(config)
    before = _files(results)

    dry = _ok(_snakemake(work, config, "results/table1.md", "-n"))
    assert {j["run"] for j in jobs_of(dry.stdout, "train")} == {"twin"}, dry.stdout[-2000:]
    plan = job_counts(dry.stdout)
    assert {k: plan.get(k) for k in ("norm", "train", "index", "evaluate", "table1")} == {
        "norm": 1, "train": 2, "index": 2, "evaluate": 2, "table1": 1}, plan
    assert _files(results) == before  # a dry run removes nothing

    proc = _ok(_snakemake(work, config, "results/table1.md"))
    assert f"made with config {first}" in proc.stderr and f"with config {second}" in proc.stderr, proc.stderr[-2000:]
    table = (results / "table1.md").read_text()
    assert len([row for row in table.splitlines() if row.startswith("| random RoBERTa 1L x10")]) == 2, table
    made = _report_configs(results)
    assert set(made) == {second}, made  # the other config's reports removed, none left beside the new ones
    assert {"table1.md", "metrics.csv", "table1.json", "collect.json"} <= made[second]
    assert not (results / "claims.md").exists() and not (results / "html/table1.html").exists()
    for name, data in before.items():  # every finished run kept as it was
        if name.startswith(("runs/", "norms/", "data/", "triplets/", "bm25/", "configs/")):
            assert (results / name).read_bytes() == data, name
    for cwd in (work, Path("/")):
        check = _verify(results.resolve(), cwd)
        assert check.returncode == 0 and check.stdout.rstrip().endswith(": ok"), (cwd, check.stderr[-3000:])

    # the HTML report of a folder whose reports are another config's: one line until they are made
    report = _snakemake(work, micro_run["config"], "--report", str(tmp_path / "r.html"))
    errors = [line for line in report.stderr.splitlines() if line.startswith("lsrbench: error: ")]
    assert report.returncode != 0 and len(errors) == 1 and f"made with config {second}" in errors[0], report.stderr
    assert "Traceback" not in report.stderr


def test_until_and_an_interrupted_switch_leave_one_configs_reports(micro_run, tmp_path):
    """Before: ``--until collect`` left reports of two configs, exit 0; a switch stopped half way a
    mixed folder."""
    work = copy_run(micro_run, tmp_path / "work")
    results = work / "results"
    first = _config_id(micro_run["config"])
    originals = _files(results)
    twin = _with_twin(micro_run["config"], tmp_path / "twin.yaml")

    until = _ok(_snakemake(work, twin, "--until", "collect"))
    made = _report_configs(results)
    assert set(made) == {_config_id(twin)}, made
    assert made[next(iter(made))] == {"metrics.csv", "metrics.sources.json", "collect.json"}, made
    assert "rule table1" not in until.stdout
    assert _verify(results, work).returncode == 0, _verify(results, work).stderr[-3000:]

    # Ctrl-C while a third config trains (after the first job; 5000 steps, so that it is still
    # training when the signal comes): the folder is one config's
    longer = yaml.safe_load(micro_run["config"].read_text())
    longer["recipe"]["steps"] = 5000
    (tmp_path / "longer.yaml").write_text(yaml.safe_dump(longer, sort_keys=False))
    interrupted = _interrupted(work, tmp_path / "longer.yaml")
    assert interrupted.returncode != 0, interrupted.stdout[-3000:]
    assert len(_report_configs(results)) <= 1, _report_configs(results)
    assert not (results / "metrics.csv").exists()  # the --until's, of another config: removed

    back = _ok(_snakemake(work, micro_run["config"]))  # every report of the first config again, from the runs
    assert "rule train" not in back.stdout and "rule evaluate" not in back.stdout
    assert set(_report_configs(results)) == {first}
    after = _files(results)
    for name, data in originals.items():
        if not name.startswith(("runs/", "norms/", "data/", "triplets/", "bm25/", "configs/", "manifests/")):
            assert after[name] == data, name  # byte for byte
    assert _verify(results, work).returncode == 0
