#!/usr/bin/env bash
# The locked environment (issue 28): every package of the resolved tree at an exact version with
# its hashes, resolved by uv from pyproject.toml's ranges, so that a clone installs what it
# installed when the recorded numbers were made. Writes:
#   requirements.lock               the README's and CI's install: CPU torch (2.13.0+cpu), the test,
#                                   mteb and tensorboard extras
#   envs/requirements-slurm.lock    the same plus the SLURM executor plugin (clusters, CI's SLURM step)
#   envs/requirements-cuda.lock     GPU machines: PyPI's CUDA torch 2.13.0 with its nvidia-* wheels,
#                                   the test, tensorboard and slurm extras
#   envs/lsrbench.yaml              the conda environment: the CUDA lock's exact versions (conda's pip
#                                   section installs the checkout too, and pip refuses an editable
#                                   requirement beside hashed ones)
# A lock keeps the versions it already has unless a range moved (uv prefers what the output file
# pins); `bash envs/drift.sh` tries the newest releases first, then UPGRADE=1 bash envs/lock.sh takes
# them. The SLURM and CUDA locks are resolved under requirements.lock's versions (constraints), so
# every lock agrees where they share a package. Needs uv (pip install uv) and a source of torch
# 2.13.0+cpu: a local folder of wheels (FIND_LINKS, default /opt/wheels where it exists) or
# PyTorch's CPU index.
#   bash envs/lock.sh
set -euo pipefail
cd "$(dirname "$0")/.."
find_links=${FIND_LINKS:-/opt/wheels}
if [ -d "$find_links" ]; then
    cpu_torch=(--find-links "$find_links")
else
    cpu_torch=(--extra-index-url https://download.pytorch.org/whl/cpu --index-strategy unsafe-best-match)
fi
upgrade=()
if [ -n "${UPGRADE:-}" ]; then upgrade=(--upgrade); fi
common=(--python-version 3.11 --python-platform x86_64-manylinux_2_28 --generate-hashes --quiet
        --custom-compile-command "bash envs/lock.sh" "${upgrade[@]}")
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
echo "torch==2.13.0+cpu" > "$tmp/cpu-torch"   # the CPU build: PyPI's torch 2.13.0 for Linux is the CUDA one

uv pip compile pyproject.toml "${common[@]}" --extra test --extra mteb --extra tensorboard \
    --override "$tmp/cpu-torch" "${cpu_torch[@]}" -o requirements.lock
# requirements.lock's versions without hashes: the constraints of the other two locks
sed -e '/^ *--hash/d' -e '/^ *#/d' -e 's/ \\$//' requirements.lock > "$tmp/locked"
uv pip compile pyproject.toml "${common[@]}" --extra test --extra mteb --extra tensorboard --extra slurm \
    --override "$tmp/cpu-torch" "${cpu_torch[@]}" --constraint "$tmp/locked" -o envs/requirements-slurm.lock
grep -v '^torch==' "$tmp/locked" > "$tmp/locked-but-torch"
uv pip compile pyproject.toml "${common[@]}" --extra test --extra tensorboard --extra slurm \
    --constraint "$tmp/locked-but-torch" -o envs/requirements-cuda.lock
# the temporary files' names in uv's "via" comments, made stable so a rerun changes only what changed
sed -i "s#$tmp/#envs/lock.sh:#g" requirements.lock envs/requirements-slurm.lock envs/requirements-cuda.lock

{
    echo "# Conda environment for cluster users running with \`snakemake --sdm conda\`: the exact versions"
    echo "# of envs/requirements-cuda.lock (written from it by envs/lock.sh; tests/test_lock.py checks it)."
    echo "name: lsrbench"
    echo "channels:"
    echo "  - conda-forge"
    echo "  - nodefaults"
    echo "dependencies:"
    echo "  - python=3.11"
    echo "  - pip"
    echo "  - pip:"
    grep -E '^[A-Za-z0-9_.-]+==' envs/requirements-cuda.lock | sed -e 's/ \\$//' -e 's/^/      - /'
    echo "      - -e .."
} > envs/lsrbench.yaml
echo "wrote requirements.lock, envs/requirements-slurm.lock, envs/requirements-cuda.lock, envs/lsrbench.yaml"
