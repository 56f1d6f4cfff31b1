#!/usr/bin/env bash
# Wall time of the embedded tiny default from scratch, and of regenerating table1.md from a
# complete cache. Writes benchmark/results/tiny_default.json (with the per-rule split of the job
# time into start-up, imports, model load and compute: benchmark/job_split.py), and keeps the run's
# metrics.csv as benchmark/results/tiny_default-metrics.csv (the CPU numbers gpu.sh puts its CUDA
# run beside).
#   bash benchmark/tiny_default.sh [MIRROR]     (default mirror: ../shared)
set -euo pipefail
cd "$(dirname "$0")/.."
mirror=${1:-../shared}
rm -rf results
mkdir -p benchmark/results
t0=$(date +%s.%N)
snakemake --cores 2 --config mirror="$mirror" > benchmark/results/tiny_default.log 2>&1
t1=$(date +%s.%N)
python benchmark/job_split.py benchmark/results/tiny_default.log --json benchmark/results/tiny_default-split.json
cp results/metrics.csv benchmark/results/tiny_default-metrics.csv
rm -f results/table1.md
snakemake --cores 2 results/table1.md --config mirror="$mirror" >> benchmark/results/tiny_default.log 2>&1
t2=$(date +%s.%N)
python - "$t0" "$t1" "$t2" <<'PY'
import json, os, platform, subprocess, sys
t0, t1, t2 = map(float, sys.argv[1:])
import torch, sentence_transformers, transformers
out = {
    "command": "snakemake --cores 2 --config mirror=<mirror>   (from an empty results/)",
    "from_scratch_s": round(t1 - t0, 1),
    "regenerate_table1_s": round(t2 - t1, 1),
    "regenerate_command": "rm results/table1.md && snakemake --cores 2 results/table1.md",
    "cores": os.cpu_count(), "torch_threads": torch.get_num_threads(),
    "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                 "sentence-transformers": sentence_transformers.__version__},
    "platform": platform.platform(),
    "load_avg_at_end": list(os.getloadavg()),
    "job_split": json.load(open("benchmark/results/tiny_default-split.json")),
}
json.dump(out, open("benchmark/results/tiny_default.json", "w"), indent=2)
print(json.dumps(out, indent=2))
PY
