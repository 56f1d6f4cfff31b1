"""lsrbench preflight (lsrbench.ops.preflight) on the faults it is there to find, each next to the
right case: a mirror copy at another revision than the pin, a BEIR zip whose MD5 is not the
registry's, a backbone neither in the mirror nor answered by the hub; one measured training step;
the tiny default passing as a user runs it; and a GPU grid on a machine without a GPU, through
Snakemake, stopping before any training in one line."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import REPO, SHARED, tiny_default
from lsrbench.validation.config import check_config
from lsrbench.validation.preflight import backbone_findings, dataset_findings, step_peak_bytes

PINNED, OTHER = "a" * 40, "b" * 40


def _config(tmp_path: Path, **changes) -> dict:
    config = check_config(tiny_default(), str(REPO / "config" / "config.yaml"), files=False, mirror_must_exist=False)
    return {**config, "cache_dir": str(tmp_path / "cache"), **changes}


def _mirror_copy(mirror: Path, ref: str, commit: str) -> Path:
    """A mirror copy as snapshot_download(local_dir=...) leaves it: each file's metadata names its commit."""
    folder = mirror / "models" / ref
    (folder / ".cache" / "huggingface" / "download").mkdir(parents=True)
    (folder / "config.json").write_text('{"model_type": "bert"}')
    (folder / ".cache" / "huggingface" / "download" / "config.json.metadata").write_text(f"{commit}\netag\n1.0\n")
    return folder


def test_a_mirror_copy_at_another_revision_than_the_pin_is_a_problem(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    mirror = tmp_path / "mirror"
    folder = _mirror_copy(mirror, "org/model", OTHER)
    config = _config(tmp_path, mirror=str(mirror), backbones={"m": {"model": "org/model", "revision": PINNED}})
    problems, notes = backbone_findings(config, "my.yaml")
    assert problems == [f"my.yaml: backbones.m.revision: {folder} is at {OTHER}, the config pins {PINNED}: "
                        "lsrbench prefetch --force it"]
    shutil.rmtree(mirror)
    folder = _mirror_copy(mirror, "org/model", PINNED)
    assert backbone_findings(config, "my.yaml") == ([], [f"m: {folder} at aaaaaaa"])
    # neither in the mirror nor in the hub cache, and the hub not asked: one line naming the backbone
    config = {**config, "backbones": {"m": {"model": "org/absent", "revision": PINNED}}}
    problems, _ = backbone_findings(config, "my.yaml")
    assert problems == [f"my.yaml: backbones.m.model: 'org/absent' at {PINNED} is not in the mirror ({mirror}) nor "
                        "the hub cache, and the hub is not asked (HF_HUB_OFFLINE is set): lsrbench prefetch "
                        "--mirror DIR on a connected machine"]


def test_a_beir_zip_whose_md5_is_not_the_registrys_is_a_problem(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    data = b"PK\x05\x06" + bytes(18)  # any bytes: only their MD5 is compared before unzipping
    right = hashlib.md5(data).hexdigest()
    wrong = hashlib.md5(b"another archive").hexdigest()

    def findings(md5):
        (cache / "scifact.zip").write_bytes(data)
        config = _config(tmp_path)
        entry = {"source": "beir", "name": "scifact", **({"md5": md5} if md5 else {})}
        config["_datasets"] = {**config["_datasets"], "vaswani": entry}
        return dataset_findings(config, "my.yaml")

    assert findings(right) == ([], [f"vaswani: {cache / 'scifact.zip'} has the registry's MD5"])
    problems, _ = findings(wrong)
    assert problems == [f"{cache / 'scifact.zip.rejected'}: BEIR dataset 'scifact': zip MD5 {right}, expected "
                        f"{wrong} (the archive changed upstream or the download is damaged); not unpacked"]
    problems, _ = findings(None)
    assert len(problems) == 1 and ": vaswani.md5: none, so BEIR's zip of 'scifact' is used unchecked" in problems[0]


def test_one_training_step_is_measured_at_the_recipes_shape(tiny_roberta):
    """The step preflight measures on a GPU runs here on the CPU (no peak to read there): the
    model it builds is the checkpoint's, every parameter counted for AdamW's moments."""
    from transformers import AutoModelForMaskedLM

    recipe = {**tiny_default()["recipe"], "query_max_length": 16, "document_max_length": 48, "precision": "fp32"}
    peak, params = step_peak_bytes(str(tiny_roberta), {}, recipe, 4, "cpu")
    assert peak is None
    assert params == sum(p.numel() for p in AutoModelForMaskedLM.from_pretrained(tiny_roberta).parameters())


def _lsrbench(*args, cwd=REPO, env=None):
    return subprocess.run([sys.executable, "-m", "lsrbench", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=900)


@pytest.mark.slow
def test_the_tiny_default_passes_preflight():
    """As the issue's user runs it: the tiny default with its mirror, a CPU config, exits 0."""
    proc = _lsrbench("preflight", "--config", f"mirror={SHARED}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == "config/config.yaml: preflight ok" and "  device: CPU (use_gpu: false): no GPU checked" in lines
    assert f"  splade-tiny: {SHARED}/models/splade-tiny-msmarco" in lines and "  vaswani: in the mirror" in lines
    assert any(line.startswith("  disk: ") for line in lines)


@pytest.mark.slow
def test_a_gpu_grid_without_a_gpu_stops_before_any_training(tmp_path, vaswani_slice, tiny_roberta):
    """The micro DAG with use_gpu: true where no GPU is visible: its first job, the preflight, stops
    the grid in one line naming the node, torch's CUDA build and the driver; no model is written."""
    from helpers.snakemake import SNAKEMAKE, micro_config, train_dir

    cfg = micro_config(tmp_path, vaswani_slice, tiny_roberta)
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # a node whose GPUs are gone (on a GPU machine too)
    proc = subprocess.run([*SNAKEMAKE, "--cores", "2", "-d", str(work), "--configfile", str(cfg), "--config",
                           "use_gpu=True"], capture_output=True, text=True, env=env)
    errors = [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("lsrbench: error:")]
    assert proc.returncode != 0 and len(errors) == 1, proc.stderr[-3000:]
    assert errors[0].startswith(f"lsrbench: error: {cfg}: use_gpu: true, but node {socket.gethostname()} has no usable GPU")
    assert "torch.version.cuda" in errors[0] and "driver" in errors[0] and "R580" in errors[0]
    assert "Error in rule preflight:" in proc.stderr
    for k in ("1", "1e-30"):
        assert not (train_dir(work, cfg, "rand-roberta", k) / "model").exists()
    assert not list((work / "results").glob("runs/**/model"))


@pytest.mark.slow
def test_a_finished_cpu_run_switched_to_use_gpu_is_not_trained_again(micro_run, tmp_path):
    """use_gpu is how jobs run, not what they compute: a finished run asked again with use_gpu: true
    plans no preflight and no job (a finished training has no preflight among its inputs)."""
    from helpers.snakemake import copy_run, run_snakemake

    work = copy_run(micro_run, tmp_path / "work")
    proc = run_snakemake("-n", "--cores", "2", "-d", str(work), "--configfile", str(micro_run["config"]),
                         "--config", "use_gpu=True", check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Nothing to be done" in proc.stdout + proc.stderr, proc.stdout[-3000:]
    params = json.loads(next((work / "results" / "runs").glob("rand-roberta/k1/*/params.json")).read_text())
    assert not [p for p in params["made_from"] if "preflight" in p]
