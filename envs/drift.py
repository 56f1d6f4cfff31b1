"""Library drift, caught by the project before a user meets it (issue 28).

For each end of pyproject.toml's ranges, the newest releases they admit (uv's default resolution)
and the oldest (``--resolution lowest-direct``), this resolves the whole tree in a fresh virtual
environment beside the checkout, installs it with lsrbench, and runs the tests marked ``drift``:
the checkpoint checks, lsrbench's own library-failure lines, and a micro DAG through snakemake
(norm, train, index, evaluate, reports, ``lsrbench verify``). When tests fail, each direct
dependency that differs from requirements.lock is tried alone (the lock, then that package at the
tried version) on the failing tests, which names the package that broke what.

    python envs/drift.py                  # both ends; results in envs/drift/<end>.json
    python envs/drift.py --end newest     # one end
    python envs/drift.py --keep           # keep the environments (envs/drift/<end>/venv)

Needs uv on PATH (``pip install uv``). torch is pinned exactly in pyproject (2.13.0); its CPU
build comes from FIND_LINKS (default /opt/wheels where it exists) or PyTorch's CPU index.
Written with uv and the standard library only: it must run before lsrbench is installed anywhere.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "envs" / "drift"
EXTRAS = ("test",)  # what the drift tests need; mteb and tensorboard are independent checks
RESOLUTION = {"newest": "highest", "oldest": "lowest-direct"}
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)")


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(lock: Path) -> dict[str, str]:
    matches = (PIN.match(line) for line in lock.read_text(encoding="utf-8").splitlines())
    return {normalise(m.group(1)): m.group(2) for m in matches if m}


def direct_dependencies() -> list[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = list(project["dependencies"]) + [r for e in EXTRAS for r in project["optional-dependencies"][e]]
    return [normalise(re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0]) for r in names]


def torch_source() -> list[str]:
    folder = os.environ.get("FIND_LINKS", "/opt/wheels")
    if Path(folder).is_dir():
        return ["--find-links", folder]
    return ["--extra-index-url", "https://download.pytorch.org/whl/cpu", "--index-strategy", "unsafe-best-match"]


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=REPO, text=True, capture_output=True, **kwargs)


def resolve(end: str, folder: Path) -> Path:
    """The tree pyproject's ranges give at ``end``, torch as the CPU build."""
    override = folder / "cpu-torch.txt"
    override.write_text("torch==2.13.0+cpu\n")
    lock = folder / "tried.lock"
    extras = [a for e in EXTRAS for a in ("--extra", e)]
    proc = run(["uv", "pip", "compile", "pyproject.toml", *extras, "--python-version", "3.11", "--quiet",
                "--resolution", RESOLUTION[end], "--override", str(override), *torch_source(), "-o", str(lock)])
    if proc.returncode != 0:
        raise SystemExit(f"drift: uv could not resolve the {end} end: {proc.stderr.strip()[-2000:]}")
    return lock


def make_venv(folder: Path, lock: Path, also: list[str] = ()) -> Path:
    """A fresh environment at ``folder/venv`` with ``lock`` (then ``also``) and lsrbench, editable."""
    venv = folder / "venv"
    shutil.rmtree(venv, ignore_errors=True)
    python = str(venv / "bin" / "python")
    steps = [["uv", "venv", "--quiet", "--python", sys.executable, str(venv)],
             ["uv", "pip", "sync", "--quiet", "--python", python, *torch_source(), str(lock)],
             *([["uv", "pip", "install", "--quiet", "--python", python, *torch_source(), *also]] if also else []),
             ["uv", "pip", "install", "--quiet", "--python", python, "--no-deps", "-e", str(REPO)]]
    for step in steps:
        proc = run(step)
        if proc.returncode != 0:
            raise SystemExit(f"drift: {' '.join(step[:3])} failed: {proc.stderr.strip()[-2000:]}")
    return venv


