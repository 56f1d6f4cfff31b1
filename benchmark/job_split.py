"""Where a finished DAG run's time went, per rule: each job's wall time as Snakemake saw it (its
"[time] rule X" line to its "Finished jobid" line), split into start-up (Python and Snakemake's
script preamble before the job function), imports (torch, transformers, sentence-transformers...:
the job runner's ImportClock), model load (index: sentence-transformers' "Loading SparseEncoder" line
to the first "encoding" line), compute (the rest of the job function) and the wrapper's own
remainder (writing params.json, Snakemake's bookkeeping). Issue 21.3: the fixed costs of the tiny
default against its compute.

    python benchmark/job_split.py benchmark/results/tiny_default.log [--json OUT]

Reads the Snakemake log given (the console output of one `snakemake` run) and the job logs it
names. Snakemake's time stamps have 1 s resolution, the job runner's split lines 0.1 s."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from datetime import datetime, timezone

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ [\d:]+ \d{4})\]$")
RULE = re.compile(r"^(?:local)?rule (\w+):")
SPLIT = re.compile(r": time split: (\?|[\d.]+ s) start-up before the job, ([\d.]+) s importing, ([\d.]+) s the rest")
FIELDS = ("wall", "startup", "imports", "model_load", "compute", "other")


def snakemake_jobs(lines: list[str]) -> list[dict]:
    """One dict per job of a Snakemake console log: rule, log file, start and end (UTC seconds)."""
    jobs, by_id, stamp, current = [], {}, None, None
    for line in lines:
        if m := STAMP.match(line):
            stamp = datetime.strptime(" ".join(m.group(1).split()), "%a %b %d %H:%M:%S %Y").timestamp()
        elif m := RULE.match(line):
            current = {"rule": m.group(1), "start": stamp, "log": None}
        elif current and (m := re.match(r"\s+log: (\S+)", line)):
            current["log"] = m.group(1)
        elif current and (m := re.match(r"\s+jobid: (\d+)", line)):
            by_id[m.group(1)] = current
            jobs.append(current)
            current = None
        elif m := re.match(r"Finished jobid: (\d+)", line):
            if m.group(1) in by_id:
                by_id[m.group(1)]["end"] = stamp
    return [j for j in jobs if "end" in j]


def _utc(line: str) -> float:
    return datetime.strptime(line[:20], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


def job_split(job: dict) -> dict:
    """The split of one job from its log (zeros where the job wrote no split line)."""
    wall = job["end"] - job["start"]
    out = dict.fromkeys(FIELDS, 0.0) | {"wall": wall}
    try:
        lines = open(job["log"], encoding="utf-8").read().splitlines() if job["log"] else []
    except OSError:
        lines = []
    split = next((m for m in map(SPLIT.search, lines) if m), None)
    if split is None:
        out["other"] = wall
        return out
    startup = 0.0 if split.group(1) == "?" else float(split.group(1).split()[0])
    imports, rest = float(split.group(2)), float(split.group(3))
    loading = [_utc(l) for l in lines if "Loading SparseEncoder model" in l]
    encoding = [_utc(l) for l in lines if "lsrbench.index.indexing: encoding" in l]
    load = max(0.0, encoding[0] - loading[0]) if loading and encoding else 0.0
    out.update(startup=startup, imports=imports, model_load=min(load, rest), compute=max(0.0, rest - load))
    out["other"] = max(0.0, wall - startup - imports - rest)
    return out


def split_by_rule(jobs: list[dict]) -> dict[str, dict]:
    """Per rule: job count and the sum of each part over its jobs (seconds)."""
    rules: dict[str, dict] = defaultdict(lambda: dict.fromkeys(("jobs", *FIELDS), 0.0))
    for job in jobs:
        row = rules[job["rule"]]
        row["jobs"] += 1
        for name, value in job_split(job).items():
            row[name] += value
    return {rule: {k: (int(v) if k == "jobs" else round(v, 1)) for k, v in row.items()}
            for rule, row in sorted(rules.items(), key=lambda kv: -kv[1]["wall"])}


def totals(rules: dict[str, dict]) -> dict:
    """Every rule together, and the fixed share (start-up, imports, model load, other) of job time."""
    total = {name: round(sum(r[name] for r in rules.values()), 1) for name in ("jobs", *FIELDS)}
    fixed = total["startup"] + total["imports"] + total["model_load"] + total["other"]
    total["fixed_share"] = round(fixed / total["wall"], 3) if total["wall"] else None
    return total


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", help="a snakemake run's console log")
    parser.add_argument("--json", help="write the split here as JSON")
    args = parser.parse_args(argv)
    rules = split_by_rule(snakemake_jobs(open(args.log, encoding="utf-8").read().splitlines()))
    summary = {"log": args.log, "job_seconds_by_rule": rules, "all_jobs": totals(rules)}
    print(f"{'rule':22s} {'jobs':>4s} " + " ".join(f"{f:>10s}" for f in FIELDS))
    for rule, row in [*rules.items(), ("all", summary["all_jobs"])]:
        print(f"{rule:22s} {row['jobs']:4d} " + " ".join(f"{row[f]:10.1f}" for f in FIELDS))
    print(f"fixed share of job time (start-up, imports, model load, other): {summary['all_jobs']['fixed_share']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(summary, fh, indent=2)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
