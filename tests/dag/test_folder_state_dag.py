"""A results folder that is always one config's and always complete (issue 38), as a user meets it:
``snakemake`` on copies of the finished micro run (``pytest -m slow``).

- Every report re-makes a deleted input: the input is made again (and what it needs), and the report
  is the original byte for byte; ``lsrbench verify`` passes.
- A hand-edited file is never read into a report: a cheap one (metrics.csv, a run's metrics.tsv,
  head norms, a report, the probe's reports among them) is made again from what it was made from,
  a costly one (a trained model, a probe file) refused in one line; ``verify`` names an edited
  report and gives a command that makes it again from its inputs; a file stamped in the future is
  one line, and costs no report.
- Every report of another config (an overlay adding a twin by one ``like:`` entry) brings the folder
  wholly to it, planning only the twin's own jobs, and back again gives the first
  config's reports byte for byte; ``gc`` keeps what the reports were made from, ``status`` and the
  HTML report's landing page say which config made them.
- Snakemake run in a results folder itself is refused.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from helpers.catalogue import record
from helpers.preloaded import run_module
from helpers.snakemake import (copy_run, snakemake_in, one_error, eval_dir, index_dir, job_counts, layout,
                              norms_json, run_snakemake, train_dir)

pytestmark = pytest.mark.slow
LSRBENCH = [sys.executable, "-m", "lsrbench.cli"]


def _ok(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, (proc.stdout[-3000:] + proc.stderr[-3000:])
    return proc


def _verify(work: Path) -> subprocess.CompletedProcess:
    return run_module([*LSRBENCH, "verify", "results"], cwd=work, timeout=900)


def _files(results: Path) -> dict[str, bytes]:
    """Every file of a results folder but the digest cache, by path, with its bytes."""
    return {str(p.relative_to(results)): p.read_bytes() for p in results.rglob("*")
            if p.is_file() and ".cache" not in p.relative_to(results).parts}


# --------------------------------------------------------------------------- every report re-makes a deleted input

def _eval_folder(micro_run) -> str:
    return str(eval_dir(Path("."), micro_run["config"], "rand-roberta", "1", "slice"))


def _train_folder(micro_run) -> str:
    return str(train_dir(Path("."), micro_run["config"], "rand-roberta", "1"))


def _norms_folder(micro_run) -> str:
    return str(norms_json(Path("."), micro_run["config"], "rand-roberta").parent)


def _index_docs(micro_run) -> str:
    """The run's index of the collection (its evaluation, a folder inside the index's, kept)."""
    return str(index_dir(Path("."), micro_run["config"], "rand-roberta", "1", "slice") / "docs.npz")


def _run_folder(micro_run) -> str:
    """``runs/rand-roberta/k1``: the run's training, its index and its evaluation."""
    return str(train_dir(Path("."), micro_run["config"], "rand-roberta", "1").parent)


# report target, what of its inputs is deleted (a path under the working directory)
DELETED = {
    "metrics.csv-evaluation": ("results/metrics.csv", _eval_folder),        # a run's evaluation
    "table1-metrics.csv": ("results/table1.md", lambda m: "results/metrics.csv"),
    "table1-run-folder": ("results/table1.md", _run_folder),                 # re-trained, indexed, evaluated
    "table1-index": ("results/table1.md", _index_docs),                      # through the evaluation reading it
    "table_beir-evaluation": ("results/table_beir.md", _eval_folder),        # through metrics.csv
    "norms-norms": ("results/norms.md", _norms_folder),                      # the head norms
    "tradeoff-metrics.csv": ("results/tradeoff.png", lambda m: "results/metrics.csv"),
    "loss_curves-train-log": ("results/loss_curves.png", lambda m: f"{_train_folder(m)}/train_log.jsonl"),  # re-trained
    "html-table1.md": ("results/html/table1.html", lambda m: "results/table1.md"),
}


@pytest.mark.parametrize("case", DELETED)
def test_each_report_makes_a_deleted_input_again_and_is_the_same(micro_run, tmp_path, case):
    """Before: "Nothing to be done" with the input gone (a run folder moved away, metrics.csv, an
    index folder), and verify failing."""
    target, deleted = DELETED[case]
    work = copy_run(micro_run, tmp_path / "work")
    before = _files(work / "results")
    gone = work / deleted(micro_run)
    shutil.rmtree(gone) if gone.is_dir() else gone.unlink()
    proc = _ok(snakemake_in(work, micro_run["config"], target))
    assert "made again" in proc.stderr  # the note naming what is made again, and why
    assert gone.exists()
    assert (work / target).read_bytes() == before[target[len("results/"):]]
    if gone.is_file():
        assert gone.read_bytes() == before[str(gone.relative_to(work / "results"))]
    assert _verify(work).returncode == 0, _verify(work).stderr[-3000:]


