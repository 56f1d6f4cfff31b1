"""Nothing a user does to a config's formatting, and no damaged input, costs a finished file
(issue 22, family 0), through ``snakemake`` on a copy of the finished micro run: every mapping of
the config (and of its dataset registry) written in another order plans no job; a finished
``docs.npz`` truncated with a fresh mtime is refused in one line before Snakemake re-runs (and so
deletes) the evaluation made from it; ``lsrbench gc --delete`` with another config keeps what the
reports in the results folder were made from, so ``lsrbench verify`` still passes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from helpers.preloaded import run_module
from helpers.snakemake import copy_run, eval_dir, index_dir, job_counts, run_snakemake, train_dir

pytestmark = pytest.mark.slow
LSRBENCH = [sys.executable, "-m", "lsrbench.cli"]


def _reversed(value):
    """Every mapping with its keys in the reverse order, recursively (lists keep theirs)."""
    if isinstance(value, dict):
        return {k: _reversed(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed(v) for v in value]
    return value


def _files(results: Path) -> dict[str, bytes]:
    return {str(p.relative_to(results)): p.read_bytes() for p in sorted(results.rglob("*"))
            if p.is_file() and ".cache" not in p.parts}


def _dry_run(work: Path, config: Path) -> dict[str, int]:
    proc = run_snakemake("-n", "--cores", "1", "-d", str(work), "--configfile", str(config), check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {k: v for k, v in job_counts(proc.stdout).items() if k not in ("all", "total")}


def _without_config_line(text: bytes) -> bytes:
    return b"\n".join(line for line in text.splitlines() if not line.startswith(b"Made with config "))


REPORT_RULES = {"config_snapshot", "collect", "chance", "table1", "table_beir", "norms_report", "tradeoff", "loss_curves",
                "html_table1", "html_table_beir", "html_norms"}


def test_the_finished_micro_run_plans_nothing(micro_run, tmp_path):
    """The finished run, its reports among them, with the same config: not one job (no output
    missing, no params changed, no code changed)."""
    work = copy_run(micro_run, tmp_path / "work")
    assert _dry_run(work, micro_run["config"]) == {}


def test_every_mapping_reordered_runs_no_job_that_computes_a_result(micro_run, tmp_path):
    """Every mapping of the config and of its dataset registry in the reverse order, in a new file:
    no job that computes a result (the reports name the config file, so they are re-made, with the
    same tables), and every finished run file byte-identical."""
    work = copy_run(micro_run, tmp_path / "work")
    config = yaml.safe_load(micro_run["config"].read_text())
    registry = tmp_path / "datasets.yaml"
    registry.write_text(yaml.safe_dump(_reversed(yaml.safe_load(Path(config["datasets_file"]).read_text())),
                                       sort_keys=False))
    reordered = {**_reversed(config), "datasets_file": str(registry)}
    assert list(reordered["recipe"]) == list(reversed(list(config["recipe"])))  # really another order
    path = tmp_path / "reordered.yaml"
    path.write_text(yaml.safe_dump(reordered, sort_keys=False))
    assert set(_dry_run(work, path)) <= REPORT_RULES
    before = _files(work / "results")
    run_snakemake("--cores", "2", "-d", str(work), "--configfile", str(path))
    after = _files(work / "results")
    for name in before:
        if name.startswith(("runs/", "data/", "norms/", "triplets/", "bm25/")) or name == "metrics.csv":
            assert after[name] == before[name], name
    # the same config by content (its id is the content after defaults, not the file): the same table,
    # not made again, so its last line still names the file it was made from
    assert _without_config_line(after["table1.md"]) == _without_config_line(before["table1.md"])
    assert after["table1.md"] == before["table1.md"]
    assert _dry_run(work, path) == {}


def test_every_mapping_reordered_in_the_same_file_plans_nothing(micro_run, tmp_path):
    """The same config file rewritten with every mapping in another order: not one job."""
    work = copy_run(micro_run, tmp_path / "work")
    config_copy = tmp_path / "cfg" / micro_run["config"].name
    config_copy.parent.mkdir()
    config_copy.write_text(micro_run["config"].read_text())
    run_snakemake("--cores", "2", "-d", str(work), "--configfile", str(config_copy))  # the copy's own reports (its file is another path)
    assert _dry_run(work, config_copy) == {}
    config = yaml.safe_load(config_copy.read_text())
    config_copy.write_text(yaml.safe_dump(_reversed(config), sort_keys=False))
    assert _dry_run(work, config_copy) == {}


def test_a_truncated_finished_docs_npz_is_refused_before_anything_is_deleted(micro_run, tmp_path):
    work = copy_run(micro_run, tmp_path / "work")
    docs = index_dir(work, micro_run["config"], "rand-roberta", "1", "slice") / "docs.npz"
    docs.write_bytes(docs.read_bytes()[:1000])
    future = time.time() + 5
    os.utime(docs, (future, future))  # a fresh mtime: Snakemake's mtime trigger would re-run the evaluation
    before = _files(work / "results")
    for dry in (True, False):
        proc = run_snakemake(*(["-n"] if dry else []), "--cores", "1", "-d", str(work),
                             "--configfile", str(micro_run["config"]), check=False)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr
        errors = [line for line in proc.stderr.splitlines() if line.startswith("lsrbench: error: ")]
        assert len(errors) == 1, proc.stderr[-2000:]
        relative = docs.relative_to(work)
        assert errors[0].startswith(f"lsrbench: error: {relative}: ") and "restore the file" in errors[0], errors[0]
        assert _files(work / "results") == before  # the finished evaluation is still there
    assert (eval_dir(work, micro_run["config"], "rand-roberta", "1", "slice") / "metrics.tsv").is_file()


def test_a_truncated_finished_model_is_refused_before_the_job_that_reads_it(micro_run, tmp_path):
    """A finished run's ``model/model.safetensors`` cut short (issue 22 item 7) and an index job
    still to run that reads it (its folder removed here, as for a dataset added to the evaluation):
    before, that job ended in safetensors' ``SafetensorError`` traceback, after Snakemake had
    planned the evaluation downstream of it. Now the Snakefile refuses the file in one line (the
    folder to delete to retrain), no job starts, and every finished file stays as it was."""
    import shutil

    work = copy_run(micro_run, tmp_path / "work")
    run = train_dir(work, micro_run["config"], "rand-roberta", "1")
    weights = run / "model" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:4096])  # the model folder's own timestamp is untouched
    shutil.rmtree(index_dir(work, micro_run["config"], "rand-roberta", "1", "slice"))  # with its evaluation
    before = _files(work / "results")
    for dry in (True, False):
        proc = run_snakemake(*(["-n"] if dry else []), "--cores", "1", "-d", str(work),
                             "--configfile", str(micro_run["config"]), check=False)
        output = proc.stdout + proc.stderr
        assert proc.returncode != 0 and "Traceback" not in output, output[-3000:]
        errors = [line for line in proc.stderr.splitlines() if line.startswith("lsrbench: error: ")]
        assert errors == [f"lsrbench: error: {weights.relative_to(work)}: 4096 bytes where its header describes "
                          f"{errors[0].split('describes ')[1].split(' ')[0]} (truncated or damaged): a finished "
                          f"checkpoint is damaged, and "
                          f"{index_dir(work, micro_run['config'], 'rand-roberta', '1', 'slice').relative_to(work)} "
                          f"would be computed from it; delete {run.relative_to(work)} to train it again "
                          "(`lsrbench verify --results results` lists what else is damaged)"], output[-3000:]
        assert "rule index" not in proc.stdout and _files(work / "results") == before  # the other runs' too


def test_gc_with_another_config_keeps_what_the_reports_were_made_from(micro_run, tmp_path):
    work = copy_run(micro_run, tmp_path / "work")
    config = yaml.safe_load(micro_run["config"].read_text())
    config["recipe"]["learning_rate"] = 3e-5  # another config: none of the micro run's trainings
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump(config, sort_keys=False))
    gc = subprocess.run([*LSRBENCH, "gc", "--delete", "--configfile", str(other)], cwd=work, capture_output=True,
                        text=True)
    assert gc.returncode == 0, gc.stderr
    assert "keeping" in gc.stdout and "the reports in results were made from" in gc.stdout, gc.stdout
    verify = run_module([*LSRBENCH, "verify", "--results", "results"], cwd=work, timeout=900)
    assert verify.returncode == 0, verify.stdout[-2000:] + verify.stderr[-2000:]
    assert (eval_dir(work, micro_run["config"], "rand-roberta", "1", "slice") / "metrics.tsv").is_file()
    ignoring = subprocess.run([*LSRBENCH, "gc", "--ignore-reports", "--configfile", str(other)], cwd=work,
                              capture_output=True, text=True)
    assert ignoring.returncode == 0 and "would remove" in ignoring.stdout
