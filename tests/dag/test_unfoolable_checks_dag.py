"""Checks that one edited file cannot fool, through ``snakemake`` and ``lsrbench verify`` on copies of
the finished micro run (``pytest -m slow``), each edit as a careful hand makes it: the size kept and
the mtime set back (``touch -r``), after a planning has cached the files' digests.

- A changed digit in a finished metrics.tsv: its evaluation is made again, Table 1 is the original;
  16 changed bytes in a trained model: refused in one line naming it, nothing changes.
- A truncated report manifest beside an edited table1.md: the report is made again; with the
  manifests deleted, ``verify`` fails on an edited report instead of passing it.
- A params.json whose recorded SHA-256 was rewritten to match an edited metrics.tsv: made again
  (the stage's manifest still records the old bytes), and ``verify`` names it; an edited
  ``identity`` in a train params.json: ``verify`` names the folder whose id it no longer gives.
- A twin (``like:``) is shown by its own name, not its source's label; one whose label differs only in
  whitespace: refused in one line naming the overlay file.
Every other finished file is byte-identical afterwards (SHA-256 before and after).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.preloaded import run_module
from helpers.snakemake import copy_run, one_error, snakemake_in, eval_dir, index_dir, train_dir

pytestmark = pytest.mark.slow
LSRBENCH = [sys.executable, "-m", "lsrbench.cli"]


def _verify(work: Path) -> subprocess.CompletedProcess:
    return run_module([*LSRBENCH, "verify", "results"], cwd=work, timeout=900)


def _ok(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def _digests(results: Path) -> dict[str, str]:
    """SHA-256 of every file of a results folder but the digest cache and the jobs' logs."""
    return {str(p.relative_to(results)): hashlib.sha256(p.read_bytes()).hexdigest() for p in results.rglob("*")
            if p.is_file() and not {".cache", "logs"} & set(p.relative_to(results).parts)}


def _planned(micro_run, tmp_path) -> Path:
    """A copy of the finished run, planned once (a dry run): every finished file's digest cached,
    as after any earlier snakemake in the folder."""
    work = copy_run(micro_run, tmp_path / "work")
    _ok(snakemake_in(work, micro_run["config"], dry=True))
    assert (work / "results/.cache/file-digests.json").is_file()
    return work


def _edit_keeping_size_and_mtime(path: Path, edit) -> None:
    """``path``'s bytes through ``edit`` (same length), its mtime set back (``touch -r``)."""
    stat, data = path.stat(), path.read_bytes()
    new = edit(data)
    assert len(new) == len(data) and new != data
    path.write_bytes(new)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def _changed_digit(data: bytes, line_start: bytes) -> bytes:
    """The first digit after the decimal point of the value on the line starting ``line_start``, changed."""
    i = data.index(line_start) + len(line_start)
    j = data.index(b".", i) + 1
    return data[:j] + (b"9" if data[j:j + 1] != b"9" else b"1") + data[j + 1:]


def _unchanged_but(before: dict, after: dict, *remade: str) -> None:
    """Every file of ``before`` is in ``after`` with the same bytes, but those under a folder or
    name of ``remade`` (what the run was to make again)."""
    kept = {name for name in before if not any(name == r or name.startswith(r.rstrip("/") + "/") for r in remade)}
    assert {n: after.get(n) for n in kept} == {n: before[n] for n in kept}


def _rel(work: Path, path: Path) -> str:
    return str(path.relative_to(work / "results"))


# --------------------------------------------------------------------------- item 6: the digest cache

def test_a_digit_changed_in_a_finished_metrics_tsv_is_made_again(micro_run, tmp_path):
    """Before: the cache (path, size, mtime) kept the old digest; with metrics.csv deleted, the
    collection read the edited number into Table 1, exit 0."""
    work = _planned(micro_run, tmp_path)
    evaluation = eval_dir(work, micro_run["config"], "rand-roberta", "1", "slice")
    metrics = evaluation / "metrics.tsv"
    original, before = metrics.read_bytes(), _digests(work / "results")
    _edit_keeping_size_and_mtime(metrics, lambda data: _changed_digit(data, b"rand-roberta\t1\tslice\tnDCG@10\t"))
    (work / "results/metrics.csv").unlink()
    proc = _ok(snakemake_in(work, micro_run["config"], "results/table1.md"))
    assert f"lsrbench: note: {metrics.relative_to(work)}: changed after its evaluate job made it" in proc.stderr, \
        proc.stderr[-3000:]
    assert metrics.read_bytes() == original
    after = _digests(work / "results")
    assert after["table1.md"] == before["table1.md"] and after["metrics.csv"] == before["metrics.csv"]
    _unchanged_but(before, after, _rel(work, evaluation), "metrics.sources.json", "manifests/")
    assert _verify(work).returncode == 0