@pytest.fixture(scope="module")
def probe_run(micro_run, tmp_path_factory) -> dict:
    """The micro run brought to a config with the reports it does not make (the probe's and the
    claims'): ``{"finished": its working directory, "config", "before": its results files}``."""
    tmp = tmp_path_factory.mktemp("probe_run")
    config = yaml.safe_load(micro_run["config"].read_text())
    config["probe"] = {"with_grid": True}
    config["claims"] = {"datasets": ["slice"], "resamples": 200, "list": [
        {"id": "k1_beats_collapsed", "text": "k = 1 beats the collapsed k", "type": "compare",
         "a": {"backbone": "rand-roberta", "k": 1}, "b": {"backbone": "rand-roberta", "k": 1e-30}, "expect": "greater"}]}
    path = tmp / "more.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    work = copy_run(micro_run, tmp / "finished")
    _ok(snakemake_in(work, path))  # every report of this config: the folder changes config
    return {"finished": work, "config": path, "before": _files(work / "results")}


def _copy(probe_run, work: Path) -> Path:
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(probe_run["finished"], work, symlinks=True)
    return work


def test_the_claims_and_probe_reports_make_a_deleted_input_again(probe_run, tmp_path):
    """The reports the micro run does not make: claims (a run's per-query scores deleted) and the
    probe's (its probe file, and metrics.csv beside the trained outcomes)."""
    path, before = probe_run["config"], probe_run["before"]
    probe_folder = layout(path).get("probe", backbone="rand-roberta").folder
    evaluation = Path(layout(path).get("evaluate", run="rand-roberta", k="1", dataset="slice").folder)
    for target, gone in (("results/claims.md", evaluation / "perquery.tsv"), ("results/probe.md", Path(probe_folder)),
                         ("results/probe_outcomes.md", Path("results/metrics.csv"))):
        work = _copy(probe_run, tmp_path / "work")
        shutil.rmtree(work / gone) if (work / gone).is_dir() else (work / gone).unlink()
        _ok(snakemake_in(work, path, target))
        assert (work / gone).exists(), target
        assert (work / target).read_bytes() == before[target[len("results/"):]], target
        assert _verify(work).returncode == 0, _verify(work).stderr[-3000:]


@pytest.mark.parametrize("target, manifest, page", [("probe.md", "probe_report", None),
                                                    ("probe_outcomes.md", "probe_outcomes", "html/probe_outcomes.html")])
def test_an_edited_probe_report_is_named_by_verify_and_made_again(probe_run, tmp_path, target, manifest, page):
    """Before: verify said ok on a hand-edited probe.md (neither re-made nor hashed), and for an
    edited probe_outcomes.md advised re-making its HTML page, which copied the edited number into
    it. Now verify names the report by its manifest, and the command it gives makes the report (and
    its page) again from the probe files and metrics, never from the edited text."""
    work, before = _copy(probe_run, tmp_path / "work"), probe_run["before"]
    md = work / "results" / target
    md.write_text(md.read_text().replace("|", "| 0.999 |", 1))
    proc = _verify(work)
    assert proc.returncode == 1, proc.stdout
    assert re.search(rf"{re.escape(str(Path('results', target)))}: modified: SHA-256 differs from results/manifests/"
                     rf"{manifest}\.json .*: snakemake .* makes it again from the files it was made from", proc.stderr), \
        proc.stderr
    advised = re.findall(r"snakemake --cores 1 (\S+) makes it again", proc.stderr)  # the HTML page's line
    assert advised == ([f"results/{page}"] if page else []), proc.stderr
    _ok(snakemake_in(work, probe_run["config"], f"results/{page or target}"))
    assert md.read_bytes() == before[target]
    if page:
        assert (work / "results" / page).read_bytes() == before[page]
    assert _verify(work).returncode == 0, _verify(work).stderr[-3000:]


