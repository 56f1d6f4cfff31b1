#!/usr/bin/env bash
# The GPU numbers of issue 21 in one command: encode and training step side by side with
# sentence-transformers, bf16 vs fp32 agreement, the tiny default with use_gpu: true
# (benchmark/gpu.py; writes benchmark/results/gpu-<device>[-quick].json and prints a table).
#   bash benchmark/gpu.sh                        # on a GPU machine (about 8 minutes on one H200)
#   bash benchmark/gpu.sh --device cpu --quick   # anywhere: the same code paths (CI's slow suite)
# On a machine without network or without this project's packages: `bash benchmark/gpu_pack.sh`
# first, where ../shared and PyPI are, then carry .gpu/ along; the wheels in .gpu/wheels are
# installed here into a scratch folder first on PYTHONPATH (the machine's own torch stays).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$(command -v python3 || command -v python)}
if [ -x .venv/bin/python ] && [ -z "${PYTHON:-}" ]; then PY=.venv/bin/python; fi
if compgen -G ".gpu/wheels/*.whl" > /dev/null; then
    # only the carried wheels whose distribution this Python lacks or has in another version
    mapfile -t wanted < <("$PY" - .gpu/wheels/*.whl <<'PY'
import importlib.metadata as md, re, sys
for wheel in sys.argv[1:]:
    name, version = re.match(r"([^-]+)-([^-]+)-", wheel.rsplit("/", 1)[-1]).groups()
    try:
        if md.version(name) == version:
            continue
    except md.PackageNotFoundError:
        pass
    print(wheel)
PY
)
    if [ "${#wanted[@]}" -gt 0 ]; then
        site=${TMPDIR:-/tmp}/lsrbench-gpu-site
        echo "gpu.sh: installing ${#wanted[@]} carried wheels into $site"
        "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" "${wanted[@]}"
        export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
    fi
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
# nothing is fetched: every model is a local folder (a hub lookup on a machine without network only waits)
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TQDM_DISABLE=${TQDM_DISABLE:-1}
exec "$PY" benchmark/gpu.py "$@"
