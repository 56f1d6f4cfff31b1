"""Whether a version of benchmark/claims_calibration.py gives the verdicts another gave: the script is
loaded as its run loads it (with whatever it sets up before numpy), then a few draws per (config,
queries, scenario) cell, seeded as its sections seed them, and every claim's verdict, p, Holm-adjusted
p and difference written as JSON (floats as repr: equal files, equal bits). Run with two versions and
compare the files (cmp).

    git show HEAD~1:benchmark/claims_calibration.py > /tmp/before.py
    python benchmark/claims_calibration_same.py /tmp/before.py /tmp/before.json
    python benchmark/claims_calibration_same.py benchmark/claims_calibration.py /tmp/after.json && cmp /tmp/before.json /tmp/after.json
"""

from __future__ import annotations

import argparse
import json
from importlib import util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("script", help="a version of benchmark/claims_calibration.py")
    parser.add_argument("out")
    parser.add_argument("--draws", type=int, default=2, help="draws per cell (the second reuses what the first kept)")
    parser.add_argument("--resamples", type=int, default=2000)
    args = parser.parse_args()
    spec = util.spec_from_file_location("claims_calibration_under_test", args.script)
    bench = util.module_from_spec(spec)
    spec.loader.exec_module(bench)  # first: it may set the BLAS threads before numpy loads

    import numpy as np

    from lsrbench.report.claims.calibration import (MEASURED_SEED_SD, PAPER_SHAPED, load_config, no_effect, paper_queries,
                                                    simulate)
    from lsrbench.report.claims.engine import evaluate_claims

    rows = []
    for name in ("config/config.yaml", "config/paper.yaml"):
        config = load_config(str(REPO / name))
        claims_cfg = {**config["claims"], "resamples": args.resamples}
        for cap in (50, 200, 1000):
            sizes = cap if name == "config/config.yaml" else paper_queries(config, cap)
            for label in ("no_effect", "paper_shaped"):
                scenario = no_effect(name) if label == "no_effect" else PAPER_SHAPED[name]
                seed = {"no_effect": 1, "paper_shaped": 2}[label] * 10000 + cap  # as bench.section seeds its draws
                for draw in range(args.draws):
                    ev = simulate(config, scenario, np.random.default_rng(seed + draw), sizes, offsets=MEASURED_SEED_SD)
                    rows += [[name, cap, label, draw, v.id, v.verdict, repr(v.p_value), repr(v.p_adjusted), repr(v.diff)]
                             for v in evaluate_claims(ev, claims_cfg, intervals=False)]
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=0)
        f.write("\n")
    print(f"{len(rows)} verdicts -> {args.out}")


if __name__ == "__main__":
    main()
