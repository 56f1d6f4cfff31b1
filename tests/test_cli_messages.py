"""The CLI's messages as a user reads them (issue 23 item 11): a missing model folder, whether
``check-config`` checked each input, and the evaluated folder ``mteb-check --help`` names."""

from __future__ import annotations

import shutil
import subprocess

from helpers.cli import lsrbench
from helpers.paths import REPO, shared_or_skip


def _lsrbench(*args, cwd=REPO) -> subprocess.CompletedProcess:
    return lsrbench(*args, cwd=cwd)  # in this process (helpers.cli): what the command prints


def test_norm_of_a_missing_folder_says_it_does_not_exist(tmp_path):
    """Before: "Repo id must be in the form 'repo_name' or 'namespace/repo_name'" (the hub's words)."""
    for given in (str(tmp_path / "missing" / "folder"), "./missing", "a/b/c"):
        proc = _lsrbench("norm", "--model", given)
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr == f"lsrbench: error: command line: --model: model folder '{given}' does not exist\n"


def test_check_config_with_a_mirror_says_what_it_checked():
    """Before: no --mirror, and always "not checked on this machine" for every dataset."""
    shared = shared_or_skip("data", "vaswani")
    proc = _lsrbench("check-config", "--mirror", str(shared.parents[1]))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert f"checked on this machine: datasets vaswani ({shared})" in lines
    assert any(line.startswith("checked on this machine: backbones splade-tiny (") for line in lines)
    assert not any(line.startswith("not checked") for line in lines)
    without = _lsrbench("check-config").stdout.splitlines()
    assert "not checked on this machine: datasets vaswani (not on disk: their dataset jobs read them)" in without
    assert not any(line.startswith("checked on this machine") for line in without)


def test_check_config_with_a_mirror_reads_its_data(tmp_path):
    """"Checked" is true: a damaged corpus in the mirror fails with its file and line."""
    shared = shared_or_skip("data", "vaswani")
    data = tmp_path / "mirror" / "data" / "vaswani"
    shutil.copytree(shared, data)
    (data / "corpus.jsonl").write_text('{"_id": "1"\n', encoding="utf-8")
    shutil.copytree(shared.parents[1] / "models", tmp_path / "mirror" / "models", symlinks=True)
    proc = _lsrbench("check-config", "--mirror", str(tmp_path / "mirror"))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"lsrbench: error: {data / 'corpus.jsonl'}: line 1: malformed JSON")


def test_mteb_check_help_names_the_evaluated_folder():
    """Before: results/data/DATASET/eval, a folder that does not exist (the dataset's id is missing)."""
    from lsrbench.cli import build_parser
    from lsrbench.dag.folders import FOLDERS

    text = " ".join(build_parser()._subparsers._group_actions[0].choices["mteb-check"].format_help().split())  # noqa: SLF001
    assert "results/data/<dataset>/<id>/pool<depth>/eval" in text and "DATASET/eval" not in text
    assert FOLDERS["pool"] == "{results}/data/{dataset}/{data_id}/{pool_id}"  # pool_id: pool<depth>