def test_an_edited_probe_file_is_refused_in_one_line(probe_run, tmp_path):
    """A probe job's output changed after it (a number of its probe.json) is never read into
    probe.md: one line naming the file and how to repair it, nothing changed."""
    work = _copy(probe_run, tmp_path / "work")
    folder = Path(layout(probe_run["config"]).get("probe", backbone="rand-roberta").folder)
    probe_json = work / folder / "probe.json"
    rows = json.loads(probe_json.read_text())
    rows[0]["batch_size"] += 1
    probe_json.write_text(json.dumps(rows, indent=2))
    (work / "results/probe.md").unlink()  # the probe report has to be made, reading it
    before = _files(work / "results")
    line = one_error(snakemake_in(work, probe_run["config"], "results/probe.md"))
    assert re.match(rf"lsrbench: error: {re.escape(str(folder / 'probe.json'))}: .*{re.escape(str(folder))}/params\.json "
                    r"records.*: it was changed after its probe job made it", line), line
    assert f"restore it, or delete {folder}" in line, line
    record("a probe job's probe.json edited by hand", line, work)
    assert _files(work / "results") == before


# --------------------------------------------------------------------------- a changed file is never read into a report

def _edit_number(path: Path, prefix: str, add: float) -> None:
    """Add ``add`` to the number ending the line of ``path`` that starts with ``prefix``."""
    lines = path.read_text().splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith(prefix))
    lines[i] = f"{prefix}{float(lines[i][len(prefix):]) + add:.6g}"
    path.write_text("\n".join(lines) + "\n")


def test_an_edited_number_is_made_again_never_published(micro_run, tmp_path):
    """Before: +0.1 in metrics.csv reached Table 1 (in bold), exit 0; a run's edited metrics.tsv
    reached it as soon as anything re-made the collection."""
    work = copy_run(micro_run, tmp_path / "work")
    table = (work / "results/table1.md").read_bytes()
    _edit_number(work / "results/metrics.csv", "rand-roberta,1,slice,nDCG@10,", 0.1)
    proc = _ok(snakemake_in(work, micro_run["config"], "results/table1.md"))
    assert re.search(r"lsrbench: note: results/metrics\.csv: changed after its collect report made it .*: made again",
                     proc.stderr), proc.stderr
    assert (work / "results/table1.md").read_bytes() == table
    metrics_tsv = work / _eval_folder(micro_run) / "metrics.tsv"
    _edit_number(metrics_tsv, "rand-roberta\t1\tslice\tnDCG@10\t", 0.1)
    proc = _ok(snakemake_in(work, micro_run["config"], "results/table1.md"))
    assert f"lsrbench: note: {_eval_folder(micro_run)}/metrics.tsv: changed after its evaluate job made it" \
        in proc.stderr, proc.stderr
    assert (work / "results/table1.md").read_bytes() == table
    assert _verify(work).returncode == 0


def test_edited_head_norms_are_made_again_never_published(micro_run, tmp_path):
    """A backbone's norms.json edited by hand (its Frobenius norm) is made again by its norm job,
    and what was made from it with it (the trainings, through them every number): norms.md is the
    original byte for byte."""
    work = copy_run(micro_run, tmp_path / "work")
    norms = norms_json(work, micro_run["config"], "rand-roberta")
    original, report = norms.read_bytes(), (work / "results/norms.md").read_bytes()
    data = json.loads(original)
    data["frobenius_norm"] *= 2
    norms.write_text(json.dumps(data, indent=2))
    proc = _ok(snakemake_in(work, micro_run["config"], "results/norms.md"))
    assert f"lsrbench: note: {norms.relative_to(work)}: changed after its norm job made it" in proc.stderr, proc.stderr
    assert norms.read_bytes() == original
    assert (work / "results/norms.md").read_bytes() == report
    assert _verify(work).returncode == 0, _verify(work).stderr[-3000:]


def test_an_edited_report_is_named_by_verify_and_made_again_from_its_inputs(micro_run, tmp_path):
    """verify names the edited report by its manifest and advises snakemake, which makes it (and
    then its HTML page) again from its run files, never from the edited text."""
    work = copy_run(micro_run, tmp_path / "work")
    md, page = work / "results/table_beir.md", work / "results/html/table_beir.html"
    original, original_page = md.read_bytes(), page.read_bytes()
    md.write_text(md.read_text().replace("|", "| 0.999 |", 1))
    proc = _verify(work)
    assert proc.returncode == 1
    assert re.search(rf"{re.escape(str(Path('results/table_beir.md')))}: modified: SHA-256 differs from "
                     r"results/manifests/table_beir\.json .*: snakemake .* makes it again from the files it was made "
                     r"from", proc.stderr), proc.stderr
    _ok(snakemake_in(work, micro_run["config"], "results/html/table_beir.html"))
    assert md.read_bytes() == original and page.read_bytes() == original_page
    assert _verify(work).returncode == 0


