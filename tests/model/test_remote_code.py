"""Remote code runs only pinned (lsrbench.model.remote_code): a hub id with trust_remote_code is
refused before any job unless a folder holding its code is there; prefetch downloads the code at
code_revision beside the checkpoint and points auto_map at it; a mirror made so loads offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from helpers.miniatures import write_tiny_mlm
from helpers.paths import REPO
from lsrbench.validation.config import check_config
from lsrbench.errors import InputError
from lsrbench.model.remote_code import pin_remote_code

COMMIT = "40ced75c3017eb27626c9d4ea981bde21a2662f4"


def config_with(tmp_path, entry: dict, mirror=None) -> dict:
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["backbones"] = {"custom": entry}
    config["mirror"] = str(mirror) if mirror else None
    config["datasets_file"] = str(REPO / "config" / "datasets.yaml")
    config.pop("claims", None)
    config.pop("auto_k", None)
    return config


def test_hub_remote_code_without_a_folder_is_refused(tmp_path):
    entry = {"model": "org/custom-mlm", "revision": "0" * 40, "trust_remote_code": True, "code_revision": COMMIT}
    with pytest.raises(InputError) as err:
        check_config(config_with(tmp_path, entry), "c.yaml", files=False)
    line = str(err.value)
    assert line.startswith("c.yaml: backbones.custom.trust_remote_code: 'org/custom-mlm' would run its hub code")
    assert "\n" not in line
    with pytest.raises(InputError, match=r"backbones\.custom\.code_revision: 'main' is not a commit"):
        check_config(config_with(tmp_path, {**entry, "code_revision": "main"}), "c.yaml", files=False)
    # what prefetch checks (mirror_must_exist=False): the commit to fetch the code at
    with pytest.raises(InputError, match="code_revision.*needs the commit"):
        check_config(config_with(tmp_path, {k: v for k, v in entry.items() if k != "code_revision"}), "c.yaml",
                     files=False, mirror_must_exist=False)
    check_config(config_with(tmp_path, entry), "c.yaml", files=False, mirror_must_exist=False)
    # a mirror copy is a folder holding its code: accepted
    write_tiny_mlm(tmp_path / "mirror" / "models" / "org" / "custom-mlm")
    check_config(config_with(tmp_path, entry, tmp_path / "mirror"), "c.yaml", files=False)


def test_pin_remote_code_fetches_the_modules_at_the_commit_and_points_auto_map_at_them(tmp_path, monkeypatch):
    import huggingface_hub

    folder = write_tiny_mlm(tmp_path / "ckpt")
    config = json.loads((folder / "config.json").read_text())
    config["auto_map"] = {"AutoConfig": "Org/code--configuration.CustomConfig",
                          "AutoModelForMaskedLM": "Org/code--modeling.CustomForMaskedLM"}
    (folder / "config.json").write_text(json.dumps(config))
    calls = []

    def hf_hub_download(repo_id, filename, revision=None, local_dir=None, **kw):
        calls.append((repo_id, filename, revision))
        path = Path(local_dir) / filename
        path.write_text(f"# {repo_id}@{revision}\n")
        return str(path)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", hf_hub_download)
    fetched = pin_remote_code(folder, COMMIT, "org/custom-mlm")
    assert calls == [("Org/code", "configuration.py", COMMIT), ("Org/code", "modeling.py", COMMIT)]
    assert [f["file"] for f in fetched] == ["configuration.py", "modeling.py"]
    assert json.loads((folder / "config.json").read_text())["auto_map"] == {
        "AutoConfig": "configuration.CustomConfig", "AutoModelForMaskedLM": "modeling.CustomForMaskedLM"}
    assert (folder / "modeling.py").read_text() == f"# Org/code@{COMMIT}\n"
    assert pin_remote_code(folder, COMMIT, "org/custom-mlm") == [] and len(calls) == 2  # already pinned
