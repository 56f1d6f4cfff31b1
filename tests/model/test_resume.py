"""Resume: a training job killed with SIGKILL restarts from its last complete checkpoint and ends
bit-identical (every file of the model folder, and the per-step log) to an uninterrupted run with
the same seed, whichever checkpoint it resumes from, the last included (a job killed after its final
checkpoint, before its outputs: it resumes there and takes no step).

Every run is a separate Python process (the same environment, one thread), so the comparison is
between processes exactly as a restarted Snakemake job would see it. The kill is a real SIGKILL that
the training process sends itself at a chosen point: in the middle of an optimiser step (after the
checkpoint of step 4), and in the middle of writing the checkpoint of step 6 (after its weights,
before its RNG state), which leaves a partial ``checkpoint-6`` that must not be resumed from.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lsrbench.model.resume import CHECKPOINT_KEY, CHECKPOINT_LOG, prepare_checkpoints

DRIVER = r'''
import json, os, signal, sys
import transformers
from lsrbench.model.train import train_splade
from lsrbench.config.schema import with_defaults
from lsrbench.data.triplets import read_triplets

mode, model, triplets, out, ckpt = sys.argv[1:6]
recipe = with_defaults("recipe", dict(steps=6, batch_size=4, learning_rate=1e-3, warmup_steps=0.1, lambda_q=5e-5,
                                      lambda_d=3e-5, seed=42, query_max_length=16, document_max_length=48,
                                      checkpoint_steps=2))
calls = {"step": 0, "save": 0}
step, save = transformers.Trainer.training_step, transformers.Trainer._save_rng_state

def training_step(self, *a, **kw):
    calls["step"] += 1
    if mode == "kill-in-step" and calls["step"] == 5:
        os.kill(os.getpid(), signal.SIGKILL)   # during step 5: checkpoint-4 is the latest complete one
    if mode == "kill-early" and calls["step"] == 3:
        os.kill(os.getpid(), signal.SIGKILL)   # during step 3: checkpoint-2, the first, is the latest
    return step(self, *a, **kw)

import lsrbench.model.train as train_module
write_log = train_module.write_train_log

def write_train_log(*a, **kw):
    if mode == "kill-at-end":
        os.kill(os.getpid(), signal.SIGKILL)   # every step and checkpoint-6 done, no output written yet
    return write_log(*a, **kw)

train_module.write_train_log = write_train_log

def save_rng_state(self, *a, **kw):
    calls["save"] += 1
    if mode == "kill-in-save" and calls["save"] == 3:
        os.kill(os.getpid(), signal.SIGKILL)   # checkpoint-6 has weights and optimiser, not the rest
    return save(self, *a, **kw)

transformers.Trainer.training_step = training_step
transformers.Trainer._save_rng_state = save_rng_state
summary = train_splade(model, read_triplets(triplets), recipe, out + "/model", out + "/train_log.jsonl",
                       checkpoint_dir=None if ckpt == "-" else ckpt)
print("RESULT " + json.dumps({"summary": summary, "steps_run": calls["step"]}))
'''


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run([sys.executable, str(driver), *args], capture_output=True, text=True, env=env, timeout=300)


def _result(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


@pytest.fixture(scope="module")
def material(tmp_path_factory, vaswani_slice, tiny_roberta):
    from lsrbench.data.beir import load_beir_folder
    from lsrbench.data.triplets import pseudo_query_triplets, write_triplets

    root = tmp_path_factory.mktemp("resume")
    triplets = root / "triplets.jsonl"
    write_triplets(triplets, pseudo_query_triplets(load_beir_folder(vaswani_slice).corpus, 48, 1))
    reference = root / "uninterrupted"
    result = _result(_run(root, "plain", str(tiny_roberta), str(triplets), str(reference), "-"))
    assert result["summary"]["status"] == {"status": "ok"} and result["steps_run"] == 6
    return {"model": str(tiny_roberta), "triplets": str(triplets), "reference": reference}


@pytest.mark.parametrize("kill, resumed_step, partial", [("kill-early", 2, None), ("kill-in-step", 4, None),
                                                         ("kill-in-save", 4, "checkpoint-6"), ("kill-at-end", 6, None)])
def test_killed_training_resumes_bit_identical(tmp_path, material, kill, resumed_step, partial):
    out, ckpt = tmp_path / "run", tmp_path / "run" / "checkpoints"
    killed = _run(tmp_path, kill, material["model"], material["triplets"], str(out), str(ckpt))
    assert killed.returncode == -9, killed.stderr[-2000:]  # SIGKILL
    assert not (out / "model").exists() and not (out / "train_log.jsonl").exists()  # nothing half-written
    complete = sorted(p.name for p in ckpt.glob("checkpoint-*") if (p / CHECKPOINT_LOG).is_file())
    assert complete[-1] == f"checkpoint-{resumed_step}"
    if partial:
        assert (ckpt / partial).is_dir() and not (ckpt / partial / CHECKPOINT_LOG).exists()

    result = _result(_run(tmp_path, "resume", material["model"], material["triplets"], str(out), str(ckpt)))
    assert result["summary"]["resumed_from_step"] == resumed_step
    assert result["steps_run"] == 6 - resumed_step  # continued, not restarted from step 0
    assert result["summary"]["status"] == {"status": "ok"}

    ref = material["reference"]
    files = sorted(p.relative_to(ref) for p in (ref / "model").rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(out) for p in (out / "model").rglob("*") if p.is_file())
    for name in files:  # every file a straight run writes (similarity_fn_name "dot" in a resume from the last too)
        assert (out / name).read_bytes() == (ref / name).read_bytes(), name
    assert json.loads((out / "model/config_sentence_transformers.json").read_text())["similarity_fn_name"] == "dot"
    assert (out / "train_log.jsonl").read_text() == (ref / "train_log.jsonl").read_text()
    steps = [json.loads(line)["step"] for line in (out / "train_log.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3, 4, 5, 6]


def _fake_checkpoint(root: Path, step: int, complete: bool) -> Path:
    d = root / f"checkpoint-{step}"
    d.mkdir(parents=True)
    (d / "model.safetensors").write_bytes((2).to_bytes(8, "little") + b"{}")  # a whole, empty safetensors file
    if complete:
        (d / CHECKPOINT_LOG).write_text(json.dumps({"step": step}) + "\n")
    return d


def test_prepare_checkpoints_picks_latest_complete_and_drops_partial(tmp_path):
    root = tmp_path / "checkpoints"
    assert prepare_checkpoints(root, "key-a") is None  # first run: nothing to resume
    assert json.loads((root / CHECKPOINT_KEY).read_text()) == {"key": "key-a"}
    _fake_checkpoint(root, 2, True)
    _fake_checkpoint(root, 10, True)
    _fake_checkpoint(root, 12, False)  # killed while saving
    assert prepare_checkpoints(root, "key-a") == root / "checkpoint-10"
    assert not (root / "checkpoint-12").exists()


def _real_checkpoint(root: Path, step: int) -> Path:
    """A checkpoint folder with the kinds of file the trainer writes: safetensors weights, torch
    pickles (zip archives), the trainer's JSON state, and the completion mark."""
    import torch
    from safetensors.torch import save_file

    d = root / f"checkpoint-{step}"
    d.mkdir(parents=True)
    save_file({"w": torch.arange(64, dtype=torch.float32)}, str(d / "model.safetensors"))
    torch.save({"state": torch.ones(64)}, d / "optimizer.pt")
    (d / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    (d / CHECKPOINT_LOG).write_text(json.dumps({"step": step}) + "\n")
    return d


@pytest.mark.parametrize("damage", ["model.safetensors", "optimizer.pt", "trainer_state.json"])
def test_a_damaged_checkpoint_is_set_aside_and_the_one_before_resumed(tmp_path, capsys, damage):
    """A complete-looking checkpoint with one file cut short (half its bytes): renamed
    checkpoint-N.damaged (its bytes kept), the one before it is resumed, said in one line; with no
    whole one left, None (training restarts from step 0), said too."""
    root = tmp_path / "checkpoints"
    prepare_checkpoints(root, "key-a")
    _real_checkpoint(root, 2)
    latest = _real_checkpoint(root, 4)
    cut = latest / damage
    data = cut.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    assert prepare_checkpoints(root, "key-a") == root / "checkpoint-2"
    assert (root / "checkpoint-4.damaged" / damage).read_bytes() == data[: len(data) // 2]
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"lsrbench: note: {latest}: damaged checkpoint ({damage}: " + lines[0].split(f"({damage}: ", 1)[1]]
    assert lines[0].endswith("set aside as checkpoint-4.damaged; training resumes from checkpoint-2, the last whole one")
    (root / "checkpoint-2" / damage).write_bytes(b"")
    assert prepare_checkpoints(root, "key-a") is None
    assert capsys.readouterr().err.rstrip().endswith("no whole checkpoint is left: training restarts from step 0")
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == ["checkpoint-2.damaged", "checkpoint-4.damaged"]


def test_checkpoints_of_another_recipe_are_never_resumed(tmp_path):
    root = tmp_path / "checkpoints"
    prepare_checkpoints(root, "key-a")
    _fake_checkpoint(root, 4, True)
    assert prepare_checkpoints(root, "key-b") is None  # recipe/data/model changed: start over
    assert not (root / "checkpoint-4").exists()
    assert json.loads((root / CHECKPOINT_KEY).read_text()) == {"key": "key-b"}


def test_training_key_ignores_checkpoint_steps_only():
    from lsrbench.model.resume import training_key as _training_key

    trip = [{"query": "q", "positive": "p", "negative": "n"}]
    recipe = {"steps": 6, "learning_rate": 1e-3, "checkpoint_steps": 2}
    base = _training_key("m", trip, recipe, 4.0, "shared", 1.0, None)
    assert _training_key("m", trip, {**recipe, "checkpoint_steps": 100}, 4.0, "shared", 1.0, None) == base
    assert _training_key("m", trip, {**recipe, "learning_rate": 2e-3}, 4.0, "shared", 1.0, None) != base
    assert _training_key("m", trip, recipe, 8.0, "shared", 1.0, None) != base
    assert _training_key("m", [{**trip[0], "query": "other"}], recipe, 4.0, "shared", 1.0, None) != base
