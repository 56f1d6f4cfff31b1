"""Reliability of a whole run (issue 6), on the shared finished micro run (tests/micro_run.py):
a forced collapse is a result, manifests hash every artifact, ``lsrbench verify`` names tampered
files, nothing temporary is left behind, and config edits re-run exactly the affected jobs."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from helpers.snakemake import COLLAPSE_K, copy_run, eval_dir, index_dir, job_counts, layout, run_snakemake, train_dir

pytestmark = pytest.mark.slow


def _train(work: Path, micro_run: dict, k: str) -> Path:
    return train_dir(work, micro_run["config"], "rand-roberta", k)


def _eval(work: Path, micro_run: dict, k: str) -> Path:
    return eval_dir(work, micro_run["config"], "rand-roberta", k, "slice")


@pytest.mark.drift  # the micro DAG through snakemake, on every release envs/drift.py tries
def test_forced_collapse_is_a_result_and_other_runs_continue(micro_run):
    res, work = micro_run["results"], micro_run["work"]
    trained = json.loads((_train(work, micro_run, COLLAPSE_K) / "status.json").read_text())
    assert trained["status"].startswith("collapsed: ")
    assert trained["step"] == 1 and trained["last_finite_loss"] is None  # NaN from the very first step
    assert trained["model_step"] == 0 and trained["model_finite"] is False
    evaluated = json.loads((_eval(work, micro_run, COLLAPSE_K) / "status.json").read_text())
    assert evaluated["collapsed"] is True and evaluated["status"].startswith("collapsed: non-finite training loss")
    assert "all-zero document vectors" in evaluated["reasons"]
    for k in ("1",):
        assert json.loads((_train(work, micro_run, k) / "status.json").read_text())["status"] == "ok"
        assert json.loads((_eval(work, micro_run, k) / "status.json").read_text())["status"] == "ok"

    metrics = pd.read_csv(res / "metrics.csv", dtype={"k": str})
    assert list(metrics.columns) == ["backbone", "k", "dataset", "measure", "value"]
    assert metrics["value"].map(math.isfinite).all()
    runs = metrics[metrics["backbone"] == "rand-roberta"]
    flag = runs[runs["measure"] == "collapsed"].set_index("k")["value"].to_dict()
    assert flag == {"1": 0.0, COLLAPSE_K: 1.0}
    # the collapsed run still has every metric row (all-zero vectors retrieve nothing)
    collapsed = runs[runs["k"] == COLLAPSE_K].set_index("measure")["value"]
    assert collapsed["nDCG@10"] == 0.0 and collapsed["FLOPs"] == 0.0
    assert set(collapsed.index) == set(runs[runs["k"] == "1"]["measure"])


def test_manifests_hash_every_input_and_output(micro_run):
    from lsrbench.dag.evaluated import eval_dir
    from lsrbench.hashing import sha256_file

    work = micro_run["work"]
    paths = layout(micro_run["config"])
    key = {"run": "rand-roberta", "k": "1"}
    train, index, evaluate = (paths.get("train", **key), paths.get("index", **key, dataset="slice"),
                              paths.get("evaluate", **key, dataset="slice"))
    prov = json.loads((work / train.path("train_provenance.json")).read_text())
    for key in ("config_hash", "packages", "git_commit", "seed", "device", "python"):
        assert key in prov
    assert prov["seed"] == 42 and prov["packages"]["torch"] and prov["config_hash"] == train.sha256
    ins, outs = prov["artifacts"]["inputs"], prov["artifacts"]["outputs"]
    assert (paths.get("norms", backbone="rand-roberta").path("norms.json") in ins
            and paths.get("triplets").path("triplets.jsonl") in ins)
    assert any(p.endswith("model.safetensors") and "tiny_roberta" in p for p in ins)  # the backbone itself
    for name in ("model/model.safetensors", "model/modules.json", "train_log.jsonl", "status.json"):
        assert train.path(name) in outs
    for rel, info in outs.items():
        assert sha256_file(work / rel) == info["sha256"]

    ev = json.loads((work / evaluate.path("provenance.json")).read_text())
    assert set(ev["artifacts"]["outputs"]) == {evaluate.path(n) for n in
                                               ("run.trec", "metrics.tsv", "perquery.tsv", "status.json")}
    assert {index.path("docs.npz"), index.path("queries.npz"), train.path("status.json"),
            eval_dir(paths, "slice") + "/corpus.jsonl"} <= set(ev["artifacts"]["inputs"])
    # every addressed folder says what its id stands for
    params = json.loads((work / evaluate.path("params.json")).read_text())
    assert params["id"] == evaluate.id and params["identity"]["queries"] == index.id


def _verify(results: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lsrbench.cli", "verify", "--results", str(results)], capture_output=True, text=True)


@pytest.mark.drift
def test_verify_passes_on_the_finished_run(micro_run):
    proc = _verify(micro_run["results"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith(": ok") and "Traceback" not in proc.stderr


def test_verify_names_truncated_and_modified_artifacts(micro_run, tmp_path):
    work = copy_run(micro_run, tmp_path / "work")
    res = work / "results"
    docs = index_dir(work, micro_run["config"], "rand-roberta", "1", "slice") / "docs.npz"
    docs.write_bytes(docs.read_bytes()[:100])  # truncated
    model = _train(work, micro_run, COLLAPSE_K) / "model" / "model.safetensors"
    data = bytearray(model.read_bytes())
    data[-1] ^= 1  # one bit of one weight
    model.write_bytes(bytes(data))
    metrics = (res / "metrics.csv").read_text().splitlines()
    i = next(i for i, line in enumerate(metrics) if line.startswith("BM25,-,slice,nDCG@10,"))
    metrics[i] = "BM25,-,slice,nDCG@10,0.999"  # a number no run produced
    (res / "metrics.csv").write_text("\n".join(metrics) + "\n")

    proc = _verify(res)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert any(str(docs) in line and "truncated" in line for line in lines)
    assert any(str(model) in line and "modified" in line for line in lines)
    assert any(f"metrics.csv: line {i + 1}: nDCG@10 = 0.999" in line for line in lines)
    # the truncated docs.npz leaves the k1 metrics without a sound manifest: its rows are untraceable
    assert any("no manifest-backed metrics.tsv for backbone rand-roberta, k 1," in line for line in lines)


def test_no_temporaries_or_checkpoints_left(micro_run):
    res = micro_run["results"]
    assert not list(res.rglob(".*.tmp-*")) and not list(res.rglob("checkpoints"))


def test_results_have_the_permissions_the_umask_gives(micro_run):
    """Issue 23.4: every file and folder of a finished run as a plain write under the umask the run
    had (this process's, inherited by snakemake): readable by colleagues on a shared filesystem
    when the umask allows it, never tempfile's private 0600 / 0700."""
    import os
    import stat

    umask = os.umask(0)
    os.umask(umask)
    wrong = {str(p.relative_to(micro_run["work"])): oct(stat.S_IMODE(p.stat().st_mode))
             for p in micro_run["results"].rglob("*")
             if stat.S_IMODE(p.stat().st_mode) != (0o777 if p.is_dir() else 0o666) & ~umask}
    assert not wrong, f"umask {umask:03o}: {dict(list(wrong.items())[:10])} ({len(wrong)} in all)"


def _edit(micro_run: dict, edit, tmp_path: Path) -> dict[str, int]:
    """Dry-run the finished run under an edited copy of its config (never the shared file, which
    other workers' tests read meanwhile); return the planned job counts."""
    config = yaml.safe_load(micro_run["config"].read_text())
    edit(config)
    path = tmp_path / "edited.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    out = run_snakemake("-n", "--cores", "1", "-d", str(micro_run["work"]), "--configfile", str(path)).stdout
    return {k: v for k, v in job_counts(out).items() if k not in ("all", "total")}


REPORT_RULES = {"config_snapshot", "collect", "chance", "table1", "tradeoff", "norms_report", "table_beir", "loss_curves", "claims",
                "html_table1", "html_table_beir", "html_norms", "html_claims"}


@pytest.mark.parametrize("edit, expected", [
    (lambda c: None, {}),
    # how often checkpoints are saved changes no result: nothing re-runs
    (lambda c: c["recipe"].update(checkpoint_steps=1), {}),
    # nor does reporting to TensorBoard (issue 23.8): a finished run does not re-train for it
    (lambda c: c["recipe"].update(report_to=["tensorboard"]), {}),
    # nor does the index stage's shard size (docs.npz is the same file whatever it is)
    (lambda c: c["evaluation"].update(encode_shard_size=32), {}),
    # a recipe value: every run re-trains, re-indexes, re-evaluates; data and norms are kept
    (lambda c: c["recipe"].update(learning_rate=3e-5), {"train": 2, "index": 2, "evaluate": 2}),
    # evaluation values: evaluation only (top_k also for the BM25 reference)
    (lambda c: c["evaluation"].update(top_k=200), {"evaluate": 2, "bm25": 1}),  # not below R@100
    (lambda c: c["evaluation"].update(collapse_max_active_share=0.5), {"evaluate": 2}),
    # evaluation token lengths: re-encode and re-evaluate, never re-train
    (lambda c: c["evaluation"].update(query_max_length=32), {"index": 2, "evaluate": 2}),
    # the BM25 reference row's settings: that row only
    (lambda c: c["report"].update(bm25_settings={"k1": 1.2}), {"bm25": 1}),
    # a new k: only the new run's jobs
    (lambda c: c.update(k_grid=c["k_grid"] + [2]), {"train": 1, "index": 1, "evaluate": 1}),
    # report options (and a backbone's label, shown only in reports): report rules only
    (lambda c: c["report"].update(caption="another caption"), None),
    (lambda c: c["backbones"]["rand-roberta"].update(label="another label"), None),
])
def test_config_edits_rerun_exactly_the_affected_jobs(micro_run, edit, expected, tmp_path):
    counts = _edit(micro_run, edit, tmp_path)
    if expected is None:
        assert counts and set(counts) <= REPORT_RULES, counts
    else:
        assert {k: v for k, v in counts.items() if k not in REPORT_RULES} == expected, counts


def test_a_run_trained_with_tensorboard_writes_its_curves_beside_its_log(micro_run, tmp_path):
    """``recipe.report_to: [tensorboard]`` through snakemake: a new run (k = 2) trains with it and
    its train folder holds the event file, next to train.log, with every step's loss of
    train_log.jsonl; the finished runs are not touched."""
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    config = yaml.safe_load(micro_run["config"].read_text())
    config["k_grid"] = config["k_grid"] + [2]
    config["recipe"]["report_to"] = ["tensorboard"]
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    work = copy_run(micro_run, tmp_path / "work")
    folder = train_dir(work, path, "rand-roberta", "2")
    finished = train_dir(work, micro_run["config"], "rand-roberta", "1")
    before = sorted(p.relative_to(finished) for p in finished.rglob("*"))
    run_snakemake(str((folder / "train_log.jsonl").relative_to(work)), "--cores", "1", "-d", str(work),
                  "--configfile", str(path))
    assert (folder / "train.log").is_file()
    (events,) = (folder / "tensorboard").glob("events.out.tfevents.*")
    acc = EventAccumulator(str(events))
    acc.Reload()
    logged = {e.step: e.value for e in acc.Scalars("train/loss")}
    rows = [json.loads(line) for line in (folder / "train_log.jsonl").read_text().splitlines()]
    assert sorted(logged) == [r["step"] for r in rows] == [1, 2, 3]
    assert all(logged[r["step"]] == pytest.approx(r["loss"], rel=1e-5) for r in rows)
    assert sorted(p.relative_to(finished) for p in finished.rglob("*")) == before  # no tensorboard/ added there


def test_bad_artifact_during_a_real_run_fails_one_job_and_keeps_finished_outputs(micro_run, tmp_path):
    """A truncated docs.npz (say, a disk that filled up under another tool): Snakemake re-runs the
    evaluate job that reads it, which fails with one line naming the file; every other finished
    output stays, and the other runs' jobs are not touched."""
    work = copy_run(micro_run, tmp_path / "work")
    res = work / "results"
    docs = index_dir(work, micro_run["config"], "rand-roberta", "1", "slice") / "docs.npz"
    docs.write_bytes(docs.read_bytes()[:100])
    evaluated = _eval(work, micro_run, "1")
    keep = {p: p.read_bytes() for p in res.rglob("*") if p.is_file() and evaluated not in p.parents}
    proc = run_snakemake("--cores", "1", "-d", str(work), "--configfile", str(micro_run["config"]), check=False)
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if line.startswith("lsrbench: error: ")]
    assert errors == [f"lsrbench: error: {docs.relative_to(work)}: not a readable .npz file (File is not a zip file)"] \
        or (len(errors) == 1 and str(docs.relative_to(work)) in errors[0]), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    for path, data in keep.items():
        if path.name not in ("metrics.csv", "metrics.sources.json") and "logs" not in path.parts:
            assert path.read_bytes() == data, path
    assert (res / "metrics.csv").read_bytes() == keep[res / "metrics.csv"]  # the report was not re-made
