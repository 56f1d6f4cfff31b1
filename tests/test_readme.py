"""Every command of README.md, run as a new user runs it (``pytest -m slow``).

The ```bash blocks of the README are read line by line; each command is run as written, from a
clean copy of the repository (its tracked files, with ``../shared`` beside it):

* ``snakemake`` commands that would train are dry runs (``-n`` added), and what each plans is
  checked against what the README says it builds;
* ``snakemake --report`` and ``lsrbench verify`` run for real on the finished micro workflow
  (the only finished run the tests have; its config is added with ``--configfile``);
* ``lsrbench expected`` runs as written on a results folder holding the tiny default as this
  repository recorded it (Table 1 written by the report code from its metrics);
* ``lsrbench check-config`` runs as written, on the ``my.yaml`` the README's YAML block defines;
* ``lsrbench probe`` runs as written plus ``--dry-run`` there: it plans the probe of every backbone
  and its report, and never a training;
* install and test commands are what CI runs (``.ci/run``); only the names they use are checked;
* ``lsrbench --version`` runs as written: the libraries against the lock;
* ``lsrbench preflight`` runs as written on the paper's config: it names what is missing here (on a
  machine without a GPU, the GPU) and exits 1.

A command that fits none of these fails the test: none goes unchecked. And all of them once more in
the README's order, in one clone that already holds a finished run: none is refused for what an
earlier one left.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import REPO, SHARED
from helpers.snakemake import job_counts, jobs_of

pytestmark = pytest.mark.slow

README = REPO / "README.md"
REPORT_RULES = {"claims", "tradeoff", "loss_curves", "norms_report", "table_beir", "html_table1", "html_norms",
                "html_claims", "html_table_beir"}


def blocks(lang: str) -> list[tuple[str, str]]:
    """``(text before the block, block)`` for every fenced block of a language, in order."""
    text = README.read_text(encoding="utf-8")
    return [(m["before"], m["code"]) for m in
            re.finditer(rf"(?P<before>(?:(?!```).)*?)```{lang}\n(?P<code>.*?)```", text, re.S)]


def readme_commands() -> list[str]:
    out = []
    for _, code in blocks("bash"):
        for line in code.splitlines():
            command = re.sub(r"\s+#.*$", "", line).strip()  # a trailing comment is not part of it
            if command and not command.startswith("#"):
                out.append(command)
    return out


def kind(command: str) -> str:
    words = shlex.split(command)
    if words[0] in ("python3", "pip") or words[:2] == [".", ".venv/bin/activate"]:
        return "install"
    if words[0] == "pytest":
        return "test"
    if words[0] == "snakemake":
        return "report" if "--report" in words else "dry-run"
    if words[:2] == ["lsrbench", "verify"]:
        return "verify"
    if words[:2] == ["lsrbench", "expected"]:
        return "expected"
    if words[:2] == ["lsrbench", "check-config"]:
        return "check-config"
    if words[:2] == ["lsrbench", "probe"]:
        return "probe"
    if words == ["lsrbench", "--version"]:
        return "version"
    if words[:2] == ["lsrbench", "preflight"]:
        return "preflight"
    return "unknown"


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """The repository's tracked files (a fresh clone, with this checkout's changes), ../shared beside it."""
    return fresh_clone(tmp_path_factory.mktemp("fresh"))


def fresh_clone(root: Path) -> Path:
    """``root/lsrbench``: the repository's tracked files and the README's my.yaml; ``root/shared``."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        src = REPO / name
        if src.is_file():
            (root / "lsrbench" / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, root / "lsrbench" / name, follow_symlinks=False)
    if SHARED.is_dir():
        (root / "shared").symlink_to(SHARED)
    for _, code in blocks("yaml"):  # the config file the README asks the reader to write
        if code.startswith("base:"):
            (root / "lsrbench" / "my.yaml").write_text(code, encoding="utf-8")
    return root / "lsrbench"


def run(command: str, cwd: Path, extra=()) -> subprocess.CompletedProcess:
    words = shlex.split(command)
    exe = {"snakemake": [sys.executable, "-m", "snakemake"], "lsrbench": [sys.executable, "-m", "lsrbench"]}[words[0]]
    return subprocess.run([*exe, *words[1:], *extra], cwd=cwd, capture_output=True, text=True, timeout=900)


def test_every_readme_command_is_known():
    commands = readme_commands()
    assert len(commands) >= 10, commands
    assert [c for c in commands if kind(c) == "unknown"] == []
    # the YAML block the README calls my.yaml is the one written into the clone
    before = [b for b, code in blocks("yaml") if code.startswith("base:")]
    assert len(before) == 1 and "`my.yaml`" in before[0][-300:]


