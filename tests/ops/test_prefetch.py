"""lsrbench prefetch end to end on local sources only: a BEIR folder, a local hf repository, two
ir_datasets ids sharing one corpus, a hub model (snapshot_download served from a local folder), a
wheel, hf training triplets; then everything loads through the mirror with the sources gone."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
import subprocess
import sys

import pytest
import yaml

from helpers.beir import write_beir
from helpers.paths import REPO
from helpers.snakemake import layout
from lsrbench.config.strict_yaml import load_yaml
from lsrbench.validation.config import check_config
from lsrbench.errors import InputError
from helpers.miniatures import register_ir_datasets, triplet_rows, write_hf_repo, write_nano_repo, write_tiny_mlm, write_wheel

REV = "0123456789abcdef0123456789abcdef01234567"


def write_config(tmp, datasets: dict, backbones: dict, training_data: dict, evaluated: list[str]):
    (tmp / "datasets.yaml").write_text(yaml.safe_dump(datasets))
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    for key in ("claims", "auto_k"):
        config.pop(key, None)
    config.update(datasets_file=str(tmp / "datasets.yaml"), cache_dir=str(tmp / "cache"), backbones=backbones,
                  training_data=training_data, k_grid=[1])
    config["recipe"]["batch_size"] = 4  # 5 triplets fill a batch (a batch may not repeat a text)
    config["evaluation"].update(datasets=evaluated)
    config["report"].update(columns=[{"name": "x", "datasets": evaluated[:1], "measure": "nDCG@10"}],
                            flops_datasets=[])
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    pytest.importorskip("ir_datasets")
    tmp = tmp_path_factory.mktemp("sources")
    beir = write_beir(tmp / "beirmini", {"d1": "cats purr", "d2": "dogs bark"}, {"q1": "cats"}, [("q1", "d1", 1)])
    nano = write_nano_repo(tmp / "NanoMini")
    base = register_ir_datasets(tmp / "ir", "0\tcats purr\n1\tdogs bark\n2\tbirds sing\n", "10\tcats\n11\tdogs\n",
                                qrels={"dev": "10 0 0 1\n", "dl19": "10 0 0 3\n11 0 1 2\n"})
    train = write_hf_repo(tmp / "msmarco-bm25", {"triplet": triplet_rows(12)})
    write_tiny_mlm(tmp / "hub" / "org" / "tiny-mlm")  # what the hub serves for org/tiny-mlm
    wheel_model = write_tiny_mlm(tmp / "wheel-src")
    fetch = write_wheel(tmp / "tiny_model_pkg-0.0.1-py3-none-any.whl", wheel_model)
    datasets = {
        "beirmini": {"source": "beir", "path": str(beir)},
        "nano": {"source": "hf", "repo": str(nano), "revision": None, "unknown_docs": "keep", "empty_queries": "drop"},
        "dev": {"source": "ir_datasets", "id": f"{base}/dev"},
        "dl19": {"source": "ir_datasets", "id": f"{base}/dl19", "measures": ["nDCG@10", "R(rel=2)@1000"]},
    }
    backbones = {
        "hubby": {"model": "org/tiny-mlm", "revision": REV},
        "hubby-x10": {"model": "org/tiny-mlm", "revision": REV, "head_scale": 10, "synthetic": True},
        "wheely": {"model": "tiny-wheel-model", "fetch": fetch},
        "local": {"model": str(wheel_model)},
    }
    td = {"source": "hf", "repo": str(train), "subset": "triplet", "revision": None, "n_triplets": 5, "seed": 3}
    config_file = write_config(tmp, datasets, backbones, td, ["beirmini", "nano", "dev", "dl19"])
    return {"tmp": tmp, "config_file": config_file, "hub": tmp / "hub", "nano": nano, "train": train}


@pytest.fixture
def fake_hub(sources, monkeypatch):
    """huggingface_hub.snapshot_download served from a local folder (records its calls)."""
    import huggingface_hub

    calls = []

    def snapshot_download(repo_id, revision=None, local_dir=None, ignore_patterns=None, **kw):
        calls.append({"repo_id": repo_id, "revision": revision, "local_dir": local_dir})
        shutil.copytree(sources["hub"] / repo_id, local_dir, dirs_exist_ok=True)
        # what huggingface_hub writes beside each file of a local_dir download: commit, etag, time
        meta = Path(local_dir) / ".cache" / "huggingface" / "download"
        meta.mkdir(parents=True, exist_ok=True)
        for f in Path(local_dir).iterdir():
            if f.is_file():
                (meta / f"{f.name}.metadata").write_text(f"{revision}\n\"etag\"\n1700000000.0\n")
        return local_dir

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    return calls


def test_prefetch_end_to_end_then_offline(sources, fake_hub, tmp_path, monkeypatch):
    from lsrbench.data import hf, ir_datasets_source, training_sources, triplets
    from lsrbench.data.sources import resolve_dataset
    from lsrbench.model.checkpoint import load_mlm, resolve_model
    from lsrbench.ops.prefetch import prefetch

    config_file = str(sources["config_file"])
    config = check_config(load_yaml(config_file), config_file)
    mirror = tmp_path / "mirror"
    lines = []
    records = prefetch(config, config_file, mirror, report=lines.append)

    # models: the hub id once (two backbones share it) at its pinned revision, the wheel extracted,
    # the local folder left in place
    assert fake_hub == [{"repo_id": "org/tiny-mlm", "revision": REV, "local_dir": str(mirror / "models/org/tiny-mlm")}]
    assert (mirror / "models/org/tiny-mlm/config.json").is_file()
    assert (mirror / "models/tiny-wheel-model/model.safetensors").is_file()
    hub_record = next(r for r in records if r.get("backbone") == "hubby")
    assert hub_record["revision"] == hub_record["resolved_revision"] == REV
    status = {r.get("backbone") or r["name"]: r["status"] for r in records}
    assert status["local"] == "local folder, used in place" and "hubby-x10" not in status
    # datasets in BEIR layout; dev and dl19 share one stored corpus file
    for name in ("beirmini", "nano", "dev", "dl19"):
        assert (mirror / "data" / name / "qrels" / "test.tsv").is_file(), name
    assert os.path.samefile(mirror / "data/dev/corpus.jsonl", mirror / "data/dl19/corpus.jsonl")
    assert len(list((mirror / "data/.corpora").iterdir())) == 3  # beirmini, nano, and one for dev + dl19
    # training triplets drawn once, with their source record
    tdir = mirror / "data" / "msmarco-bm25--triplet"
    assert len(triplets.read_triplets(tdir / "triplets.jsonl")) == 5
    assert json.loads((tdir / "source.json").read_text())["n"] == 5
    assert json.loads((mirror / "prefetch.json").read_text())["items"] == records
    assert len(lines) == len(records) and all("->" in line for line in lines)

    # what a compute node sees: no hub, no ir_datasets, no datasets downloads
    direct = {n: resolve_dataset(n, config["_datasets"][n], None, config["datasets_file"], config["cache_dir"],
                                 unknown_docs=config["_datasets"][n].get("unknown_docs", "error"))
              for n in ("nano", "dev", "dl19")}
    direct_triplets = triplets.hf_triplets(str(sources["train"]), subset="triplet", revision=None, n=5, seed=3,
                                           cache_dir=tmp_path / "c")
    with monkeypatch.context() as offline:
        offline.setenv("HF_HUB_OFFLINE", "1")
        fail = lambda *a, **k: pytest.fail("a source was read instead of the mirror")  # noqa: E731
        offline.setattr(hf, "load_hf_dataset", fail)
        offline.setattr(ir_datasets_source, "load_ir_datasets", fail)
        offline.setattr(training_sources, "hf_triplets", fail)
        for name, ds in direct.items():
            entry = config["_datasets"][name]
            got = resolve_dataset(name, entry, mirror, config["datasets_file"], config["cache_dir"],
                                  unknown_docs=entry.get("unknown_docs", "error"))
            assert (got.corpus, got.queries, got.qrels) == (ds.corpus, ds.queries, ds.qrels), name
        out = training_sources.build_triplets(config["training_data"], 5, 3, tmp_path / "t.jsonl", mirror=mirror)
        assert triplets.read_triplets(out) == direct_triplets
        for name in ("hubby", "wheely"):
            path = resolve_model(config["backbones"][name], str(mirror), tmp_path / "no-cache", config_file, name)
            assert path.startswith(str(mirror / "models"))
            load_mlm(path, config_file, f"backbones.{name}.model", revision=config["backbones"][name].get("revision"))

    # a second prefetch keeps what is there
    again = prefetch(config, config_file, mirror, report=lambda line: None)
    assert {r["status"] for r in again if r["kind"] != "model"} == {"already in the mirror"}


def test_cli_prefetch_and_errors(sources, tmp_path, capsys):
    from lsrbench.cli import main

    small = yaml.safe_load(sources["config_file"].read_text())
    small.update(backbones={"local": {"model": str(sources["tmp"] / "wheel-src")}},
                 training_data={"source": "pseudo_queries", "dataset": "beirmini", "seed": 1})
    small["evaluation"]["datasets"] = ["beirmini"]
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(small))
    assert main(["prefetch", "--configfile", str(path), "--mirror", str(tmp_path / "m")]) == 0
    out = capsys.readouterr().out
    assert "dataset beirmini: written" in out and "--config mirror=" in out
    assert (tmp_path / "m/data/beirmini/corpus.jsonl").is_file()

    small["training_data"] = {"source": "hf", "repo": "sentence-transformers/msmarco-bm25", "revision": "main"}
    path.write_text(yaml.safe_dump(small))
    assert main(["prefetch", "--configfile", str(path), "--mirror", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"lsrbench: error: {path}: training_data.revision: ") and "\n" not in err


def test_prefetch_needs_a_mirror(sources):
    from lsrbench.ops.prefetch import prefetch

    config = check_config(load_yaml(sources["config_file"]), str(sources["config_file"]))
    with pytest.raises(InputError, match="mirror: prefetch needs a mirror folder"):
        prefetch(config, str(sources["config_file"]), None)


def test_snakemake_prefetch_target(sources, tmp_path):
    """The `prefetch` rule runs lsrbench prefetch into --config mirror=DIR; the triplets of an hf
    source need no dataset job."""
    small = yaml.safe_load(sources["config_file"].read_text())
    small.update(backbones={"local": {"model": str(sources["tmp"] / "wheel-src")}})
    small["training_data"].update(repo=str(sources["train"]))
    small["evaluation"]["datasets"] = ["beirmini"]
    small["report"]["columns"][0]["datasets"] = ["beirmini"]
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(small))
    snakemake = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--cores", "1",
                 "-d", str(tmp_path / "work")]
    mirror = tmp_path / "mirror"
    proc = subprocess.run([*snakemake, "prefetch", "--configfile", str(path), "--config", f"mirror={mirror}"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (mirror / "data/beirmini/corpus.jsonl").is_file()
    assert (mirror / "data/msmarco-bm25--triplet/triplets.jsonl").is_file()
    log = (tmp_path / "work/results/logs/prefetch.log").read_text()
    assert "training msmarco-bm25--triplet: written" in log
    triplets = layout(path).get("triplets").path("triplets.jsonl")
    proc = subprocess.run([*snakemake, "-n", triplets, "--configfile", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "rule triplets:" in proc.stdout and "rule dataset:" not in proc.stdout


def test_resolved_revision_of_a_hub_cache_and_a_mirror_folder(tmp_path, monkeypatch):
    """The commit recorded in a run's provenance: from the hub cache transformers loads a hub id
    from (offline, as a compute node sees it), from a prefetch mirror folder, none for a plain folder."""
    from lsrbench.model.checkpoint import resolved_revision

    snap = tmp_path / "hf" / "hub" / "models--org--tiny" / "snapshots" / REV
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    (tmp_path / "hf" / "hub" / "models--org--tiny" / "refs").mkdir()
    (tmp_path / "hf" / "hub" / "models--org--tiny" / "refs" / "main").write_text(REV)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    assert resolved_revision("org/tiny") == REV
    assert resolved_revision("org/tiny", REV) == REV
    assert resolved_revision("org/absent") is None
    folder = tmp_path / "mirror" / "org" / "tiny"
    (folder / ".cache" / "huggingface" / "download").mkdir(parents=True)
    assert resolved_revision(str(folder)) is None
    (folder / ".cache" / "huggingface" / "download" / "config.json.metadata").write_text(f"{REV}\n\"e\"\n1.0\n")
    assert resolved_revision(str(folder)) == REV


def test_dry_run_lists_what_the_mirror_lacks_and_fetches_nothing(sources, fake_hub, tmp_path, capsys):
    from lsrbench.cli import main

    small = yaml.safe_load(sources["config_file"].read_text())
    small.update(backbones={"hubby": {"model": "org/tiny-mlm", "revision": REV}},
                 training_data={"source": "pseudo_queries", "dataset": "beirmini", "seed": 1})
    small["evaluation"]["datasets"] = ["beirmini"]
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(small))
    mirror = tmp_path / "m"
    assert main(["prefetch", "--configfile", str(path), "--mirror", str(mirror), "--dry-run"]) == 1
    out = capsys.readouterr().out
    assert "model hubby: missing" in out and "dataset beirmini: missing" in out and "2 of 2 items missing" in out
    assert not mirror.exists() and fake_hub == []
    assert main(["prefetch", "--configfile", str(path), "--mirror", str(mirror)]) == 0
    capsys.readouterr()
    assert main(["prefetch", "--configfile", str(path), "--mirror", str(mirror), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "model hubby: in the mirror" in out and "0 of 2 items missing" in out
