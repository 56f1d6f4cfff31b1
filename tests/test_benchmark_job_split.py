"""``benchmark/job_split.py``: the per-rule split of a finished run's job time, from a Snakemake
console log and the job logs it names (in the formats Snakemake 9 and lsrbench's job runner write),
against hand-computed sums."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CONSOLE = """\
Building DAG of jobs...
[Tue Dec  1 20:52:20 2026]
localrule index:
    input: results/runs/b/k1/abc/model
    output: results/runs/b/k1/abc/vaswani/def/docs.npz
    log: {index_log}
    jobid: 7
    reason: Missing output files
    resources: tmpdir=/tmp

[Tue Dec  1 20:52:21 2026]
localrule evaluate:
    log: {eval_log}
    jobid: 9
[Tue Dec  1 20:52:31 2026]
Finished jobid: 9 (Rule: evaluate)
[Tue Dec  1 20:53:32 2026]
Finished jobid: 7 (Rule: index)
[Tue Dec  1 20:53:33 2026]
localrule table1:
    jobid: 11
[Tue Dec  1 20:53:35 2026]
Finished jobid: 11 (Rule: table1)
"""

INDEX_LOG = """\
2026-12-01T20:52:21Z INFO lsrbench.job: index: started (1 threads)
2026-12-01T20:52:29Z INFO sentence_transformers.base.model: Loading SparseEncoder model from m.
2026-12-01T20:52:31Z INFO lsrbench.index.indexing: encoding 4168 documents on cpu (fp32, fast path, batch 32, 1 shard(s))
2026-12-01T20:53:31Z INFO lsrbench.job: index: done in 1m10s; read m/ (10 files, 18.4 MB); wrote d (4.9 MB)
2026-12-01T20:53:31Z INFO lsrbench.job: index: time split: 0.8 s start-up before the job, 7.5 s importing, 62.5 s the rest
"""

EVAL_LOG = """\
2026-12-01T20:52:22Z INFO lsrbench.job: evaluate: started (1 threads)
2026-12-01T20:52:30Z INFO lsrbench.job: evaluate: time split: ? start-up before the job, 1.5 s importing, 6.0 s the rest
"""


def test_job_split_sums_each_part_per_rule(tmp_path):
    (tmp_path / "index.log").write_text(INDEX_LOG)
    (tmp_path / "evaluate.log").write_text(EVAL_LOG)
    console = tmp_path / "console.log"
    console.write_text(CONSOLE.format(index_log=tmp_path / "index.log", eval_log=tmp_path / "evaluate.log"))
    out = tmp_path / "split.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmark" / "job_split.py"), str(console), "--json", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    split = json.loads(out.read_text())
    rules = split["job_seconds_by_rule"]
    # index: 72 s as Snakemake saw it (20:52:20 -> 20:53:32); model load 20:52:29 -> 20:52:31 = 2 s
    # of the job runner's 62.5 s "rest", so compute 60.5; other = 72 - 0.8 - 7.5 - 62.5 = 1.2
    assert rules["index"] == {"jobs": 1, "wall": 72.0, "startup": 0.8, "imports": 7.5, "model_load": 2.0,
                              "compute": 60.5, "other": 1.2}
    # evaluate: 10 s wall, start-up unknown ("?": not Linux), 1.5 + 6.0 in the job, 2.5 other
    assert rules["evaluate"] == {"jobs": 1, "wall": 10.0, "startup": 0.0, "imports": 1.5, "model_load": 0.0,
                                 "compute": 6.0, "other": 2.5}
    # a job without a log (a report rule here): all of its 2 s are "other"
    assert rules["table1"]["wall"] == 2.0 and rules["table1"]["other"] == 2.0
    assert list(rules) == ["index", "evaluate", "table1"]  # longest first
    total = split["all_jobs"]
    assert total["jobs"] == 3 and total["wall"] == 84.0 and total["compute"] == 66.5
    assert total["fixed_share"] == round((84.0 - 66.5) / 84.0, 3)
    assert "fixed share of job time" in proc.stdout
