"""What produced an artifact: config hash, package versions, seed, device, code revision; and the
manifest of a stage (every input and output file with its SHA-256), which ``lsrbench verify``
checks.

A manifest is the stage's provenance JSON (``train_provenance.json``, ``<dataset>/provenance.json``)
with an ``artifacts`` entry::

    "manifest": "results/runs/b/k4/vaswani/provenance.json",       # its own path, as written
    "artifacts": {"inputs":  {"results/runs/b/k4/vaswani/docs.npz": {"sha256": ..., "bytes": ...}, ...},
                  "outputs": {"results/runs/b/k4/vaswani/metrics.tsv": {...}, ...}}

Paths are recorded as the stage was given them (Snakemake passes paths relative to its working
directory), and a folder is recorded file by file.
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import json
import os
import platform
import socket
import subprocess
import sys
from pathlib import Path

from lsrbench.atomic import atomic_open
from lsrbench.hashing import sha256_file

PACKAGES = (
    "lsrbench", "torch", "transformers", "sentence-transformers", "tokenizers", "accelerate",
    "numpy", "scipy", "ir-measures", "ir-datasets", "bm25s", "pandas", "snakemake",
)


def package_versions() -> dict[str, str | None]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def device_description() -> dict:
    """The CPU, and torch's threads and GPUs where the stage used torch. A stage that did not
    (evaluate, BM25, pool, the reports) is not made to import it for this record: that import
    alone costs seconds per job."""
    info = {"cpu": platform.processor() or platform.machine()}
    model = cpu_model()
    if model:
        info["cpu_model"] = model  # numbers of a trained run differ between CPU models (docs/expected.md)
    torch = sys.modules.get("torch")
    if torch is None:
        return {**info, "torch": "not used"}
    info["torch_threads"] = torch.get_num_threads()
    if torch.cuda.is_available():
        info["cuda"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return info


def cpu_model() -> str | None:
    """The processor's model name as the kernel reports it (Linux), else None."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip() or None
    except OSError:
        pass
    return None


def git_commit() -> str | None:
    try:
        root = Path(__file__).resolve().parents[2]
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def provenance(stage: str, config_hash: str, seed: int | None = None, **extra) -> dict:
    """A provenance record for one stage's outputs."""
    return {
        "stage": stage,
        "config_hash": config_hash,
        "seed": seed,
        "packages": package_versions(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "device": device_description(),
        "git_commit": git_commit(),
        "host": socket.gethostname(),
        "finished_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        **extra,
    }


def write_json(path, obj) -> None:
    with atomic_open(path, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, indent=2, sort_keys=True, default=str)
        fh.write("\n")


def _files(path: str) -> list[str]:
    """``path`` itself, or every regular file under a folder (sorted; hidden temporaries skipped)."""
    p = Path(path)
    if p.is_dir():
        found = []
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            found += [os.path.join(root, f) for f in sorted(files) if not f.startswith(".")]
        return found
    return [str(path)]


def artifact_hashes(paths) -> dict[str, dict]:
    """``{file: {"sha256", "bytes"}}`` for each path (folders file by file), as given (not resolved)."""
    out: dict[str, dict] = {}
    for path in paths:
        if path is None:
            continue
        for f in _files(str(path)):
            out[f] = {"sha256": sha256_file(f), "bytes": os.path.getsize(f)}
    return out


def manifest_fields(manifest_path: str, inputs, outputs) -> dict:
    """The ``manifest`` and ``artifacts`` entries a stage adds to its provenance record."""
    return {"manifest": str(manifest_path),
            "artifacts": {"inputs": artifact_hashes(inputs), "outputs": artifact_hashes(outputs)}}


def addressed_record(identity: dict, inputs, outputs) -> dict:
    """An addressed output's ``params.json``: what its id stands for (``identity``), the files its
    job read (``made_from``: paths only, each has a record of its own) and every file it wrote with
    its SHA-256 (``outputs``): the record a finished output is checked against before anything
    reads it (:mod:`lsrbench.folder.records`)."""
    return {**identity, "made_from": sorted(_flat(inputs)), "outputs": artifact_hashes(outputs)}


def report_manifest(manifest_path: str, rule: str, config: dict | None, inputs, outputs) -> dict:
    """A report job's manifest (``results/manifests/<rule>.json``): the config snapshot it was made
    with and every file it read and wrote with its SHA-256."""
    return {"rule": rule, "config": config, **manifest_fields(manifest_path, _flat(inputs), _flat(outputs))}


def _flat(paths) -> list[str]:
    """Named files as Snakemake gives them (a name may hold a list): one list of paths."""
    return [str(q) for p in paths for q in ([p] if isinstance(p, (str, os.PathLike)) else p)]


def recording_workdir(manifest_file: Path, recorded: str) -> Path:
    """The directory a manifest's relative paths are relative to (found from its own recorded path)."""
    rec = Path(recorded)
    if rec.is_absolute():
        return Path("/")
    base = manifest_file.resolve()
    for _ in range(len(rec.parts)):
        base = base.parent
    return base


def resolve_recorded(workdir: Path, recorded: str) -> Path:
    """A recorded path: as it is if absolute, else under ``workdir`` (:func:`recording_workdir`)."""
    p = Path(recorded)
    return p if p.is_absolute() else workdir / p
