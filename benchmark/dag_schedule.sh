#!/usr/bin/env bash
# The embedded tiny default from scratch under two schedules, back to back on the same (quiet)
# machine, and whether both give the same tables:
#   all-cores   train and index jobs take every core (--cores N): one such job at a time
#   one-thread  train and index jobs take one thread each (--set-threads): N jobs side by side
# Writes benchmark/results/dag_schedule.json (+ one log per schedule).
#   bash benchmark/dag_schedule.sh [MIRROR] [CORES]     (defaults: ../shared, 2)
set -euo pipefail
cd "$(dirname "$0")/.."
mirror=${1:-../shared}
cores=${2:-2}
out=benchmark/results
keep=$(mktemp -d)
mkdir -p "$out"
for schedule in all-cores one-thread; do
    rm -rf results .snakemake
    extra=()
    if [ "$schedule" = one-thread ]; then
        extra=(--set-threads train=1 index=1 index_queries=1)
    fi
    t0=$(date +%s.%N)
    snakemake --cores "$cores" "${extra[@]}" --config mirror="$mirror" > "$out/dag_schedule_$schedule.log" 2>&1
    t1=$(date +%s.%N)
    echo "$t0 $t1" > "$keep/$schedule.time"
    mkdir -p "$keep/$schedule"
    cp results/table1.md results/table_beir.md results/metrics.csv results/norms.md "$keep/$schedule/"
    [ -f results/claims.md ] && cp results/claims.md "$keep/$schedule/"
done
python - "$keep" "$cores" <<'PY'
import filecmp, json, os, platform, sys
from pathlib import Path

import pandas as pd

keep, cores = Path(sys.argv[1]), int(sys.argv[2])
wall = {}
for schedule in ("all-cores", "one-thread"):
    t0, t1 = map(float, (keep / f"{schedule}.time").read_text().split())
    wall[schedule] = round(t1 - t0, 1)
a, b = keep / "all-cores", keep / "one-thread"
identical = {f.name: filecmp.cmp(f, b / f.name, shallow=False) for f in sorted(a.iterdir())}
ma, mb = (pd.read_csv(d / "metrics.csv", dtype={"k": str}) for d in (a, b))
key = ["backbone", "k", "dataset", "measure"]
both = ma.merge(mb, on=key, suffixes=("_all", "_one"))
diff = (both["value_all"] - both["value_one"]).abs()
out = {
    "command": f"snakemake --cores {cores} [--set-threads train=1 index=1 index_queries=1] --config mirror=<mirror>"
               "   (from an empty results/, each schedule once, back to back)",
    "wall_s": wall,
    "faster": min(wall, key=wall.get),
    "speedup_one_thread": round(wall["all-cores"] / wall["one-thread"], 3),
    "reports_byte_identical": identical,
    "metrics_rows": len(both), "metrics_max_abs_diff": float(diff.max()) if len(diff) else 0.0,
    "cores": cores, "machine_cores": os.cpu_count(), "load_avg_at_end": os.getloadavg(),
    "platform": platform.platform(),
}
Path("benchmark/results/dag_schedule.json").write_text(json.dumps(out, indent=2) + "\n")
print(json.dumps(out, indent=2))
PY
rm -rf "$keep"
