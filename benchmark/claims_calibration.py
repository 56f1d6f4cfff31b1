"""The claims engine's false-verdict rates under no effect and its power under the paper's effect
sizes (lsrbench.report.claims.calibration), for config/config.yaml, config/paper.yaml and a grid of
every claim type and selector. Writes benchmark/results/claims_calibration.json and prints the
Markdown tables docs/claims.md carries (tests/test_results_statements.py checks that they agree).

    python benchmark/claims_calibration.py [--draws 100] [--out benchmark/results/claims_calibration.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

from lsrbench.report.claims.calibration import (COUNTED, PAPER_SHAPED, Scenario, calibrate, claim_kinds, false_verdicts,
                                                grid_config, load_config, no_effect, paper_queries)

REPO = Path(__file__).resolve().parents[1]

# (ks, datasets, held-out selection, queries per dataset, ties): the grid's settings
GRID = [([1, 16], 1, False, 4, False), ([1, 16], 1, False, 93, False), ([1, 16], 1, True, 1000, False),
        ([1, 16], 13, False, 30, True), ([1, 2, 4, 8, 16], 1, False, 93, False),
        ([1, 2, 4, 8, 16], 1, True, 93, True), ([1, 2, 4, 8, 16], 13, False, 50, False),
        ([1, 2, 4, 8, 16], 13, True, 100, False)]
GRID_NORMS = {"a": 1.0, "b": 2.0, "c": 3.0}


def load(name: str) -> dict:
    return load_config(str(REPO / name))


def rows(config: dict, counts: dict, scenario: Scenario | None = None) -> list[dict]:
    kinds = claim_kinds(config)
    out = []
    for cid, c in counts.items():
        row = {"claim": cid, "kind": kinds[cid], "counts": {v: c[v] for v in COUNTED if c[v]},
               "false": false_verdicts(c, kinds[cid])}
        if scenario is not None and cid in scenario.expected:
            row["expected"], row["as_expected"] = scenario.expected[cid], c[scenario.expected[cid]]
        out.append(row)
    return out


def run(draws: int, paper_cap: int, grid_draws: int, out: Path, resume: bool = False) -> dict:
    """Every section, the record written after each (a long run keeps what it finished; with resume,
    the sections a record of the same sizes at out already holds are kept, not drawn again: each
    section has its own seed, so a section drawn again comes out the same)."""
    record = {"draws": draws, "grid_draws": grid_draws, "paper_cap": paper_cap, "configs": {}, "grid": []}
    if resume and out.exists():
        old = json.loads(out.read_text(encoding="utf-8"))
        if old.get("draws") == draws:  # the tiny default's section does not depend on the caps
            record["configs"] = {n: e for n, e in old["configs"].items() if "paper_shaped" in e
                                 and (n != "config/paper.yaml" or old.get("paper_cap") == paper_cap)}
        if old.get("grid_draws") == grid_draws:
            record["grid"] = old["grid"]
    for name, cap, resamples in (("config/config.yaml", None, None), ("config/paper.yaml", paper_cap, 1000)):
        if name in record["configs"]:
            continue
        config = load(name)
        sizes = 93 if cap is None else paper_queries(config, cap)
        entry = {"queries": sizes, "resamples": resamples or config["claims"]["resamples"]}
        for label, scenario, seed in (("no_effect", no_effect(name), 1), ("paper_shaped", PAPER_SHAPED[name], 2)):
            t0 = time.time()
            counts = calibrate(config, scenario, draws, seed, sizes, resamples=resamples)
            entry[label] = {"rows": rows(config, counts, scenario if label == "paper_shaped" else None),
                            "seconds": round(time.time() - t0, 1)}
            print(f"{name} {label}: {entry[label]['seconds']} s", flush=True)
            record["configs"][name] = entry
            _save(record, out)
    for ks, datasets, held_out, queries, ties in GRID[len(record["grid"]):]:
        config = grid_config(ks, datasets, held_out)
        t0 = time.time()
        counts = calibrate(config, Scenario("no effect", norms=GRID_NORMS), grid_draws, 3, queries, ties=ties,
                           resamples=1000, reference={"optimal_k": {"a": ks[-1]}})
        record["grid"].append({"ks": ks, "datasets": datasets, "held_out": held_out, "queries": queries, "ties": ties,
                               "rows": rows(config, counts), "seconds": round(time.time() - t0, 1)})
        print(f"grid {ks} {datasets} {held_out} {queries} {ties}: {record['grid'][-1]['seconds']} s", flush=True)
        _save(record, out)
    return record


def _save(record: dict, out: Path) -> None:
    record["machine"] = {"platform": platform.platform(), "cores": os.cpu_count(), "load_avg_now": os.getloadavg()}
    out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def markdown(record: dict) -> str:
    """docs/claims.md's calibration tables, from the record."""
    draws = record["draws"]
    lines = [f"| config | claim | no effect: holds / fails of {draws} | paper-shaped: the paper's verdict in |",
             "| --- | --- | --- | --- |"]
    for name, entry in record["configs"].items():
        paper = {r["claim"]: r for r in entry["paper_shaped"]["rows"]}
        for r in entry["no_effect"]["rows"]:
            c = r["counts"]
            null = "untested" if r["kind"] == "untested" else f"{c.get('holds', 0)} / {c.get('fails', 0)}"
            if r["kind"] == "non-inferiority":
                null += " (holds is right: equal runs match)"
            p = paper.get(r["claim"], {})
            power = f"{p['as_expected']} ({p['expected']})" if "expected" in p else "–"
            lines.append(f"| {name} | `{r['claim']}` | {null} | {power} |")
    lines += ["", f"| grid: ks, datasets, selection, queries, ties | most false verdicts of {record['grid_draws']} (claim) |",
              "| --- | --- |"]
    for g in record["grid"]:
        worst = max(g["rows"], key=lambda r: r["false"])
        setting = (f"{{{', '.join(map(str, g['ks']))}}}, {g['datasets']}, {'held-out' if g['held_out'] else 'same'}, "
                   f"{g['queries']}, {'ties' if g['ties'] else '–'}")
        lines.append(f"| {setting} | {worst['false']} (`{worst['claim']}`) |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=100, help="draws per config and scenario")
    parser.add_argument("--paper-cap", type=int, default=200, help="most queries per dataset of the paper config")
    parser.add_argument("--grid-draws", type=int, default=50, help="draws per setting of the grid")
    parser.add_argument("--out", default=str(REPO / "benchmark" / "results" / "claims_calibration.json"))
    parser.add_argument("--resume", action="store_true", help="keep the sections the record at --out already holds")
    parser.add_argument("--markdown", help="print the tables of this record and exit")
    args = parser.parse_args()
    if args.markdown:
        print(markdown(json.loads(Path(args.markdown).read_text(encoding="utf-8"))), end="")
        return
    command = (f"python benchmark/claims_calibration.py --draws {args.draws} --paper-cap {args.paper_cap} "
               f"--grid-draws {args.grid_draws}" + (" --resume" if args.resume else ""))
    record = run(args.draws, args.paper_cap, args.grid_draws, Path(args.out), args.resume)
    record["command"] = command
    _save(record, Path(args.out))
    print(markdown(record), end="")


if __name__ == "__main__":
    main()
