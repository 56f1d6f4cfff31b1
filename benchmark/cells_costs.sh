#!/usr/bin/env bash
# The tiny default's cost page (docs/cells-tiny.md) from a quiet calibration, held against the job
# seconds of a finished tiny default run (x1.5). On a quiet machine, from the repository root, after
# the tiny default ran there (`snakemake --cores 2 --config mirror=MIRROR`):
#     bash benchmark/cells_costs.sh [MIRROR] [RESULTS]        (defaults: ../shared, results)
# lsrbench cells refuses a calibration that was disturbed (noisy): nothing is published then.
set -euo pipefail
cd "$(dirname "$0")/.."
mirror=${1:-../shared}
results=${2:-results}
lsrbench plan --mirror "$mirror" --json benchmark/results/plan-tiny_default.json > benchmark/results/plan-tiny_default.md
# a disturbed calibration is refused (its line says why): no verdict, status 2, the page as it was
lsrbench cells --expected config/expected/tiny.yaml --plan benchmark/results/plan-tiny_default.json > docs/cells-tiny.md.new \
    || { rm -f docs/cells-tiny.md.new; exit 2; }
mv docs/cells-tiny.md.new docs/cells-tiny.md
python benchmark/cells_vs_measured.py "$results"
