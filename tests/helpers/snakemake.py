"""Running Snakemake as a user does (a subprocess on the repository's Snakefile), parsing its job
lists, and the micro run: the config of one whole DAG that the ``micro_run`` fixture of
conftest.py finishes once per session.

The micro run: a random 1-layer RoBERTa on a slice of Vaswani, k = 1 plus an absurd k = 1e-30
(the head and, tied to it, the input embeddings multiplied by 1e30) whose training loss is NaN
from step 1: the forced collapse, which must finish as a result while the other runs carry on.
Tests must not modify it: a test that tampers with artifacts works on a copy (:func:`copy_run`).

Where a run's outputs are comes from the package's one path builder
(:class:`lsrbench.dag.layout.Layout`, content-addressed folders) through :func:`layout` and
the ``*_dir`` helpers here: tests never spell a results path themselves.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from helpers.beir import write_beir
from helpers.paths import REPO
from helpers.preloaded import run_module
from lsrbench.dag.dryrun import job_counts, jobs_of  # noqa: F401 (the tests' parsers of a dry run)

SNAKEMAKE = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile")]
COLLAPSE_K = "1e-30"
RUN_TIMEOUT = 1800  # s: a stuck run fails its test instead of CI's whole session


def run_snakemake(*args, cwd=REPO, check=True) -> subprocess.CompletedProcess:
    """``snakemake ARGS`` on the repository's Snakefile, a process of its own forked from one that
    has imported snakemake and lsrbench (:mod:`helpers.preloaded`: a new interpreter's imports were
    about half of a dry run); raises with its output when it fails and ``check``."""
    proc = run_module([*SNAKEMAKE, *args], cwd=cwd, timeout=RUN_TIMEOUT)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def snakemake_in(work: Path, config: Path, *targets: str, dry: bool = False) -> subprocess.CompletedProcess:
    """``snakemake TARGETS --cores 2`` (``-n`` when ``dry``) in ``work`` under ``config``, never raising."""
    return run_snakemake(*targets, "--cores", "2", *(["-n"] if dry else []), "-d", str(work),
                         "--configfile", str(config), check=False)


def one_error(proc: subprocess.CompletedProcess) -> str:
    """The one ``lsrbench: error:`` line of a failed command without a traceback."""
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in output, output[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("lsrbench: error: ")]
    assert len(errors) == 1, output[-3000:]
    return errors[0]


def toy_inputs(tmp: Path) -> tuple[Path, Path]:
    """A toy dataset folder (``tmp/data/slice``, BEIR layout) and a stand-in model folder
    (``tmp/model``): what a micro config's ids are computed from when nothing runs."""
    data = write_beir(tmp / "data" / "slice", {f"d{i}": f"document {i}" for i in range(6)},
                      {"q1": "query one", "q2": "query two"}, [("q1", "d1", 1), ("q2", "d2", 1)])
    model = tmp / "model"
    model.mkdir()
    (model / "config.json").write_text('{"model_type": "roberta"}')
    (model / "model.safetensors").write_bytes(b"weights")
    return data, model


def micro_config_path(tmp: Path) -> Path:
    """Where :func:`micro_config` writes the config in ``tmp``."""
    return tmp / "config.yaml"


def micro_config(tmp: Path, slice_dir: Path, model_dir: Path, **recipe) -> Path:
    """Write the micro run's datasets file and config into ``tmp``; return the config path.
    ``recipe``: settings of its recipe other than the micro run's (a longer training, say)."""
    datasets = tmp / "datasets.yaml"
    datasets.write_text(yaml.safe_dump({"slice": {"source": "beir", "path": str(slice_dir)}}))
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    for key in ("claims", "auto_k"):
        config.pop(key, None)
    config.update(
        mirror=None,
        datasets_file=str(datasets),
        k_grid=[1, float(COLLAPSE_K)],
        backbones={"rand-roberta": {"model": str(model_dir), "label": "random RoBERTa 1L"}},
        training_data={"source": "pseudo_queries", "dataset": "slice", "seed": 1},
        evaluation={"datasets": ["slice"], "pool_depth": None, "top_k": 100,
                    "measures": ["nDCG@10", "RR@10", "R@100"], "encode_batch_size": 16,
                    # resumable index shards of 4 batches: the DAG runs the sharded path
                    "encode_shard_size": 64,
                    # a random model's documents activate ~all of its 600 terms: not what is tested
                    # (nor, by the index's collapse check, stopped: tests/index/test_collapse_check.py)
                    "collapse_max_active_share": 1.0, "index_max_active_share": 1.0},
    )
    config["recipe"].update(steps=3, batch_size=4, query_max_length=16, document_max_length=48, checkpoint_steps=2)
    config["recipe"].update(recipe)
    # no paper reference: its relative path would resolve against each command's own directory
    config["report"].update(columns=[{"name": "Slice nDCG@10", "datasets": ["slice"], "measure": "nDCG@10"}],
                            flops_datasets=["slice"], caption="micro run", reference=None)
    path = micro_config_path(tmp)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def layout(config_path: Path):
    """The :class:`~lsrbench.dag.layout.Layout` of a config file, with results paths relative to
    the working directory (``results/...``, as Snakemake and the manifests spell them)."""
    from lsrbench.config.layers import locate_config_paths
    from lsrbench.config.strict_yaml import load_yaml
    from lsrbench.dag.fingerprint import FileDigests
    from lsrbench.validation.config import check_config
    from lsrbench.dag.layout import Layout
    from lsrbench.stages import all_stages

    config = locate_config_paths(load_yaml(config_path), REPO)
    checked = check_config(config, str(config_path), files=False, mirror_must_exist=False)
    return Layout(checked, "results", FileDigests(None), stages=all_stages(), config_file=str(config_path),
                  config_files=[str(config_path)])


def _seed(seed) -> dict:
    """The seed of a run key: only in a config with several training seeds (recipe.seeds)."""
    return {} if seed is None else {"seed": seed}


def train_dir(work: Path, config_path: Path, run: str, k: str, seed=None) -> Path:
    """A run's training folder: model/, train_log.jsonl, status.json, train_provenance.json."""
    return work / layout(config_path).get("train", run=run, k=k, **_seed(seed)).folder


def index_dir(work: Path, config_path: Path, run: str, k: str, dataset: str, seed=None) -> Path:
    """A run's vectors of one dataset: docs.npz, queries.npz."""
    return work / layout(config_path).get("index", run=run, k=k, dataset=dataset, **_seed(seed)).folder


def eval_dir(work: Path, config_path: Path, run: str, k: str, dataset: str, seed=None) -> Path:
    """A run's evaluation on one dataset: run.trec, metrics.tsv, perquery.tsv, status.json, provenance.json."""
    return work / layout(config_path).get("evaluate", run=run, k=k, dataset=dataset, **_seed(seed)).folder


def norms_json(work: Path, config_path: Path, backbone: str) -> Path:
    return work / layout(config_path).get("norms", backbone=backbone).path("norms.json")


def outputs_of(work: Path, config_path: Path) -> list[Path]:
    """Every addressed output folder of a config (what ``lsrbench gc`` keeps)."""
    return [work / item.folder for item in layout(config_path).all()]


def copy_run(micro_run: dict, dest: Path) -> Path:
    """A copy of the finished run's workdir (with its .snakemake metadata); returns the copy's workdir."""
    shutil.copytree(micro_run["work"], dest, symlinks=True)
    return dest