def test_install_and_test_commands_name_what_exists():
    pyproject = (REPO / "pyproject.toml").read_text()
    for command in readme_commands():
        for extra in re.findall(r'"\.\[([a-z,]+)\]"', command):
            for name in extra.split(","):
                assert re.search(rf"^{name} = \[", pyproject, re.M), f"{command}: no extra {name!r}"
        for lock in re.findall(r"-r (\S+)", command):  # the locks it installs from (tests/test_environment.py)
            assert (REPO / lock).is_file(), f"{command}: no {lock}"
        if kind(command) == "test" and "-m" in command:
            assert f'"{shlex.split(command)[2]}:' in pyproject, command  # a declared marker


@pytest.mark.parametrize("command", [c for c in readme_commands() if kind(c) == "dry-run"])
def test_snakemake_command_dry_runs(clone, command):
    """As written (plus -n) in the fresh copy; what it plans is what the README says it builds."""
    check_plan(command, run(command, clone, ["-n"]))


def check_plan(command: str, proc: subprocess.CompletedProcess) -> None:
    """What the dry run of a README snakemake command plans is what the README says it builds."""
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    counts = job_counts(proc.stdout)
    words = shlex.split(command)
    targets = [w for w in words[1:] if w.startswith("results/")]
    if "config/paper.yaml" in words:
        assert counts["train"] == 44 and counts["table1"] == 1, counts
        # the controls: BERT untied at k=1 (beside tied) and the vocabulary contrast (docs/claims.md)
        trains = {(j["run"], j["k"]) for j in jobs_of(proc.stdout, "train")}
        assert {("bert", "1"), ("bert+untie", "1"), ("bert-cased-at-bert-scale", "1")} <= trains
        return
    trains = {(j["run"], j["k"]) for j in jobs_of(proc.stdout, "train")}
    default = {("splade-tiny", "1"), ("splade-tiny", "16"), ("splade-tiny+untie", "16"), ("splade-tiny-x10", "1"),
               ("splade-tiny-x10", "16")}
    if "my.yaml" in words:  # the default's runs and the added backbone's
        assert trains == default | {("my-mlm", k) for k in ("1", "4", "16", "auto")}
    else:
        assert trains == default
    if targets == ["results/table1.md"]:  # Table 1 only: every run, then no other report
        assert counts["table1"] == 1 and counts["collect"] == 1 and not REPORT_RULES & set(counts), counts
    elif not targets:  # everything
        assert REPORT_RULES <= set(counts), counts


def test_report_and_verify_commands_on_a_finished_run(micro_run, tmp_path):
    """``snakemake --report`` and ``lsrbench verify`` as written, in a copy of the finished micro run."""
    from helpers.snakemake import copy_run

    work = copy_run(micro_run, tmp_path / "work")
    for command in readme_commands():
        if kind(command) == "report":
            proc = run(command, work, ["--snakefile", str(REPO / "Snakefile"), "--configfile", str(micro_run["config"])])
            assert proc.returncode == 0, proc.stderr[-3000:]
            report = work / shlex.split(command)[shlex.split(command).index("--report") + 1]
            assert "Table 1" in report.read_text(encoding="utf-8", errors="replace")
        elif kind(command) == "verify":
            proc = run(command, work)
            assert proc.returncode == 0 and proc.stdout.rstrip().endswith(": ok"), proc.stderr[-3000:]


def test_expected_command_on_the_recorded_tiny_default(tmp_path):
    """``lsrbench expected`` as written, where results/ holds the recorded tiny default: every
    number within its tolerance of config/expected/tiny.yaml, found from the folder's config."""
    from helpers.expected import recorded_tiny_default, results_folder, tiny_config

    (command,) = [c for c in readme_commands() if kind(c) == "expected"]
    config = tiny_config()
    results_folder(tmp_path / "results", recorded_tiny_default(), config["report"], config["backbones"])
    proc = run(command, tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert ", 0 FAIL, " in proc.stdout.splitlines()[-1] and "config/expected/tiny.yaml" in proc.stdout


def test_check_config_prints_the_grid_of_my_yaml(clone):
    (command,) = [c for c in readme_commands() if kind(c) == "check-config"]
    proc = run(command, clone)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == ("my.yaml (on config/config.yaml): ok: 3 backbones, 9 runs, datasets vaswani"), lines
    claims = [line for line in lines[2:] if line.startswith("claims (")]
    assert claims and claims[0].startswith("claims (9): large_norm_underperforms_at_k1, "), lines
    unchecked = [line for line in lines[2:] if line.startswith("not checked on this machine:")]
    grid = [line.split() for line in lines[2:] if line not in unchecked + claims]
    assert grid == [
        ["splade-tiny", "shared", "k", "=", "1,", "16"], ["splade-tiny", "untie", "k", "=", "16"],
        ["splade-tiny-x10", "shared", "k", "=", "1,", "16"],
        ["my-mlm", "shared", "k", "=", "1,", "4,", "16,", "auto"]]
    # a fresh clone has neither the prepared dataset nor the extracted checkpoints: said, not an error
    assert unchecked == [
        "not checked on this machine: datasets vaswani (not on disk: their dataset jobs read them)",
        "not checked on this machine: backbones splade-tiny, splade-tiny-x10, my-mlm "
        "(hub ids or wheels not yet extracted: their norm jobs read them)"], lines


def test_preflight_names_what_the_paper_grid_lacks_here(clone):
    """As written, in the fresh copy: no mirror here, so every hub backbone is one line; on a machine
    without a GPU the GPU is one line more; exit status 1, nothing written."""
    import torch

    (command,) = [c for c in readme_commands() if kind(c) == "preflight"]
    proc = run(command, clone)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("lsrbench: error: ")]
    assert proc.returncode == 1 and errors, proc.stderr[-3000:]
    gpu = [line for line in errors if "use_gpu: true, but node" in line]
    assert len(gpu) == (0 if torch.cuda.is_available() else 1), errors
    assert {line.split(": ")[3] for line in errors if ".model: '" in line} == {
        f"backbones.{b}.model" for b in ("bert", "distilbert", "albert", "gte-mlm", "roberta", "modernbert", "ettin",
                                         "bert-at-modernbert-scale", "bert-cased-at-bert-scale")}, errors
    assert proc.stderr.rstrip().endswith(f"preflight: {len(errors)} problem(s)")
    assert not (clone / "results").exists()


