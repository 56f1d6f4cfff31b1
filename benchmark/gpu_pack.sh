#!/usr/bin/env bash
# Prepare .gpu/ (ignored by git) for a GPU machine that has no network and no ../shared:
#   .gpu/shared/models/splade-tiny-msmarco, .gpu/shared/data/vaswani   (copied from MIRROR)
#   .gpu/wheels/*.whl   (benchmark/gpu_wheels.txt: this project's packages a stock CUDA PyTorch
#                        image lacks, for CPython 3.12 on x86-64 Linux, from PyPI)
#   bash benchmark/gpu_pack.sh [MIRROR]       (default ../shared), then carry .gpu/ with the tree
# and run `bash benchmark/gpu.sh` there. About 50 MB in all.
set -euo pipefail
cd "$(dirname "$0")/.."
mirror=${1:-../shared}
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo '/.gpu/' >> .git/info/exclude; }
mkdir -p .gpu/shared/models .gpu/shared/data .gpu/wheels
for part in models/splade-tiny-msmarco data/vaswani; do
    [ -e "$mirror/$part" ] || { echo "gpu_pack.sh: error: $mirror/$part not found" >&2; exit 2; }
    rm -rf ".gpu/shared/$part" && cp -rL "$mirror/$part" ".gpu/shared/$part" && chmod -R u+w ".gpu/shared/$part"
done
platforms="--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64"
grep -v '^\s*#' benchmark/gpu_wheels.txt | grep -v '^\s*$' | while read -r req; do
    name=${req%%==*}
    if ls .gpu/wheels | grep -qi "^$(echo "$name" | tr '-' '_')-${req##*==}-"; then continue; fi
    # shellcheck disable=SC2086
    "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $platforms \
        -d .gpu/wheels "$req" 2>/dev/null \
        || "$PY" -m pip wheel -q --no-deps -w .gpu/wheels "$req"   # a pure-Python sdist (no wheel on PyPI)
done
du -sh .gpu
echo "carry .gpu (and run: bash benchmark/gpu.sh)"
