#!/usr/bin/env bash
# The tiny default's headline runs (reference k = 1, x10 twin k = 1 and 16) on the full Vaswani
# collection beside the pooled subset the default evaluates on: the default (config/config.yaml)
# and config/full_corpus.yaml, one after the other, in a clone of this repository's HEAD with this
# checkout's virtualenv (the clone's sources first on PYTHONPATH). The full-corpus config reuses
# the default's trainings (only index, evaluate and BM25 run). FROM_RESULTS: a finished results/
# of the same code to start from (its content-addressed runs are what the default would train:
# copied in, nothing retrained). Writes benchmark/results/full_corpus/: each config's table1.md,
# metrics.csv, chance.json, claims.md and claims.json (pooled-*, full-*), side_by_side.md and record.json.
#   bash benchmark/full_corpus.sh [MIRROR] [FROM_RESULTS] [CORES]     (default: ../shared, none, 2)
set -euo pipefail
cd "$(dirname "$0")/.."
mirror=$(realpath "${1:-../shared}")
from=${2:-}
cores=${3:-2}
repo=$PWD
work=$repo/benchmark/.cache/full_corpus
out=$repo/benchmark/results/full_corpus
mkdir -p "$work" "$out"
if [ ! -d "$work/repo/.git" ]; then git clone -q "$repo" "$work/repo"; fi
git -C "$work/repo" fetch -q "$repo" HEAD && git -C "$work/repo" checkout -q --detach FETCH_HEAD
commit=$(git -C "$work/repo" rev-parse HEAD)
cd "$work/repo"
if [ -n "$from" ] && [ ! -d results/runs ]; then cp -a "$from" results; rm -rf results/html; fi
t0=$(date +%s.%N)
for side in pooled full; do
    configfile=$([ "$side" = pooled ] && echo config/config.yaml || echo config/full_corpus.yaml)
    PYTHONPATH="$work/repo/src" nice -n 10 snakemake --cores "$cores" --configfile "$configfile" \
        --config mirror="$mirror" > "$work/$side-$commit.log" 2>&1 || { tail -40 "$work/$side-$commit.log"; exit 1; }
    for f in table1.md metrics.csv chance.json claims.md claims.json; do cp "results/$f" "$out/$side-$f"; done
done
t1=$(date +%s.%N)
PYTHONPATH="$work/repo/src" python - "$out" "$commit" "$t0" "$t1" "$cores" <<'PY'
import json, os, sys
import pandas as pd
out, commit, t0, t1, cores = sys.argv[1:]
runs = [("BM25", "-"), ("splade-tiny", "1"), ("splade-tiny-x10", "1"), ("splade-tiny-x10", "16")]
measures = ["nDCG@10", "RR@10", "R@1000"]
sides = {side: pd.read_csv(f"{out}/{side}-metrics.csv", dtype={"k": str}) for side in ("pooled", "full")}
chance = {side: json.load(open(f"{out}/{side}-chance.json"))["datasets"]["vaswani"] for side in sides}
rows, record = [], {"runs": []}
for run, k in runs:
    entry = {"run": run, "k": k}
    for side, m in sides.items():
        sel = m[(m["backbone"] == run) & (m["k"] == k) & (m["dataset"] == "vaswani")]
        entry[side] = {x: float(sel.loc[sel["measure"] == x, "value"].iloc[0]) for x in measures}
    record["runs"].append(entry)
    rows.append(f"| {run} k={k} | " + " | ".join(f"{entry['pooled'][x]:.3f} | {entry['full'][x]:.3f}" for x in measures) + " |")
rows.append("| random ranking (expected) | " + " | ".join(
    f"{chance['pooled']['measures'][x]['expected']:.4f} | {chance['full']['measures'][x]['expected']:.4f}" for x in measures) + " |")
head = ("| run | " + " | ".join(f"{x} pooled | {x} full" for x in measures) + " |\n|---|" + "---:|" * (2 * len(measures)))
sizes = {s: f"{c['documents']:,} documents, {c['queries']} queries" for s, c in chance.items()}
text = (f"Pooled subset ({sizes['pooled']}) and full collection ({sizes['full']}), Vaswani, at commit {commit[:7]}:\n\n"
        + head + "\n" + "\n".join(rows) + "\n")
open(f"{out}/side_by_side.md", "w").write(text)
record.update({"command": f"bash benchmark/full_corpus.sh MIRROR FROM_RESULTS {cores}  (in a clone of the commit: "
                          "snakemake --configfile config/config.yaml, then --configfile config/full_corpus.yaml)",
               "commit": commit, "wall_s": round(float(t1) - float(t0), 1), "load_avg_after": list(os.getloadavg()),
               "documents": {s: c["documents"] for s, c in chance.items()},
               "chance": {s: {x: c["measures"][x]["expected"] for x in measures} for s, c in chance.items()}})
json.dump(record, open(f"{out}/record.json", "w"), indent=1)
print(text)
PY