def test_probe_plans_the_probe_of_every_backbone_and_no_training(clone):
    (command,) = [c for c in readme_commands() if kind(c) == "probe"]
    proc = run(command, clone, ["--dry-run", "--cores", "1"])
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    counts = job_counts(proc.stdout)
    assert counts["probe"] == 3 and counts["probe_report"] == 1, counts  # the default's two backbones and my-mlm
    assert {"train", "index", "evaluate", "collect"}.isdisjoint(counts), counts
    assert {j["backbone"] for j in jobs_of(proc.stdout, "probe")} == {"splade-tiny", "splade-tiny-x10", "my-mlm"}


def test_version_names_the_libraries_against_the_lock(clone):
    (command,) = [c for c in readme_commands() if kind(c) == "version"]
    proc = run(command, clone)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and lines[0].startswith("lsrbench ") and len(lines) == 6, proc.stdout + proc.stderr
    assert [line.split()[0] for line in lines[1:5]] == ["torch", "transformers", "sentence-transformers", "snakemake"]
    assert all("(lock: " in line for line in lines[1:5]) and "requirements.lock" in lines[5]


def test_every_command_in_readme_order_in_one_clone_after_a_finished_run(micro_run, tmp_path):
    """Every command, in the README's order, in one clone whose results/ holds a finished run of
    another config (the micro run standing in for the main job: before, every target, the paper
    grid's -n and the probe were refused there, "one results folder holds the reports of one
    config"). Each is run as the tests above run its kind; the probe also as written, on a machine
    without network: it fails only for the network, one line per job that fetches, and no finished
    run is touched.
    ``lsrbench expected`` needs the tiny default's numbers (its own test above); install and test
    commands are CI's (.ci/run)."""
    from helpers.network import unreachable_network

    clone = fresh_clone(tmp_path)
    for name in ("results", ".snakemake"):
        shutil.copytree(micro_run["work"] / name, clone / name, symlinks=True)
    runs = {p: p.read_bytes() for p in (clone / "results" / "runs").rglob("*") if p.is_file()}
    done = []
    for command in readme_commands():
        what = kind(command)
        if what == "dry-run":
            check_plan(command, run(command, clone, ["-n"]))
        elif what == "report":
            proc = run(command, clone, ["--configfile", str(micro_run["config"])])
            assert proc.returncode == 0, proc.stderr[-3000:]
        elif what in ("verify", "check-config", "version"):
            proc = run(command, clone)
            assert proc.returncode == 0 and "lsrbench: error" not in proc.stderr, (command, proc.stderr[-3000:])
        elif what == "probe":
            proc = run(command, clone, ["--dry-run", "--cores", "1"])
            assert proc.returncode == 0 and job_counts(proc.stdout)["probe"] == 3, proc.stderr[-3000:]
            with unreachable_network(tmp_path) as env:
                proc = subprocess.run([sys.executable, "-m", "lsrbench", *shlex.split(command)[1:]], cwd=clone,
                                      env=env, capture_output=True, text=True, timeout=900)
            errors = [line for line in proc.stderr.splitlines() if line.startswith("lsrbench: error: ")]
            assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
            # one line per job that reached for the network (the dataset, the hub model), nothing else
            assert errors and all(": could not fetch " in line for line in errors), proc.stderr[-3000:]
        elif what == "preflight":  # the paper grid's needs: on a machine without them, one line each, status 1
            proc = run(command, clone)
            assert "Traceback" not in proc.stderr and (proc.returncode == 0 or (
                proc.returncode == 1 and proc.stderr.rstrip().endswith("problem(s)"))), proc.stderr[-3000:]
        else:
            assert what in ("install", "test", "expected"), command
            continue
        done.append(command)
    assert len(done) >= 9, done
    assert {p: p.read_bytes() for p in runs} == runs  # every finished run as it was