def test_a_changed_trained_model_is_refused_in_one_line(micro_run, tmp_path):
    """A costly output changed after its job (one byte of a trained model) is not re-trained behind
    the user's back, nor read into an index: one line naming it, nothing changed."""
    work = copy_run(micro_run, tmp_path / "work")
    model = train_dir(work, micro_run["config"], "rand-roberta", "1") / "model" / "model.safetensors"
    data = bytearray(model.read_bytes())
    data[-1] ^= 1
    model.write_bytes(bytes(data))
    shutil.rmtree(index_dir(work, micro_run["config"], "rand-roberta", "1", "slice"))  # an index job reads it
    before = _files(work / "results")
    line = one_error(snakemake_in(work, micro_run["config"]))
    assert line == (f"lsrbench: error: {model.relative_to(work)}: its SHA-256 differs from the one "
                    f"{model.parents[1].relative_to(work)}/params.json records: it was changed after its train job "
                    f"made it, and what is made from it would carry the change: restore it, or delete "
                    f"{model.parents[1].relative_to(work)} to compute it (and what is made from it) again (`lsrbench "
                    "verify results` lists every changed file)"), line
    record("a trained model changed after its job (one byte)", line, work)
    assert _files(work / "results") == before


def test_a_file_stamped_in_the_future_costs_no_report(micro_run, tmp_path):
    """Before: Snakemake failed the table job on "clock skew" and deleted table1.md."""
    work = copy_run(micro_run, tmp_path / "work")
    norms = norms_json(work, micro_run["config"], "rand-roberta")
    future = time.time() + 2 * 86400
    os.utime(norms, (future, future))
    (work / "results/table1.md").unlink()  # the table job has to run, reading the norms
    before = _files(work / "results")
    line = one_error(snakemake_in(work, micro_run["config"], "results/table1.md"))
    relative = norms.relative_to(work)
    assert re.fullmatch(rf"lsrbench: error: {re.escape(str(relative))}: modified \d+ s in the future .*\(touch -r "
                        rf"{re.escape(str(relative.parent / 'params.json'))} {re.escape(str(relative))}\) and run again",
                        line), line
    record("a finished norms file stamped two days in the future", line, work)
    assert _files(work / "results") == before
    subprocess.run(["touch", "-r", str(relative.parent / "params.json"), str(relative)], cwd=work, check=True)
    _ok(snakemake_in(work, micro_run["config"], "results/table1.md"))
    assert (work / "results/table1.md").read_bytes() == (micro_run["results"] / "table1.md").read_bytes()


# --------------------------------------------------------------------------- one config per folder

def _twin(micro_run, path: Path) -> Path:
    """An overlay adding a synthetic twin by one entry (``like:``)."""
    path.write_text(f"base: {micro_run['config']}\nbackbones:\n  twin:\n    like: rand-roberta\n    head_scale: 10\n"
                    "    synthetic: true\n    label: random RoBERTa 1L x10\n")
    return path


