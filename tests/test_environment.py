"""The locked environment (issue 28): the lock's files agree with each other and with pyproject's
ranges, ``lsrbench --version`` compares the installed libraries with the lock, and a library's own
failure is one line that names the library, never the user's file. Installs nothing."""

import importlib.metadata
import re
import shutil
import tomllib

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

from helpers.paths import REPO, SHARED
from lsrbench.environment import (
    INSTALL_LOCK,
    REPORTED,
    incompatibility,
    installed_version,
    lock_differences,
    locked_versions,
    normalise,
    version_lines,
)
from lsrbench.errors import InputError, LibraryIncompatible

pytestmark = pytest.mark.drift

LOCK = REPO / "requirements.lock"
CUDA_LOCK = REPO / "envs" / "requirements-cuda.lock"
SLURM_LOCK = REPO / "envs" / "requirements-slurm.lock"
CKPT = SHARED / "models" / "splade-tiny-msmarco"
CONFIG_FILE = "experiments/test-config.yaml"


def _pyproject_requirements(*extras: str) -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    names = list(project["dependencies"])
    for extra in extras:
        names += project["optional-dependencies"][extra]
    return [Requirement(r) for r in names]


def _hashed(lock) -> dict[str, int]:
    """Package -> the number of --hash lines under its pin."""
    counts, current = {}, None
    for line in lock.read_text().splitlines():
        pin = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==", line)
        if pin:
            current = normalise(pin.group(1))
            counts[current] = 0
        elif line.strip().startswith("--hash=sha256:") and current:
            counts[current] += 1
    return counts


def test_every_locked_package_has_an_exact_version_and_hashes():
    locked, hashed = locked_versions(LOCK), _hashed(LOCK)
    assert len(locked) > 100 and locked["torch"] == "2.13.0+cpu"
    assert set(hashed) == set(locked) and min(hashed.values()) >= 1


@pytest.mark.parametrize("lock, extras", [(LOCK, ("test", "mteb", "tensorboard")),
                                          (SLURM_LOCK, ("test", "mteb", "tensorboard", "slurm")),
                                          (CUDA_LOCK, ("test", "tensorboard", "slurm"))],
                         ids=["cpu", "slurm", "cuda"])
def test_pyprojects_ranges_admit_every_locked_direct_dependency(lock, extras):
    locked = locked_versions(lock)
    for requirement in _pyproject_requirements(*extras):
        name = normalise(requirement.name)
        assert name in locked, f"{lock.name} lacks {name}"
        # torch==2.13.0 admits its local build 2.13.0+cpu (PEP 440: a local label matches a public pin)
        assert requirement.specifier.contains(Version(locked[name]).public if name == "torch" else locked[name]), \
            f"{lock.name}: {name} {locked[name]} is outside pyproject's {requirement}"


def test_the_other_locks_and_conda_agree_with_requirements_lock():
    cpu, slurm, cuda = locked_versions(LOCK), locked_versions(SLURM_LOCK), locked_versions(CUDA_LOCK)
    assert {n: slurm[n] for n in cpu} == cpu  # the SLURM lock is the CPU lock plus the plugin
    assert set(slurm) - set(cpu) >= {"snakemake-executor-plugin-slurm"}
    shared = (set(cpu) & set(cuda)) - {"torch"}
    assert shared and all(cuda[n] == cpu[n] for n in shared)
    assert cuda["torch"] == "2.13.0" and any(n.startswith("nvidia-") for n in cuda)
    conda = yaml.safe_load((REPO / "envs" / "lsrbench.yaml").read_text())
    pip = next(d["pip"] for d in conda["dependencies"] if isinstance(d, dict))
    pins = dict(p.split("==") for p in pip if "==" in p)
    assert {normalise(n): v for n, v in pins.items()} == cuda and "-e .." in pip


def test_the_gpu_machines_wheels_are_the_locks_versions():
    locked = locked_versions(LOCK)
    lines = [line.strip() for line in (REPO / "benchmark" / "gpu_wheels.txt").read_text().splitlines()]
    pins = dict(line.split("==") for line in lines if line and not line.startswith("#"))
    assert pins and {n: v for n, v in pins.items() if locked.get(normalise(n)) != v} == {}


def test_lock_differences_names_each_package_at_another_version():
    locked = {"transformers": "5.25.0", "torch": "2.13.0+cpu", "numpy": "2.4.6"}
    installed = {"Transformers": "5.24.0", "torch": "2.13.0+cpu", "numpy": None, "uv": "0.13.9"}
    assert lock_differences(installed, locked) == [("transformers", "5.24.0", "5.25.0")]


def test_version_lines_name_the_libraries_and_compare_with_the_lock():
    from lsrbench.cli import main

    lines = version_lines()
    locked = locked_versions(LOCK)
    assert lines[0] == f"lsrbench {importlib.metadata.version('lsrbench')}"
    for line, name in zip(lines[1:], REPORTED):
        assert line == f"{name} {installed_version(name)} (lock: {locked[normalise(name)]})"
    installed = {d.metadata["Name"]: d.version for d in importlib.metadata.distributions()}
    differ = lock_differences(installed, locked)
    assert lines[-1].startswith("matches " if not differ else "does not match ")
    assert str(LOCK) in lines[-1] and (not differ or INSTALL_LOCK in lines[-1])
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0


