"""Where a test session's Snakemake jobs spend their time: every job log under a folder (a pytest
session's basetemp, e.g. /tmp/pytest-of-root/pytest-N) read for the job runner's split line
(``lsrbench.pipeline.job_clock``), summed per rule: jobs, seconds importing, seconds of the rest.
Wall seconds as the jobs saw them (on shared cores, more than their CPU seconds).

    python benchmark/suite_jobs.py /tmp/pytest-of-root/pytest-N [--json results/suite_jobs-slow.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from job_split import SPLIT


def suite_jobs(folder: Path) -> dict:
    """``{"rules": {rule: {"jobs", "importing_s", "rest_s"}}, "total": {...}}`` of every ``*.log`` under ``folder``."""
    rules: dict[str, dict] = defaultdict(lambda: {"jobs": 0, "importing_s": 0.0, "rest_s": 0.0})
    for log in folder.rglob("*.log"):
        for line in log.read_text(errors="replace").splitlines():
            if m := SPLIT.search(line):
                rule = rules[line.split(": time split:")[0].rsplit(" ", 1)[-1]]
                rule["jobs"] += 1
                rule["importing_s"] += float(m.group(2))
                rule["rest_s"] += float(m.group(3))
    ordered = dict(sorted(((r, {k: round(v, 1) for k, v in d.items()}) for r, d in rules.items()),
                          key=lambda item: -item[1]["importing_s"]))
    total = {key: round(sum(d[key] for d in ordered.values()), 1) for key in ("jobs", "importing_s", "rest_s")}
    return {"folder": str(folder), "rules": ordered, "total": total}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    result = suite_jobs(args.folder)
    for rule, d in [*result["rules"].items(), ("total", result["total"])]:
        print(f"{rule:16s} {d['jobs']:6.0f} jobs {d['importing_s']:9.1f} s importing {d['rest_s']:9.1f} s the rest")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
