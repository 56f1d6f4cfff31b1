"""``lsrbench probe``'s snakemake command (lsrbench.ops.probe, issue 19): the probe's targets come
first (an option taking several values would swallow one written after it), and a config file or
mirror given relative to this folder is the same file for a snakemake run in another folder.
Through snakemake: tests/dag/test_probe_dag.py and the README's command in tests/test_readme.py."""

from __future__ import annotations

from helpers.paths import REPO
from lsrbench.ops.probe import probe_command, probe_targets


def test_the_targets_first_then_the_options_as_written_here(monkeypatch):
    monkeypatch.chdir(REPO)
    cmd = probe_command(["my.yaml", "more.yaml"], {"mirror": "../shared", "cache_dir": None}, None)
    assert cmd[:3] == probe_targets() == ["results/probe.md", "results/probe.json", "results/probe.png"]
    assert cmd[3:] == ["--snakefile", str(REPO / "Snakefile"), "-d", ".", "--cores", "all",
                       "--configfile", "my.yaml", "more.yaml", "--config", "mirror=../shared", "cache_dir="]


def test_relative_paths_are_made_absolute_for_a_run_in_another_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    cmd = probe_command(["my.yaml"], {"mirror": "../shared"}, "2", directory=str(tmp_path))
    assert cmd[cmd.index("-d") + 1] == str(tmp_path) and cmd[cmd.index("--cores") + 1] == "2"
    assert cmd[cmd.index("--configfile") + 1] == str(REPO / "my.yaml")
    assert cmd[-1] == f"mirror={(REPO / '../shared').resolve()}"
    assert "--configfile" not in probe_command(None, None, None, directory=str(tmp_path))