def test_every_report_of_another_config_brings_the_folder_wholly_to_it_and_back(micro_run, tmp_path):
    """The default target with an overlay: only the twin's jobs, then every report of the overlay;
    the first config again gives its reports byte for byte (a target alone: test_config_switch_dag.py)."""
    work = copy_run(micro_run, tmp_path / "work")
    twin = _twin(micro_run, tmp_path / "twin.yaml")
    before = _files(work / "results")
    plan = job_counts(_ok(snakemake_in(work, twin, dry=True)).stdout)
    # the twin's own jobs and the reports, nothing of rand-roberta's
    assert {k: plan[k] for k in ("norm", "train", "index", "evaluate")} == {"norm": 1, "train": 2, "index": 2,
                                                                             "evaluate": 2}, plan
    assert "dataset" not in plan and "triplets" not in plan and "bm25" not in plan, plan
    _ok(snakemake_in(work, twin))
    assert _verify(work).returncode == 0, _verify(work).stderr[-3000:]
    landing = run_snakemake("--cores", "1", "--report", str(tmp_path / "twin.html"), "-d", str(work),
                            "--configfile", str(twin), check=False)
    assert landing.returncode == 0, landing.stderr[-3000:]
    html = (tmp_path / "twin.html").read_text(errors="replace")
    twin_snapshot = json.loads((work / "results/manifests/table1.json").read_text())["config"]["id"]
    first_snapshot = layout(micro_run["config"]).get("configs").id
    assert twin_snapshot != first_snapshot
    assert f"made with this config, snapshot {twin_snapshot}" in html and first_snapshot not in html
    status = subprocess.run([*LSRBENCH, "status", "--configfile", str(micro_run["config"])], cwd=work,
                            capture_output=True, text=True)
    assert status.returncode == 0 and "report files made with config" in status.stdout, status.stdout
    assert "all done" not in status.stdout
    gc = subprocess.run([*LSRBENCH, "gc", "--configfile", str(micro_run["config"])], cwd=work, capture_output=True,
                        text=True)
    twin_runs = [str(p) for p in (work / "results/runs").glob("twin/*/*")]
    assert twin_runs and not any(run in gc.stdout for run in twin_runs), gc.stdout  # kept: the reports' runs

    back = _ok(snakemake_in(work, micro_run["config"]))  # every report of the first config again
    assert "rule train" not in back.stdout
    after = _files(work / "results")
    for name, data in before.items():
        if name.startswith(("runs/", "norms/", "data/", "triplets/", "bm25/", "configs/", "manifests/")):
            continue
        assert after[name] == data, name  # the first config's reports, byte for byte
    assert not any(name.startswith("runs/twin") for name in _report_inputs(work))
    assert _verify(work).returncode == 0


def _report_inputs(work: Path) -> set[str]:
    names = set()
    for manifest in (work / "results/manifests").glob("*.json"):
        names |= {p[len("results/"):] for p in json.loads(manifest.read_text())["artifacts"]["inputs"]}
    return names


def test_a_second_refit_of_a_shared_checkpoint_is_said_in_the_dry_run(micro_run, tmp_path):
    """An entry that re-fits the same checkpoint with the same settings, but differs in what else
    names it, plans a second re-fit: the dry run says so in one line; ``like:`` shares the first."""
    config = yaml.safe_load(micro_run["config"].read_text())
    refit = {"dataset": "slice", "steps": 2, "batch_size": 4, "held_out": 8, "max_length": 32}
    config["backbones"]["rand-roberta"]["mlm_refit"] = refit
    base = tmp_path / "refit.yaml"
    base.write_text(yaml.safe_dump(config, sort_keys=False))
    entry = config["backbones"]["rand-roberta"]
    for overlay, note in (({"model": entry["model"], "mlm_refit": refit, "trust_remote_code": True, "label": "twin"}, True),
                          ({"like": "rand-roberta", "head_scale": 10, "label": "twin"}, False)):
        path = tmp_path / "twin.yaml"
        path.write_text(yaml.safe_dump({"base": str(base), "backbones": {"twin": overlay}}))
        (tmp_path / "work").mkdir(exist_ok=True)
        proc = _ok(snakemake_in(tmp_path / "work", path, dry=True))
        notes = [line for line in proc.stderr.splitlines() if "a second MLM re-fit" in line]
        assert len(notes) == note, proc.stderr
        if note:
            assert re.fullmatch(rf"lsrbench: note: {re.escape(str(path))}: backbones\.twin: a second MLM re-fit of "
                                rf".* beside rand-roberta's .*, since its trust_remote_code differs from rand-roberta's; "
                                r"give it rand-roberta's \(like: rand-roberta\) to share that re-fit", notes[0])
        assert job_counts(proc.stdout)["mlm_refit"] == (2 if note else 1)


def test_snakemake_in_a_results_folder_is_refused(micro_run, tmp_path):
    work = copy_run(micro_run, tmp_path / "work")
    before = _files(work / "results")
    line = one_error(run_snakemake("-n", "--cores", "1", "--configfile", str(micro_run["config"]), cwd=work / "results",
                                   check=False))
    assert line == (f"lsrbench: error: {(work / 'results').resolve()}: a results folder of lsrbench (it holds "
                    f"configs/<id>/ and the reports), not the folder to run snakemake in: run it from the folder that "
                    f"holds this one as results/ ({work.resolve()})"), line
    record("snakemake run in the results folder itself", line, work.resolve())
    assert _files(work / "results") == before and not (work / "results/results").exists()
