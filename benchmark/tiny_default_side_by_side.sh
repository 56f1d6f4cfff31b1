#!/usr/bin/env bash
# The tiny default from scratch with two revisions side by side on the same machine (issue 21.3):
# each revision cloned from this repository into a scratch folder and run with this checkout's
# virtualenv (its own sources first on PYTHONPATH), in alternating order (old new new old for 2
# runs each), from an empty results/ every time. Then table1.md, metrics.csv and claims.md of the
# two revisions are compared byte for byte (cmp), and each run's per-rule job split is kept.
# Writes benchmark/results/tiny_default_side_by_side.json. Time it on quiet cores only.
# KEEP=1 keeps the scratch folder (its path is printed), e.g. for benchmark/plan_vs_measured.py
# on the new revision's last run (in <scratch>/new).
#   bash benchmark/tiny_default_side_by_side.sh OLD_REV NEW_REV [RUNS_EACH] [MIRROR]
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2 runs=${3:-2}
mirror=$(realpath "${4:-../shared}")
work=$(mktemp -d "${TMPDIR:-/tmp}/lsrbench-sbs.XXXXXX")
if [ -z "${KEEP:-}" ]; then trap 'rm -rf "$work"' EXIT; else echo "scratch folder (kept): $work"; fi
repo=$PWD
for side in old new; do
    rev=${!side}
    git clone -q "$repo" "$work/$side" && git -C "$work/$side" checkout -q "$rev"
done
order=()
for ((i = 0; i < runs; i++)); do
    if ((i % 2 == 0)); then order+=(old new); else order+=(new old); fi
done
: > "$work/walls.tsv"
n=0
for side in "${order[@]}"; do
    n=$((n + 1))
    (
        cd "$work/$side" && rm -rf results .snakemake
        t0=$(date +%s.%N)
        PYTHONPATH="$work/$side/src" snakemake --cores 2 --config mirror="$mirror" > "$work/$side-$n.log" 2>&1
        t1=$(date +%s.%N)
        PYTHONPATH="$work/$side/src" python "$repo/benchmark/job_split.py" "$work/$side-$n.log" --json "$work/$side-$n.split.json" > /dev/null
        printf '%s\t%s\t%s\t%s\n' "$n" "$side" "$(python -c "print(round($t1 - $t0, 1))")" "$(cut -d' ' -f1-3 /proc/loadavg)" >> "$work/walls.tsv"
    )
    echo "run $n ($side): $(tail -1 "$work/walls.tsv" | cut -f3) s"
done
python - "$work" "$old" "$new" "$(git -C "$work/old" rev-parse HEAD)" "$(git -C "$work/new" rev-parse HEAD)" <<'PY'
import filecmp, json, os, platform, statistics, sys
work, old, new, old_sha, new_sha = sys.argv[1:]
runs = []
for line in open(f"{work}/walls.tsv"):
    n, side, wall, load = line.rstrip("\n").split("\t")
    split = json.load(open(f"{work}/{side}-{n}.split.json"))
    runs.append({"run": int(n), "side": side, "wall_s": round(float(wall), 1), "load_avg_after": load,
                 "job_seconds": split["all_jobs"], "by_rule": split["job_seconds_by_rule"]})
walls = {s: [r["wall_s"] for r in runs if r["side"] == s] for s in ("old", "new")}
same = {f: filecmp.cmp(f"{work}/old/results/{f}", f"{work}/new/results/{f}", shallow=False)
        for f in ("table1.md", "metrics.csv", "claims.md")}
out = {
    "command": "bash benchmark/tiny_default_side_by_side.sh OLD NEW RUNS MIRROR "
               "(each run: snakemake --cores 2 --config mirror=MIRROR from an empty results/)",
    "old": {"rev": old, "commit": old_sha, "wall_s": walls["old"], "median_s": statistics.median(walls["old"])},
    "new": {"rev": new, "commit": new_sha, "wall_s": walls["new"], "median_s": statistics.median(walls["new"])},
    "new_over_old": round(statistics.median(walls["new"]) / statistics.median(walls["old"]), 3),
    "byte_identical": same, "runs": runs, "cores": os.cpu_count(), "platform": platform.platform(),
}
os.makedirs("benchmark/results", exist_ok=True)
json.dump(out, open("benchmark/results/tiny_default_side_by_side.json", "w"), indent=2)
print(json.dumps({k: out[k] for k in ("old", "new", "new_over_old", "byte_identical")}, indent=2))
PY
