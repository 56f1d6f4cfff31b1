"""The claims engine's false-verdict rates under no effect and its power under the paper's effect sizes
(lsrbench.report.claims.calibration), for config/config.yaml and config/paper.yaml at 50, 200 and 1,000
queries per dataset (each dataset at most its real test set), every trained model carrying its own
training-seed offset at the measured seed sd (calibration.MEASURED_SEED_SD). Writes a record per run
and prints the Markdown table of benchmark/results/claims_calibration.md (tests/test_results_statements.py checks that
they agree); sections are drawn until --until (UTC, HH:MM) and the record says how many draws each got.

    python benchmark/claims_calibration.py --config config/config.yaml --caps 50 200 1000 --draws 200 --resamples 2000 \
        --power-draws 100 --out benchmark/results/claims_calibration-tiny.json [--until 14:00]
    python benchmark/claims_calibration.py --merge A.json B.json --out benchmark/results/claims_calibration.json
"""

from __future__ import annotations

import os

# One BLAS thread (set before numpy loads): threaded OpenBLAS spinning on a shared 2-core machine made
# the tests' sign-flip products 50x slower; the products are the same (benchmark/results/notes/claims_calibration.md).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import datetime as dt  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

from scipy import stats  # noqa: E402

from lsrbench.report import stats as report_stats  # noqa: E402
from lsrbench.report.claims.calibration import (COUNTED, MEASURED_SEED_SD, PAPER_SHAPED, calibrate, claim_kinds,  # noqa: E402
                                                false_verdicts, load_config, no_effect, paper_queries)

# Every draw tests the same query counts with the same claims.seed, so every test draws the same
# sign vectors: kept for the whole run (the paper config at 1,000 queries x 2,000 resamples: 17.5M
# entries, 140 MB) instead of drawn again per test; the same arrays, cached or not.
report_stats.CACHED_SIGNS = 20_000_000

REPO = Path(__file__).resolve().parents[1]
CHUNK = 1  # draws per call of calibrate: the deadline is checked between them


def load(name: str) -> dict:
    return load_config(str(REPO / name))


def upper95(false: int, draws: int) -> float:
    """The one-sided 95 % Clopper-Pearson upper bound of a false rate."""
    return 1.0 if false == draws else float(stats.beta.ppf(0.95, false + 1, draws - false))


def rows(config: dict, counts: dict, draws: int, expected: dict | None) -> list[dict]:
    kinds = claim_kinds(config)
    out = []
    for cid, c in counts.items():
        row = {"claim": cid, "kind": kinds[cid], "counts": {v: c[v] for v in COUNTED if c[v]}}
        if expected is None:
            row["false"] = false_verdicts(c, kinds[cid])
            row["upper95"] = round(upper95(row["false"], draws), 4)
        elif cid in expected:
            row["expected"], row["as_expected"] = expected[cid], c[expected[cid]]
        out.append(row)
    return out


def section(name: str, cap: int, label: str, draws: int, deadline: float | None, resamples: int) -> dict:
    """One (config, queries, scenario) cell: up to ``draws`` draws, fewer where the deadline comes."""
    config = load(name)
    sizes = cap if name == "config/config.yaml" else paper_queries(config, cap)
    scenario = no_effect(name) if label == "no_effect" else PAPER_SHAPED[name]
    seed = {"no_effect": 1, "paper_shaped": 2}[label] * 10000 + cap
    total, done, t0 = {spec["id"]: Counter() for spec in config["claims"]["list"]}, 0, time.time()
    while done < draws and (deadline is None or time.time() < deadline):
        n = min(CHUNK, draws - done)
        for cid, c in calibrate(config, scenario, n, seed + done, sizes, resamples=resamples,
                                offsets=MEASURED_SEED_SD).items():
            total[cid].update(c)
        done += n
    return {"config": name, "cap": cap, "queries": sizes, "scenario": label, "draws": done, "planned": draws,
            "rows": rows(config, total, done, None if label == "no_effect" else scenario.expected),
            "seconds": round(time.time() - t0, 1), "load_avg_end": os.getloadavg()}


