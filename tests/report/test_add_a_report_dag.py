"""Adding a report is its module, one registry line and its test (issue 50), shown by adding one
(``pytest -m slow``). The mechanism: a copy of src/lsrbench with the two files added or changed, put
first on PYTHONPATH of a real snakemake run and of ``lsrbench verify``: the installed code is
untouched, and the copy differs from it in exactly the files a new report needs."""

from __future__ import annotations

import csv
import filecmp
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import REPO
from helpers.snakemake import SNAKEMAKE, copy_run

pytestmark = pytest.mark.slow

MODULE = '''"""row_count.md: how many rows metrics.csv has."""

from lsrbench.dag.report_rule import Report
from lsrbench.report.reports.collect import metrics


def report_row_count(metrics_csv, count_md, config_yaml=None):
    with open(metrics_csv, encoding="utf-8") as fh:
        rows = len(fh.read().splitlines()) - 1
    with open(count_md, "w", encoding="utf-8") as fh:
        fh.write(f"# Rows of metrics.csv\\n\\n{rows} rows\\n")


REPORT = Report(name="row_count", job=report_row_count, outputs={"count_md": "row_count.md"}, files=metrics)
'''


def _package_with_a_new_report(tmp: Path) -> Path:
    """src/lsrbench copied, the report's module written and its line added to the registry."""
    src = tmp / "src"
    shutil.copytree(REPO / "src" / "lsrbench", src / "lsrbench", ignore=shutil.ignore_patterns("__pycache__"))
    (src / "lsrbench/report/reports/row_count.py").write_text(MODULE, encoding="utf-8")
    registry = src / "lsrbench/report/reports/__init__.py"
    text = registry.read_text(encoding="utf-8")
    last = '    "lsrbench.report.reports.probe_outcomes",\n'
    assert last in text
    registry.write_text(text.replace(last, last + '    "lsrbench.report.reports.row_count",\n'), encoding="utf-8")
    return src


def _differing(a: Path, b: Path) -> list[str]:
    """Files of tree ``b`` absent from ``a`` or not byte-equal to it (caches aside)."""
    found = []
    for path in b.rglob("*.py"):
        other = a / path.relative_to(b)
        if not other.is_file() or not filecmp.cmp(path, other, shallow=False):
            found.append(str(path.relative_to(b)))
    return sorted(found)


def test_a_new_report_is_one_module_and_one_registry_line(micro_run, tmp_path):
    src = _package_with_a_new_report(tmp_path)
    assert _differing(REPO / "src" / "lsrbench", src / "lsrbench") == ["report/reports/__init__.py",
                                                                       "report/reports/row_count.py"]
    work = copy_run(micro_run, tmp_path / "work")
    env = {**os.environ, "PYTHONPATH": str(src)}
    proc = subprocess.run([*SNAKEMAKE, "--cores", "1", "-d", str(work), "--configfile", str(micro_run["config"])],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "row_count" in proc.stdout + proc.stderr  # its rule ran, in the default target
    with open(work / "results/metrics.csv", encoding="utf-8", newline="") as fh:
        rows = sum(1 for _ in csv.reader(fh)) - 1
    count = work / "results/row_count.md"
    assert count.read_text(encoding="utf-8") == f"# Rows of metrics.csv\n\n{rows} rows\n" and rows > 0
    manifest = json.loads((work / "results/manifests/row_count.json").read_text(encoding="utf-8"))
    assert manifest["call"]["outputs"] == {"count_md": "results/row_count.md"}

    verify = [sys.executable, "-m", "lsrbench.cli", "verify", "results"]
    ok = subprocess.run(verify, cwd=work, capture_output=True, text=True, env=env)
    assert ok.returncode == 0, ok.stderr[-3000:]
    # an edited count whose manifest is forged to match: only making it again finds it
    count.write_text(f"# Rows of metrics.csv\n\n{rows + 1} rows\n", encoding="utf-8")
    record = manifest["artifacts"]["outputs"]["results/row_count.md"]
    from lsrbench.hashing import sha256_file

    record.update(sha256=sha256_file(count), bytes=count.stat().st_size)
    (work / "results/manifests/row_count.json").write_text(json.dumps(manifest), encoding="utf-8")
    bad = subprocess.run(verify, cwd=work, capture_output=True, text=True, env=env)
    assert bad.returncode == 1
    assert (f"{Path('results/row_count.md')}: not what its row_count job makes again from the inputs its manifest "
            f"{Path('results/manifests/row_count.json')} records") in bad.stderr, bad.stderr[-3000:]