def drift_tests(venv: Path, folder: Path, nodes: list[str] | None = None) -> dict[str, str]:
    """Each drift test's outcome (passed, failed, error, skipped), by node id."""
    junit = folder / "junit.xml"
    selection = [*(nodes or []), "-m", "drift"]  # -m after pyproject's addopts: drift tests, slow ones too
    proc = run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", *selection,
                "--continue-on-collection-errors", f"--junitxml={junit}"],
               env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    (folder / "pytest.log").write_text(proc.stdout + proc.stderr)
    if not junit.is_file():
        raise SystemExit(f"drift: pytest did not run: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    outcomes = {}
    for case in ET.parse(junit).iter("testcase"):
        node = _node_id(case.get("classname") or "", case.get("name") or "")
        kinds = {child.tag for child in case}
        outcomes[node] = next((k for k in ("failure", "error", "skipped") if k in kinds), "passed")
    return outcomes


def _node_id(classname: str, name: str) -> str:
    """pytest's node id of a junit test case; a module that failed to import is its file."""
    if not classname:  # a collection error: the name is the dotted module
        return name.replace(".", "/") + ".py"
    return f"{classname.replace('.', '/')}.py::{name}"


def culprits(tried: dict[str, str], locked: dict[str, str], failing: list[str], folder: Path) -> tuple[dict, dict]:
    """Direct dependency -> the failing tests it breaks alone (the lock with only it moved); and
    the packages that cannot move alone (the lock's other versions require another one: uv pip
    check's first complaint), which are not blamed."""
    found, not_alone = {}, {}
    for name in direct_dependencies():
        if name not in tried or tried[name] == locked.get(name) or name == "torch":
            continue
        alone = folder / f"alone-{name}"
        alone.mkdir(exist_ok=True)
        venv = make_venv(alone, REPO / "requirements.lock", [f"{name}=={tried[name]}"])
        check = run(["uv", "pip", "check", "--python", str(venv / "bin" / "python")])
        if check.returncode != 0:
            not_alone[name] = (check.stdout + check.stderr).strip().splitlines()[-1]
        else:
            broken = [n for n, o in drift_tests(venv, alone, failing).items() if o in ("failure", "error")]
            if broken:
                found[name] = broken
        shutil.rmtree(venv, ignore_errors=True)
    return found, not_alone


def check_end(end: str, keep: bool) -> dict:
    folder = OUT / end
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    locked = pins(REPO / "requirements.lock")
    lock = resolve(end, folder)
    tried = pins(lock)
    venv = make_venv(folder, lock)
    outcomes = drift_tests(venv, folder)
    failing = sorted(n for n, o in outcomes.items() if o in ("failure", "error"))
    record = {
        "end": end, "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "python": sys.version.split()[0],
        "direct": {n: {"tried": tried.get(n), "lock": locked.get(n)} for n in direct_dependencies()},
        "other_differences": {n: {"tried": v, "lock": locked.get(n)} for n, v in sorted(tried.items())
                              if locked.get(n) != v and n not in direct_dependencies()},
        "tests": {"passed": sum(o == "passed" for o in outcomes.values()),
                  "skipped": sum(o == "skipped" for o in outcomes.values()), "failed": failing},
    }
    record["culprits"], record["not_movable_alone"] = culprits(tried, locked, failing, folder) if failing else ({}, {})
    record["result"] = "passed" if not failing else "failed"
    if not keep:
        shutil.rmtree(venv, ignore_errors=True)
    (OUT / f"{end}.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def summary(record: dict) -> str:
    moved = [f"{n} {v['tried']} (lock {v['lock']})" for n, v in record["direct"].items() if v["tried"] != v["lock"]]
    lines = [f"{record['end']} ({record['date']}): {record['result']}; {record['tests']['passed']} drift tests passed, "
             f"{record['tests']['skipped']} skipped, {len(record['tests']['failed'])} failed",
             f"  direct dependencies not at the lock's version: {', '.join(moved) or 'none'}"]
    lines += [f"  failed: {n}" for n in record["tests"]["failed"]]
    lines += [f"  {name} alone breaks: {', '.join(tests)}" for name, tests in record["culprits"].items()]
    lines += [f"  {name} cannot move alone ({why})" for name, why in record["not_movable_alone"].items()]
    if record["tests"]["failed"] and not record["culprits"]:
        lines.append("  no direct dependency breaks them alone: a combination, or another package "
                     f"({', '.join(record['other_differences']) or 'none moved'})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--end", choices=[*RESOLUTION, "both"], default="both")
    parser.add_argument("--keep", action="store_true", help="keep each end's virtual environment")
    args = parser.parse_args(argv)
    if shutil.which("uv") is None:
        parser.exit(2, "drift: needs uv on PATH (pip install uv)\n")
    ends = list(RESOLUTION) if args.end == "both" else [args.end]
    records = [check_end(end, args.keep) for end in ends]
    print("\n".join(summary(r) for r in records))
    return 0 if all(r["result"] == "passed" for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
