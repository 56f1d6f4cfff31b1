"""``benchmark/suite_jobs.py``: every job log under a folder summed per rule, from the job runner's
split line as it writes it, against hand-computed sums."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINE = "2026-12-07T19:45:49Z INFO lsrbench.job: {rule}: time split: 0.1 s start-up before the job, {imports} s importing, {rest} s the rest"


def test_jobs_importing_and_the_rest_are_summed_per_rule(tmp_path):
    logs = {"a/popen-gw0/t1/results/runs/x/k1/abc/train.log": ("train", "4.6", "66.1"),
            "a/popen-gw1/t2/results/runs/x/k1/def/train.log": ("train", "6.9", "69.1"),
            "b/results/runs/x/k1/abc/vaswani/ghi/index.log": ("index", "5.4", "30.5")}
    for path, (rule, imports, rest) in logs.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(f"some other line\n{LINE.format(rule=rule, imports=imports, rest=rest)}\n")
    (tmp_path / "b/results/runs/x/k1/abc/notes.log").write_text("no split line here\n")
    out = tmp_path / "out.json"
    proc = subprocess.run([sys.executable, "benchmark/suite_jobs.py", str(tmp_path), "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["rules"] == {"train": {"jobs": 2, "importing_s": 11.5, "rest_s": 135.2},
                               "index": {"jobs": 1, "importing_s": 5.4, "rest_s": 30.5}}
    assert result["total"] == {"jobs": 3, "importing_s": 16.9, "rest_s": 165.7}
    assert proc.stdout.splitlines()[-1].split() == ["total", "3", "jobs", "16.9", "s", "importing", "165.7", "s", "the", "rest"]