def git_commit() -> dict:
    """The commit the run is made from and whether its tracked files are as committed."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()

    return {"commit": git("rev-parse", "HEAD"), "clean": not git("status", "--porcelain", "--untracked-files=no")}


def run(config: str, caps: list[int], draws: int, power_draws: int, out: Path, deadline: float | None,
        command: str, resamples: int, section_seconds: float | None = None) -> dict:
    record = {"command": command, **git_commit(), "resamples": resamples,
              "offsets": dataclasses.asdict(MEASURED_SEED_SD), "started": dt.datetime.now(dt.timezone.utc).isoformat(
                  timespec="seconds"), "load_avg_start": os.getloadavg(), "sections": []}
    for cap in caps:
        for label, n in (("no_effect", draws), ("paper_shaped", power_draws)):
            ends = [t for t in (deadline, section_seconds and time.time() + section_seconds) if t]
            record["sections"].append(section(config, cap, label, n, min(ends) if ends else None, resamples))
            s = record["sections"][-1]
            print(f"{config} {cap} {label}: {s['draws']} draws, {s['seconds']} s", flush=True)
            _save(record, out)
    return record


def _save(record: dict, out: Path) -> None:
    record["machine"] = {"platform": platform.platform(), "cores": os.cpu_count(), "load_avg_now": os.getloadavg(),
                         "nice": os.nice(0)}
    record["saved"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def merge(files: list[str], out: Path) -> dict:
    """The records' sections in one, each with its resamples; a cell drawn in several records: the
    last file's (a section with no draws is left out)."""
    parts = [json.loads(Path(f).read_text(encoding="utf-8")) for f in files]
    cells: dict = {}
    for part in parts:
        for s in part["sections"]:
            if s["draws"]:
                cells[(s["config"], s["cap"], s["scenario"])] = {**s, "resamples": part["resamples"]}
    record = {"commands": [p["command"] for p in parts], "commits": sorted({p.get("commit", "?") for p in parts}),
              "clean": all(p.get("clean") for p in parts), "offsets": parts[0]["offsets"],
              "sections": list(cells.values()), "machine": parts[-1]["machine"]}
    out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return record


def markdown(record: dict) -> str:
    """docs/claims.md's calibration table, from the record: per claim, false verdicts of the draws
    under no effect (with the 95 % upper bound of the rate) and the paper's verdict under its effects."""
    cells: dict = {}
    caps: dict[str, list[int]] = {}
    for s in record["sections"]:
        caps.setdefault(s["config"], [])
        if s["cap"] not in caps[s["config"]]:
            caps[s["config"]].append(s["cap"])
        for r in s["rows"]:
            cells.setdefault((s["config"], r["claim"]), {"kind": r["kind"]})[(s["cap"], s["scenario"])] = (
                r, s["draws"], s.get("resamples", record.get("resamples")))
    lines = []
    for name, config_caps in caps.items():
        head = [f"false at {c} (≤ 95 % bound)" for c in config_caps] + [f"paper's verdict at {c}" for c in config_caps]
        lines += [f"{name}:", "", "| claim | " + " | ".join(head) + " |", "|" + " --- |" * (len(head) + 1)]
        for (cfg, claim), cell in cells.items():
            if cfg != name:
                continue
            null, power = [], []
            for c in config_caps:
                r, n, _ = cell.get((c, "no_effect"), (None, 0, None))
                null.append("–" if r is None else "untested" if cell["kind"] == "untested"
                            else f"{r['false']}/{n} (≤ {100 * r['upper95']:.1f} %)")
                r, n, resamples = cell.get((c, "paper_shaped"), (None, 0, None))
                power.append(f"{r['as_expected']}/{n} {r['expected']} ({resamples} resamples)"
                             if r and "expected" in r else "–")
            # no backtick first: docs/claims.md's claim-type rows are the ones that start "| `"
            lines.append(f"| {claim} | " + " | ".join(null + power) + " |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--caps", type=int, nargs="+", default=[50, 200, 1000], help="most queries per dataset")
    parser.add_argument("--draws", type=int, default=200, help="draws per cell under no effect")
    parser.add_argument("--power-draws", type=int, default=100, help="draws per cell under the paper's effects")
    parser.add_argument("--resamples", type=int, default=1000,
                        help="the tests' Monte Carlo resamples per draw (the configs' 10,000 cost 10x the time)")
    parser.add_argument("--until", help="UTC HH:MM: no new chunk of draws starts after it")
    parser.add_argument("--section-seconds", type=float, help="no new draw of a section starts after this many seconds")
    parser.add_argument("--out", default=str(REPO / "benchmark" / "results" / "claims_calibration.json"))
    parser.add_argument("--merge", nargs="+", help="combine these records into --out")
    parser.add_argument("--markdown", help="print the table of this record and exit")
    args = parser.parse_args()
    if args.markdown:
        print(markdown(json.loads(Path(args.markdown).read_text(encoding="utf-8"))), end="")
        return
    if args.merge:
        print(markdown(merge(args.merge, Path(args.out))), end="")
        return
    deadline = None
    if args.until:
        now = dt.datetime.now(dt.timezone.utc)
        hh, mm = map(int, args.until.split(":"))
        deadline = now.replace(hour=hh, minute=mm, second=0, microsecond=0).timestamp()
    command = "python benchmark/claims_calibration.py " + " ".join(sys.argv[1:])
    record = run(args.config, args.caps, args.draws, args.power_draws, Path(args.out), deadline, command, args.resamples, args.section_seconds)
    print(markdown(record), end="")


if __name__ == "__main__":
    main()