def test_sixteen_bytes_changed_in_a_trained_model_are_refused(micro_run, tmp_path):
    """Before: the index job it was to be read by read it (Table 1 0.522 instead of 0.730)."""
    work = _planned(micro_run, tmp_path)
    run = train_dir(work, micro_run["config"], "rand-roberta", "1")
    model = run / "model" / "model.safetensors"
    _edit_keeping_size_and_mtime(model, lambda data: data[:-64] + bytes(b ^ 0xFF for b in data[-64:-48]) + data[-48:])
    shutil.rmtree(index_dir(work, micro_run["config"], "rand-roberta", "1", "slice"))  # an index job reads the model
    before = _digests(work / "results")
    for dry in (True, False):
        line = one_error(snakemake_in(work, micro_run["config"], dry=dry))
        assert line.startswith(f"lsrbench: error: {model.relative_to(work)}: its SHA-256 differs from the one "
                               f"{run.relative_to(work)}/params.json records: it was changed after its train job "
                               f"made it"), line
        assert f"restore it, or delete {run.relative_to(work)}" in line, line
        assert _digests(work / "results") == before


# --------------------------------------------------------------------------- item 7: a missing or damaged manifest

def test_an_edited_table_beside_a_truncated_manifest_is_made_again(micro_run, tmp_path):
    """Before: a truncated manifest read as "no record": the edited table1.md stayed, "Nothing to be done"."""
    work = _planned(micro_run, tmp_path)
    table, manifest = work / "results/table1.md", work / "results/manifests/table1.json"
    before = _digests(work / "results")
    _edit_keeping_size_and_mtime(table, lambda data: _changed_digit(data, b"|     1 |"))  # the k = 1 row
    stat = manifest.stat()
    manifest.write_bytes(manifest.read_bytes()[:200])
    os.utime(manifest, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    verify = _verify(work)
    assert verify.returncode == 1 and "results/manifests/table1.json: unreadable manifest" in verify.stderr, \
        verify.stderr[-3000:]
    proc = _ok(snakemake_in(work, micro_run["config"], "results/table1.md"))
    assert re.search(r"lsrbench: note: results/manifests/table1\.json: changed after its table1 report made it "
                     r"\(unreadable .*: its record is damaged.*\): made again", proc.stderr), proc.stderr[-3000:]
    after = _digests(work / "results")
    assert after == before
    assert _verify(work).returncode == 0


def test_verify_fails_on_an_edited_report_without_manifests(micro_run, tmp_path):
    """Before: with results/manifests/ deleted, verify passed a hand-edited report (it had no record
    to compare it with). Now each report without its manifest is a failure; snakemake makes them again."""
    work = copy_run(micro_run, tmp_path / "work")
    before = _digests(work / "results")
    shutil.rmtree(work / "results/manifests")
    _edit_keeping_size_and_mtime(work / "results/norms.md", lambda data: _changed_digit(data, b"| random RoBERTa 1L"))
    proc = _verify(work)
    assert proc.returncode == 1, proc.stdout
    assert "results/norms.md: no record of the job that made it (results/manifests/norms_report.json is missing)" \
        in proc.stderr, proc.stderr[-3000:]
    _ok(snakemake_in(work, micro_run["config"]))
    assert _digests(work / "results") == before
    assert _verify(work).returncode == 0


# --------------------------------------------------------------------------- item 8: a forged record

def _forge_params(params: Path, file: Path) -> None:
    """Rewrite the SHA-256 and size ``params`` records for ``file`` to its current bytes."""
    record = json.loads(params.read_text())
    (key,) = [k for k in record["outputs"] if k.endswith("/" + file.name)]
    record["outputs"][key] = {"sha256": hashlib.sha256(file.read_bytes()).hexdigest(), "bytes": file.stat().st_size}
    params.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")


def test_a_params_json_forged_to_match_an_edited_metrics_tsv_is_caught(micro_run, tmp_path):
    """Before: accepted; Table 1 showed the edited number (0.912), exit 0. Plain edits (new mtimes,
    no digest cached): the forged record agrees with the file, only the stage's manifest does not."""
    work = copy_run(micro_run, tmp_path / "work")
    evaluation = eval_dir(work, micro_run["config"], "rand-roberta", "1", "slice")
    metrics = evaluation / "metrics.tsv"
    original, before = metrics.read_bytes(), _digests(work / "results")
    metrics.write_bytes(_changed_digit(original, b"rand-roberta\t1\tslice\tnDCG@10\t"))
    _forge_params(evaluation / "params.json", metrics)
    verify = _verify(work)
    assert verify.returncode == 1
    assert f"{metrics.relative_to(work)}: modified: SHA-256 differs from {evaluation.relative_to(work)}/provenance.json" \
        in verify.stderr, verify.stderr[-3000:]
    assert f"{evaluation.relative_to(work)}/params.json: SHA-256 differs" not in verify.stderr  # the forged record agrees
    (work / "results/metrics.csv").unlink()
    proc = _ok(snakemake_in(work, micro_run["config"], "results/table1.md"))
    assert (f"lsrbench: note: {metrics.relative_to(work)}: changed after its evaluate job made it (its SHA-256 differs "
            f"from the one {evaluation.relative_to(work)}/provenance.json records): made again") in proc.stderr, \
        proc.stderr[-3000:]
    assert metrics.read_bytes() == original
    after = _digests(work / "results")
    assert after["table1.md"] == before["table1.md"]
    _unchanged_but(before, after, _rel(work, evaluation), "metrics.sources.json", "manifests/")
    assert _verify(work).returncode == 0


def test_an_edited_identity_in_a_train_params_json_is_named_by_verify(micro_run, tmp_path):
    """Before: verify never compared a recorded identity with the folder's id."""
    work = copy_run(micro_run, tmp_path / "work")
    run = train_dir(work, micro_run["config"], "rand-roberta", "1")
    params = run / "params.json"
    record = json.loads(params.read_text())
    assert record["id"] == run.name
    record["identity"]["k"] = 2.0 if record["identity"].get("k") != 2.0 else 3.0
    params.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    proc = _verify(work)
    assert proc.returncode == 1
    assert re.search(rf"{re.escape(str(params.relative_to(work)))}: its identity gives the id [0-9a-f]{{12}}, not the "
                     rf"folder's {run.name} \(recorded id {run.name}\): the record or the folder was edited by hand",
                     proc.stderr), proc.stderr[-3000:]


# --------------------------------------------------------------------------- labels

def test_a_twin_gets_its_own_label_and_one_differing_only_in_whitespace_is_refused(micro_run, tmp_path):
    """A ``like:`` entry without a label of its own is shown by its name (the source's label is not
    copied: two Table 1 rows would read the same); a label that differs from another only in
    whitespace is one line naming the overlay."""
    work = copy_run(micro_run, tmp_path / "work")
    before = _digests(work / "results")
    overlay = tmp_path / "twin.yaml"
    overlay.write_text(f"base: {micro_run['config']}\nbackbones:\n  twin:\n    like: rand-roberta\n")
    proc = snakemake_in(work, overlay, dry=True)
    assert proc.returncode == 0 and "lsrbench: error" not in proc.stderr, proc.stderr[-3000:]
    overlay.write_text(overlay.read_text() + "    label: \"random  RoBERTa 1L \"\n")  # only whitespace differs
    line = one_error(snakemake_in(work, overlay, dry=True))
    assert line == (f"lsrbench: error: {overlay}: backbones.twin.label: 'random  RoBERTa 1L ' is also how rand-roberta "
                    "is shown ('random RoBERTa 1L', as a reader sees it): their table rows could not be told apart"), line
    assert _digests(work / "results") == before
