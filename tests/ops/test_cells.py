"""One command per cell: ``lsrbench run --row RUN/kK`` builds Table 1's row and nothing else
(Snakemake's own dry run of the targets it names), and ``lsrbench cells`` lists that command, the
expected value and the cost of every row and claim; docs/cells-tiny.md and docs/cells-paper.md are
its output for the repository's configs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers.cli import lsrbench
from helpers.paths import REPO
from helpers.snakemake import job_counts, micro_config, toy_inputs

def _generated_by(page: str) -> list[str]:
    """The arguments of the ``lsrbench cells`` command the page's second line names (the tiny page
    has a plan's costs only once one was calibrated on a quiet machine: benchmark/cells_costs.sh)."""
    line = (REPO / page).read_text(encoding="utf-8").splitlines()[2]
    return line.split("`lsrbench cells", 1)[1].split("`", 1)[0].split()


PAGES = {page: _generated_by(page) for page in ("docs/cells-tiny.md", "docs/cells-paper.md")}


def _run_row(config, work, *rows: str) -> subprocess.CompletedProcess:
    args = [a for row in rows for a in ("--row", row)]
    return subprocess.run([sys.executable, "-m", "lsrbench", "run", *args, "--configfile", str(config), "-n",
                           "--", "-d", str(work)], cwd=REPO, capture_output=True, text=True, timeout=600)


@pytest.mark.slow  # three of Snakemake's dry runs of a micro config
def test_run_row_plans_that_row_alone(tmp_path, vaswani_slice, tiny_roberta):
    config = micro_config(tmp_path, vaswani_slice, tiny_roberta)
    (tmp_path / "work").mkdir()
    proc = _run_row(config, tmp_path / "work", "rand-roberta/k1")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    counts = job_counts(proc.stdout)
    # the row's run (train, index, evaluate) and what it reads; no other k, no report
    assert counts["train"] == 1 and counts["index"] == 1 and counts["evaluate"] == 1, counts
    assert not {"collect", "table1", "claims", "bm25"} & set(counts), counts
    command = proc.stderr.splitlines()[0]
    assert command.startswith("$ snakemake results/runs/rand-roberta/k1/") and command.count("metrics.tsv") == 1
    both = job_counts(_run_row(config, tmp_path / "work", "rand-roberta/k1", "BM25").stdout)
    assert both["train"] == 1 and both["bm25"] == 1


def test_run_row_refuses_a_row_of_no_table_in_one_line(tmp_path):
    data, model = toy_inputs(tmp_path)
    config = micro_config(tmp_path, data, model)
    proc = lsrbench("run", "--row", "rand-roberta/k4", "--configfile", config, "-n", cwd=REPO)
    assert proc.returncode != 0 and proc.stderr.strip() == (
        f"lsrbench: error: command line: --row: 'rand-roberta/k4' is not a Table 1 row of {config}"
        "; its rows: rand-roberta/k1, rand-roberta/k1e-30, BM25")


@pytest.mark.parametrize("page", sorted(PAGES))
def test_cells_pages_are_what_lsrbench_cells_prints(page):
    """The pages are generated: a config, expected-values file or plan that changes needs them made
    again (the command is the page's second line)."""
    proc = lsrbench("cells", *PAGES[page], cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    current = (REPO / page).read_text(encoding="utf-8")
    assert current == proc.stdout, f"{page} is stale: lsrbench cells {' '.join(PAGES[page])} > {page}"


def test_cells_page_lists_every_row_and_claim_with_its_command():
    from lsrbench.cli_options import load_config
    from lsrbench.config.grid import runs

    page = (REPO / "docs/cells-paper.md").read_text(encoding="utf-8")
    config = load_config([str(REPO / "config/paper.yaml")], check_files=False)[0]
    for run, k in runs(config):
        assert f"`lsrbench run --row {run}/k{k} --configfile config/paper.yaml`" in page
    for claim in config["claims"]["list"]:
        assert f"| `{claim['id']}`:" in page
    # the paper's own numbers, each to within its rounding
    assert ("| modernbert | 16 | `lsrbench run --row modernbert/k16 --configfile config/paper.yaml` | – | – | "
            "0.4050 ± 0.0005 | – |") in page
    assert "- the paper reports no value for it (config/paper_reference.yaml)" in page


def _paper_config():
    from lsrbench.cli_options import load_config

    return load_config([str(REPO / "config/paper.yaml")], check_files=False)[0]


def test_paper_page_costs_sum_to_the_plans_total_line():
    """Every row's cost on the committed docs/cells-paper.md is its share of the committed plan's bill: the rows'
    GPU-hours (the shared jobs cost none in the bill) add up to the band of the plan's first line."""
    import json
    import re

    from lsrbench.config.grid import runs

    plan = json.loads((REPO / "benchmark/results/plan-paper.json").read_text(encoding="utf-8"))
    page = (REPO / "docs/cells-paper.md").read_text(encoding="utf-8")
    table = page.split("## Table 1", 1)[1].split("## Claims", 1)[0]
    costs = [line.rstrip(" |").rsplit("|", 1)[1].strip() for line in table.splitlines()
             if line.startswith("| ") and not line.startswith(("| row", "| BM25"))]
    assert len(costs) == len(runs(_paper_config())) == 44
    bands = [re.fullmatch(r"([\d.]+)-([\d.]+) GPU-h, ([\d.]+) CPU-h", cost) for cost in costs]
    assert all(bands), [c for c, b in zip(costs, bands) if not b]
    low, high, cpu = (sum(float(b[i]) for b in bands) for i in (1, 2, 3))
    # independently of the code: the bill's 50 % and 25 % hours of train and index, summed over backbones
    bill = plan["bill"].values()
    want_low = sum(b["gpu_hours"][s]["at 0.5"] for b in bill for s in ("train", "index"))
    want_high = sum(b["gpu_hours"][s]["at 0.25"] for b in bill for s in ("train", "index"))
    assert low == pytest.approx(want_low, rel=2e-3) and high == pytest.approx(want_high, rel=2e-3)
    assert cpu == pytest.approx(sum(b["evaluate_cpu_hours"] for b in bill), rel=1e-2)
    readme = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    first = next(re.match(r"total: ([\d.]+)-([\d.]+) GPU-hours", line) for line in readme if line.startswith("total: "))
    assert f"{low:.3g}-{high:.3g}" == f"{first[1]}-{first[2]}" == "21.6-43.1"
    assert "assumed: no benchmark/gpu.sh record" in page.split("## Table 1", 1)[0]


def test_row_cost_reads_a_measured_share_as_the_total_line_does():
    """A backbone with a measured train share: measured to half of it, the index at the assumed 50-25 %; one
    row of bert's 6 gets a sixth."""
    from lsrbench.ops.cells import row_cost

    plan = {"bill": {"bert": {"gpu_hours": {"train": {"bound": 1.0, "at measured": 2.0},
                                            "index": {"bound": 2.0, "at 0.5": 4.0, "at 0.25": 8.0}},
                              "evaluate_cpu_hours": 3.0}}}
    config = _paper_config()
    assert row_cost(plan, config, "bert+untie") == {"gpu_hours_low": 1.0, "gpu_hours_high": 2.0,
                                                     "evaluate_cpu_hours": 0.5}
    assert row_cost(plan, config, "albert") == {}  # not sized: the page says 'not estimated'
    assert row_cost(plan, {**config, "use_gpu": False}, "bert") == {}  # a CPU config reads the calibrated hours
