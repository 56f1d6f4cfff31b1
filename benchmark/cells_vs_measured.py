"""docs/cells-tiny.md's cost per row against the job seconds a finished run measured.

    python benchmark/cells_vs_measured.py RESULTS_DIR [--page docs/cells-tiny.md] [--ratio 1.5] [--out NAME]

RESULTS_DIR: the ``results`` folder of a finished run of the page's config (its working directory,
the folder above it, holds ``.snakemake/metadata``). For every Table 1 row of the page with a model
(BM25 costs seconds), its train and index costs are read from the page's cost column and
compared with the mean measured wall seconds of that row's jobs (evaluate's, 1-2 s, printed beside them) (Snakemake's record of each, as
``lsrbench status`` and benchmark/plan_vs_measured.py read it). Exit 1 when a row has no cost or a
cost is more than ``--ratio`` times off either way, 2 (no verdict) when the run's own jobs of the same
work differ by more than that (timed under load); writes benchmark/results/<NAME>.json. CI runs it
right after the tiny default (.ci/run); run it on a run made on a quiet machine.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from common import command_line, machine_info, write_result
from plan_vs_measured import metadata_jobs

COST = re.compile(r"(train|index|evaluate) ([\d.]+(?:e[-+]?\d+)?) (h|s)\b")
RUN_OF_LOG = re.compile(r"^results/runs/([^/]+)/k([^/]+)/")


def page_costs(page: str) -> dict[tuple[str, str], dict[str, float | None]]:
    """(run, k) -> stage -> seconds of every Table 1 row of the page with a model (None: no cost on it)."""
    rows, table = {}, False
    for line in page.splitlines():
        if line.startswith("## "):
            table = line == "## Table 1"
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not table or len(cells) < 4 or cells[0] in ("row", "BM25") or set(cells[0]) <= {"-"}:
            continue
        found = {stage: float(value) * (3600 if unit == "h" else 1) for stage, value, unit in COST.findall(cells[-1])}
        rows[(cells[0], cells[1])] = {stage: found.get(stage) for stage in ("train", "index", "evaluate")}
    return rows


def measured_seconds(jobs: list[dict]) -> dict[tuple[str, str], dict[str, float]]:
    """(run, k) -> stage -> mean wall seconds of its measured jobs (their logs name the run folder)."""
    out: dict = {}
    for job in jobs:
        match = RUN_OF_LOG.match(job["log"] or "")
        if match:
            out.setdefault(match.groups(), {}).setdefault(job["stage"], []).append(job["seconds"])
    return {row: {stage: sum(v) / len(v) for stage, v in stages.items()} for row, stages in out.items()}


def disturbed(jobs: list[dict], ratio: float) -> list[str]:
    """Why the measured run was itself disturbed: one backbone's train jobs, and its index jobs, do the same
    work at every k (same steps; same corpus and queries), so wall times more than ``ratio`` apart measure
    other load (a quiet run's: 76-87 s and 71-95 s, plan_vs_measured.json). Evaluate is left out: its search
    grows with the vectors' density, which k changes (2.4-7.2 s there)."""
    from lsrbench.names import split_run_name

    groups: dict = {}
    for job in jobs:
        match = RUN_OF_LOG.match(job["log"] or "")
        if match and job["stage"] in ("train", "index"):
            groups.setdefault((split_run_name(match.group(1))[0], job["stage"]), []).append(job["seconds"])
    return [f"{backbone} {stage}: {min(v):.0f}-{max(v):.0f} s for the same work (x{max(v) / min(v):.2f})"
            for (backbone, stage), v in sorted(groups.items()) if min(v) > 0 and max(v) / min(v) > ratio]


# the costs the page is held to (issue 49: train and index); evaluate jobs of 1-2 s, which the page
# rounds to whole seconds, are printed beside them without a verdict
HELD = ("train", "index")


def compare(costs: dict, measured: dict, ratio: float) -> list[dict]:
    """One record per (row, stage): the page's seconds, the measured ones, their ratio and the verdict."""
    out = []
    for row, stages in costs.items():
        for stage, page_s in stages.items():
            real = (measured.get(row) or {}).get(stage)
            r = page_s / real if page_s and real else None
            why = ("no cost on the page" if page_s is None else "no measured job" if real is None
                   else None if 1 / ratio <= r <= ratio or stage not in HELD else f"x{r:.2f} off")
            out.append({"row": f"{row[0]}/k{row[1]}", "stage": stage, "page_s": page_s, "measured_s": real,
                        "ratio": r, "ok": why is None, "why": why})
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", help="the results folder of a finished run of the page's config")
    p.add_argument("--page", default="docs/cells-tiny.md")
    p.add_argument("--ratio", type=float, default=1.5, help="the most a cost may be off, either way (x)")
    p.add_argument("--out", default="cells_vs_measured", help="name of the JSON under benchmark/results/")
    args = p.parse_args(argv)
    results = Path(args.results).resolve()
    jobs = metadata_jobs(results.parent, results.name)
    checks = compare(page_costs(Path(args.page).read_text(encoding="utf-8")), measured_seconds(jobs), args.ratio)
    noise = disturbed(jobs, args.ratio)
    for c in checks:
        verdict = c["why"] or ("ok" if c["stage"] in HELD else "not held (seconds)")
        print(f"{c['row']} {c['stage']}: page {c['page_s']} s, measured {c['measured_s']} s: {verdict}")
    path = write_result(args.out, {"command": command_line(), "machine": machine_info(), "page": args.page,
                                   "results": str(results), "ratio": args.ratio, "checks": checks, "disturbed": noise})
    print(f"wrote {path}")
    if noise:
        print(f"{results}: its jobs were timed under load ({'; '.join(noise)}): no verdict on {args.page}; run the "
              "tiny default again on a quiet machine", file=sys.stderr)
        return 2
    bad = [c for c in checks if not c["ok"]]
    if bad or not checks:
        print(f"{args.page}: {len(bad)} of {len(checks)} costs more than x{args.ratio:g} off the measured job seconds "
              "or missing: make the page again on a quiet machine (benchmark/cells_costs.sh)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
