"""The tiny default's claims under no effect, evaluated by another revision's claims engine on the
very draws this one is calibrated on (lsrbench.report.claims.calibration): what the engine said
before issue 37 (`mkdir /tmp/before && git archive 4e850cd src | tar -x -C /tmp/before`, then
`--engine-src /tmp/before/src`).
The draws are made here and handed as per-query frames to a subprocess that imports the other
revision's package first (PYTHONPATH). Writes benchmark/results/claims_calibration-before.json.

    python benchmark/claims_calibration_before.py --engine-src DIR [--draws 100] [--label REV]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

# Run in the subprocess: every draw through the other revision's evaluate_claims.
EVALUATE = '''
import collections, json, pickle, sys
import pandas as pd
import lsrbench
from lsrbench.report.claims.engine import evaluate_claims
from lsrbench.report.claims.evidence import Evidence

claims_cfg, draws = pickle.load(open(sys.argv[1], "rb"))
counts = collections.defaultdict(collections.Counter)
for metrics, frames, norms, backbones, report in draws:
    perquery = {key: pd.concat([pd.DataFrame({"query_id": ids, "measure": m, "value": values}) for m, ids, values in v])
                for key, v in frames.items()}
    for verdict in evaluate_claims(Evidence(metrics, perquery, norms, backbones=backbones, report=report), claims_cfg):
        counts[verdict.id][verdict.verdict] += 1
print(json.dumps({"package": lsrbench.__file__, "counts": counts}))
'''


def draws(n: int, seed: int, resamples: int) -> tuple[dict, list]:
    from lsrbench.report.claims.calibration import load_config, no_effect, simulate

    config = load_config(str(REPO / "config" / "config.yaml"))
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        ev = simulate(config, no_effect("config/config.yaml"), rng, 93)
        frames: dict = {}
        for (run, k, ds, measure), series in ev._scores.items():
            frames.setdefault((run, k, ds), []).append((measure, series.index.tolist(), series.to_numpy()))
        out.append((ev.metrics, frames, ev.norms, ev.backbones, ev.report))
    return {**config["claims"], "resamples": resamples}, out


def evaluate(engine_src: str, claims_cfg: dict, made: list) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "draws.pkl"
        path.write_bytes(pickle.dumps((claims_cfg, made)))
        env = {**os.environ, "PYTHONPATH": engine_src}
        proc = subprocess.run([sys.executable, "-c", EVALUATE, str(path)], env=env, capture_output=True, text=True,
                              check=True)
    return json.loads(proc.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine-src", required=True, help="the other revision's src/ folder")
    parser.add_argument("--label", default="before", help="what the other revision is (a commit)")
    parser.add_argument("--draws", type=int, default=100)
    parser.add_argument("--out", default=str(REPO / "benchmark" / "results" / "claims_calibration-before.json"))
    args = parser.parse_args()
    claims_cfg, made = draws(args.draws, 21, 1000)
    record = {"command": f"python benchmark/claims_calibration_before.py --engine-src DIR --label {args.label} "
                         f"--draws {args.draws}", "draws": args.draws, "seed": 21, "resamples": 1000,
              "scenario": "no effect, config/config.yaml, 93 queries",
              "engines": {args.label: evaluate(args.engine_src, claims_cfg, made)["counts"],
                          "this revision": evaluate(str(REPO / "src"), claims_cfg, made)["counts"]}}
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(record["engines"], indent=1))


if __name__ == "__main__":
    main()
