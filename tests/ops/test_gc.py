"""``lsrbench gc``: lists (by default) or removes (``--delete``) exactly the addressed output folders
no given config refers to, the outermost ones, only below the results folder; reports, logs,
caches and the current configs' outputs stay."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers.beir import write_beir
from helpers.preloaded import run_module
from helpers.snakemake import copy_run, job_counts, layout, micro_config, outputs_of, run_snakemake
from lsrbench.cli import main


def _gc(work: Path, *args: str) -> subprocess.CompletedProcess:
    """``lsrbench gc ARGS`` in ``work``: a process of its own, forked from the preloaded server (helpers.preloaded)."""
    return run_module([sys.executable, "-m", "lsrbench.cli", "gc", *args], cwd=work, timeout=600)


def _listed(stdout: str) -> set[Path]:
    return {Path(line.split(": ", 1)[1].rsplit(" (", 1)[0]) for line in stdout.splitlines()
            if line.startswith(("would remove: ", "removed: "))}


@pytest.fixture
def tree(tmp_path) -> dict:
    """A results folder holding the outputs of a config (files in every addressed folder), and
    folders of other ids: a whole run, an evaluation inside a kept index, a pool depth, norms."""
    data = write_beir(tmp_path / "slice", {f"d{i}": f"document {i}" for i in range(4)}, {"q": "query"}, [("q", "d1", 1)])
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"weights")
    config = micro_config(tmp_path, data, model)
    work = tmp_path / "work"
    for folder in outputs_of(work, config):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "params.json").write_text("{}")
    paths = layout(config)
    stale = [work / paths.get("train", run="rand-roberta", k="1").folder.replace(paths.get("train", run="rand-roberta", k="1").id, "a" * 12),
             work / paths.get("index", run="rand-roberta", k="1", dataset="slice").folder / ("b" * 12),
             work / paths.get("data", dataset="slice").folder / "pool30",
             work / "results/norms/rand-roberta" / ("c" * 12)]
    for folder in stale:
        (folder / "sub").mkdir(parents=True)
        (folder / "sub" / "x.bin").write_bytes(b"12345")
    (work / paths.get("train", run="rand-roberta", k="1").folder.replace(paths.get("train", run="rand-roberta", k="1").id, "a" * 12)
     / "slice" / ("d" * 12)).mkdir(parents=True)  # inside a stale run: goes with it
    others = [work / "results/metrics.csv", work / "results/.cache/file-digests.json", work / "results/logs/x.log",
              work / "results/runs/old-layout/k1/model/model.safetensors"]
    for path in others:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("keep")
    return {"work": work, "config": config, "stale": stale, "others": others}


def test_gc_lists_then_removes_exactly_what_no_config_refers_to(tree):
    work = tree["work"]
    dry = _gc(work, "--configfile", str(tree["config"]))
    assert dry.returncode == 0, dry.stderr
    assert _listed(dry.stdout) == {p.resolve() for p in tree["stale"]}
    assert "4 folder(s)" in dry.stdout and "run again with --delete" in dry.stdout and "(5 B)" in dry.stdout
    assert all(p.exists() for p in tree["stale"])  # a dry run by default

    done = _gc(work, "--configfile", str(tree["config"]), "--delete")
    assert done.returncode == 0 and _listed(done.stdout) == {p.resolve() for p in tree["stale"]}
    assert not any(p.exists() for p in tree["stale"])
    assert all(p.exists() for p in tree["others"]) and all(p.is_dir() for p in outputs_of(work, tree["config"]))
    assert "0 folder(s)" in _gc(work, "--configfile", str(tree["config"])).stdout


def test_gc_keeps_the_outputs_of_every_config_given(tree, tmp_path):
    other = yaml.safe_load(tree["config"].read_text())
    other["evaluation"]["pool_depth"] = 30
    path = tmp_path / "other.yaml"
    path.write_text(yaml.safe_dump(other))
    listed = _listed(_gc(tree["work"], "--configfile", str(tree["config"]), "--configfile", str(path)).stdout)
    assert listed == {p.resolve() for p in tree["stale"] if p.name != "pool30"}


def test_gc_errors_are_one_line(tree, capsys, monkeypatch):
    monkeypatch.chdir(tree["work"])
    assert main(["gc", "--configfile", "missing.yaml"]) == 2
    assert capsys.readouterr().err == "lsrbench: error: missing.yaml: file not found\n"
    assert main(["gc", "--configfile", str(tree["config"]), "--results", "nowhere"]) == 2
    assert capsys.readouterr().err == (f"lsrbench: error: nowhere: results folder not found (in {tree['work']}): give "
                                       "the results folder of a run (--results DIR), or run from the folder snakemake "
                                       "ran in\n")


@pytest.mark.slow
def test_gc_after_a_reverted_edit_removes_its_outputs_and_the_config_plans_nothing(micro_run, tmp_path):
    work = copy_run(micro_run, tmp_path / "work")
    config = yaml.safe_load(micro_run["config"].read_text())
    config["evaluation"]["top_k"] = 200  # deeper: a shallower one than R@100 is refused
    edited = tmp_path / "edited.yaml"
    edited.write_text(yaml.safe_dump(config, sort_keys=False))
    run_snakemake("--cores", "2", "-d", str(work), "--configfile", str(edited))
    run_snakemake("--cores", "2", "-d", str(work), "--configfile", str(micro_run["config"]))  # reverted

    current = {p.resolve() for p in outputs_of(work, micro_run["config"])}
    made = {p for p in current if p.is_dir()}  # the probe's folders are in the layout, not in the default target
    away = {p.resolve() for p in outputs_of(work, edited)} - current
    # the two runs' evaluations at top_k 200 (of the kept vectors), BM25's, and the edited config's snapshot
    assert len(away) == 4 and sum("/configs/" in str(p) for p in away) == 1, away
    assert _listed(_gc(work, "--configfile", str(micro_run["config"])).stdout) == away
    assert _listed(_gc(work, "--configfile", str(micro_run["config"]), "--delete").stdout) == away
    assert not any(p.exists() for p in away) and made and all(p.is_dir() for p in made)
    dry = run_snakemake("-n", "--cores", "1", "-d", str(work), "--configfile", str(micro_run["config"])).stdout
    assert job_counts(dry) == {}
    verify = subprocess.run([sys.executable, "-m", "lsrbench.cli", "verify", "--results", str(work / "results")],
                            capture_output=True, text=True)
    assert verify.returncode == 0, verify.stderr
    params = json.loads((work / layout(micro_run["config"]).get("bm25", dataset="slice").path("params.json")).read_text())
    assert params["identity"]["top_k"] == 100
