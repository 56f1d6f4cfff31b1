#!/usr/bin/env bash
# The tiny default's design on seeds it never saw (config/confirmation.yaml: a new MLM re-fit seed,
# three new training seeds), run in a clone of this repository's HEAD with this checkout's
# virtualenv (the clone's sources first on PYTHONPATH, so later edits here change nothing there).
# The clone and its results/ stay in benchmark/.cache/confirmation/ (git-ignored): run again at a
# later commit, the finished runs are reused and only the reports are made again (with that
# commit's claims engine). Copies metrics.csv (one row per run, seed, dataset and measure),
# table1.md, claims.md and claims.json into benchmark/results/confirmation/ and writes record.json
# (command, commit, wall time, load). CPU-heavy (15 trainings): `nice` is applied.
#   bash benchmark/confirmation.sh [MIRROR] [CORES]      (default: ../shared, 2)
set -euo pipefail
cd "$(dirname "$0")/.."
mirror=$(realpath "${1:-../shared}")
cores=${2:-2}
repo=$PWD
work=$repo/benchmark/.cache/confirmation
out=$repo/benchmark/results/confirmation
mkdir -p "$work" "$out"
if [ ! -d "$work/repo/.git" ]; then git clone -q "$repo" "$work/repo"; fi
git -C "$work/repo" fetch -q "$repo" HEAD && git -C "$work/repo" checkout -q --detach FETCH_HEAD
commit=$(git -C "$work/repo" rev-parse HEAD)
cd "$work/repo"
# the reports (not addressed by content) are made again from the finished runs by this commit's code
rm -f results/metrics.csv results/metrics.sources.json results/table1.md results/table1.cells.json \
      results/table_beir.md results/claims.md results/claims.json
t0=$(date +%s.%N)
PYTHONPATH="$work/repo/src" nice -n 10 snakemake --cores "$cores" --configfile config/confirmation.yaml \
    --config mirror="$mirror" > "$work/snakemake-$commit.log" 2>&1 || { tail -40 "$work/snakemake-$commit.log"; exit 1; }
t1=$(date +%s.%N)
cp results/metrics.csv results/table1.md results/claims.md results/claims.json "$out/"
PYTHONPATH="$work/repo/src" python - "$t0" "$t1" "$commit" "$cores" "$out" <<'PY'
import json, os, platform, sys
t0, t1, commit, cores, out = sys.argv[1:]
path = f"{out}/record.json"
record = json.load(open(path)) if os.path.exists(path) else {"runs": []}
record.update({
    "command": f"bash benchmark/confirmation.sh MIRROR {cores}  (in a clone of the commit: "
               f"nice -n 10 snakemake --cores {cores} --configfile config/confirmation.yaml --config mirror=MIRROR)",
    "config": "config/confirmation.yaml", "commit": commit,
})
record["runs"].append({"commit": commit, "wall_s": round(float(t1) - float(t0), 1),
                       "load_avg_after": list(os.getloadavg()), "cores": int(cores), "platform": platform.platform()})
json.dump(record, open(path, "w"), indent=1)
PY
echo "confirmation at $commit: $out"