# ------------------------------------------------------------------ the library's failure, not the file's


def _one_line(exc) -> str:
    text = str(exc)
    assert "\n" not in text and "this is not a problem with your input" in text
    return text


@pytest.mark.skipif(not CKPT.is_dir(), reason=f"{CKPT} not available")
@pytest.mark.skipif(Version(installed_version("transformers")) < Version("5.25"),
                    reason="hub kernels are on by default from transformers 5.25: the failure issue 28 reported")
def test_the_reported_failure_is_named_as_the_librarys(monkeypatch):
    """transformers 5.25 with its default use_kernels on the meta device: the kernels library's
    ValueError, which lsrbench used to blame on the checkpoint."""
    from lsrbench.model import load_options
    from lsrbench.model.checkpoint import check_checkpoint

    monkeypatch.setitem(load_options.MODEL_KWARGS, "use_kernels", True)
    with pytest.raises(LibraryIncompatible) as err:
        check_checkpoint(str(CKPT), CONFIG_FILE, "backbones.b.model")
    text = _one_line(err.value)
    assert f"kernels {installed_version('kernels')} via transformers {installed_version('transformers')}" in text
    assert "Unsupported device type 'meta'" in text and "cannot load" not in text


@pytest.mark.skipif(not CKPT.is_dir(), reason=f"{CKPT} not available")
def test_an_argument_the_library_does_not_take_is_not_a_damaged_model(tmp_path):
    from lsrbench.model.encoder import load_trained_encoder

    with pytest.raises(LibraryIncompatible) as err:
        load_trained_encoder(str(CKPT), "cpu", no_such_argument=True)
    text = _one_line(err.value)
    assert f"sentence-transformers {installed_version('sentence-transformers')}" in text
    assert "unexpected keyword argument 'no_such_argument'" in text and "damaged" not in text
    # the control: a truncated file is still the file's problem, named
    model = tmp_path / "model"
    shutil.copytree(CKPT, model)
    (model / "model.safetensors").write_bytes((CKPT / "model.safetensors").read_bytes()[:5000])
    with pytest.raises(InputError) as err:
        load_trained_encoder(str(model), "cpu")
    assert str(err.value).startswith(f"{model / 'model.safetensors'}: ") and "truncated" in str(err.value)


def test_an_api_that_moved_names_the_library_its_version_and_the_lock():
    with pytest.raises(ImportError) as moved:
        from transformers import NoSuchName  # noqa: F401
    text = _one_line(incompatibility(moved.value, "importing the trainer"))
    assert text.startswith(f"lsrbench is incompatible with the installed transformers "
                           f"{installed_version('transformers')} while importing the trainer (ImportError: ")
    assert INSTALL_LOCK in text


def test_a_library_failure_is_one_line_through_snakemake_free_entry_points(capsys):
    """The CLI prints lsrbench's incompatibility like bad input: one line, no traceback."""
    from lsrbench.cli_errors import run_one_line

    def command():
        raise LibraryIncompatible("lsrbench is incompatible with the installed x 1.0 while y (E: z); this is not a "
                                  "problem with your input: install the lock")

    assert run_one_line(command) == 2
    err = capsys.readouterr().err
    assert err.startswith("lsrbench: error: lsrbench is incompatible with the installed x 1.0") and err.count("\n") == 1


def test_the_records_of_the_lock_agree_with_provenance_names():
    """Every library a run's provenance records is named as the lock names it (normalised)."""
    from lsrbench.provenance import PACKAGES

    locked = locked_versions(LOCK)
    assert all(normalise(p) in locked for p in PACKAGES if p != "lsrbench")


def test_verify_notes_results_made_with_other_versions_than_the_lock(tmp_path):
    """Each stage's real provenance record names the installed versions; one record edited to an
    older transformers is one note, counted against the records."""
    import json as _json

    from lsrbench.provenance import package_versions, provenance, write_json
    from lsrbench.report.verify.versions import version_notes

    lock = tmp_path / "requirements.lock"  # a lock of exactly what is installed here
    lock.write_text("".join(f"{name}=={version} \\\n    --hash=sha256:00\n"
                            for name, version in package_versions().items() if version))
    for run in ("a", "b"):
        write_json(tmp_path / "results" / "runs" / run / "provenance.json", provenance("evaluate", "0" * 64))
    assert version_notes(tmp_path / "results", lock) == []
    edited = tmp_path / "results" / "runs" / "b" / "provenance.json"
    record = _json.loads(edited.read_text())
    record["packages"]["transformers"] = "5.24.0"
    edited.write_text(_json.dumps(record))
    assert version_notes(tmp_path / "results", lock) == [
        f"made with transformers 5.24.0, not the lock's {installed_version('transformers')} (requirements.lock), "
        "in 1 of 2 provenance records"]
