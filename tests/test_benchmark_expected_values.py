"""``benchmark/expected_values.py tiny`` with seeds from several seeds runs (``--seeds-run CPU=METRICS``,
each made on its own CPU model): the interval is over all their seeds, each seed's exact value is
kept under the CPU model that made it. Checked against config/expected/tiny.yaml, made from the same
ten seeds with the six Xeon seeds in one file."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import yaml

from helpers.paths import REPO

XEON = "Intel(R) Xeon(R) Processor"


def test_seeds_from_two_runs_give_the_one_records_intervals_and_keep_each_cpus_exact_values(tmp_path):
    record = pd.read_csv(REPO / "benchmark/results/tiny_default_seeds-metrics.csv", dtype=str)
    for name, seeds in (("a", ["42", "43", "44"]), ("b", ["45", "46", "47"])):
        record[record["seed"].isin(["-", *seeds])].to_csv(tmp_path / f"{name}.csv", index=False)
    proc = subprocess.run([sys.executable, "benchmark/expected_values.py", "tiny", str(tmp_path / "a.csv"), "--machine",
                           XEON, "--seeds-run", f"CPU B={tmp_path / 'b.csv'}", "--seeds-run",
                           "AMD EPYC=benchmark/results/tiny_default_seeds_epyc-metrics.csv", "--verdicts",
                           "benchmark/results/tiny_default-claims-amd-epyc.json", "--reproduced",
                           "AMD EPYC=benchmark/results/tiny_default-metrics-amd-epyc.csv"],
                          cwd=REPO, capture_output=True, text=True, check=True)
    split, one = yaml.safe_load(proc.stdout), yaml.safe_load((REPO / "config/expected/tiny.yaml").read_text())
    assert split["measured"]["seeds_by_cpu"] == {XEON: "42, 43, 44", "CPU B": "45, 46, 47",
                                                 "AMD EPYC": "48, 49, 50, 51"}
    assert (split["joint"], split["seeds_rule"], split["bases"]) == (one["joint"], one["seeds_rule"], one["bases"])
    for section in ("table1", "claims"):
        assert len(split[section]) == len(one[section])
        for got, want in zip(split[section], one[section]):
            assert {k: v for k, v in got.items() if k != "exact"} == {k: v for k, v in want.items() if k != "exact"}
            if "exact" in want:
                xeon = want["exact"][XEON]
                assert got["exact"] == {XEON: {s: xeon[s] for s in ("42", "43", "44")},
                                        "CPU B": {s: xeon[s] for s in ("45", "46", "47")},
                                        "AMD EPYC": want["exact"]["AMD EPYC"]}
                assert set(want["exact"]["AMD EPYC"]) == {"42", "48", "49", "50", "51"}
