"""Numbers and messages the docs quote, checked against the tool (issue 23 item 12), so that they
cannot drift: the errors docs/paper-scale.md names for a target after ``--configfile`` /
``--resources`` (Snakemake run as a user runs it), the head norms, best and auto k of
docs/report.md (against the checkpoint and the README's Table 1 excerpt), and the mteb agreement of
docs/independent-checks.md (its verdict line made again by ``mteb-check``'s own summary).
docs/cluster.md's job counts: tests/ops/test_plan.py (one dry run of the paper grid)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import REPO, shared_or_skip

DOCS = REPO / "docs"


def _doc(name: str) -> str:
    return " ".join((DOCS / name).read_text(encoding="utf-8").split())  # one line: quotes may wrap


def _snakemake_error(*args: str) -> str:
    """The error line Snakemake prints for a dry run with ``args`` (the last naming an error)."""
    proc = subprocess.run([str(Path(sys.executable).with_name("snakemake")), "-n", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    lines = [line.strip() for line in (proc.stdout + "\n" + proc.stderr).splitlines()]
    return [line for line in lines if "Error" in line or "not valid" in line][-1]


def test_paper_scale_names_the_errors_of_a_target_after_an_option():
    """Before: only ``ValueError: dictionary update ...``, which a target after --configfile never gives."""
    text = _doc("paper-scale.md")
    missing = _snakemake_error("--configfile", "config/config.yaml", "results/no-such-table.md")
    assert missing == "FileNotFoundError: [Errno 2] No such file or directory: 'results/no-such-table.md'"
    assert "FileNotFoundError: [Errno 2] No such file or directory: 'results/table1.md'" in text
    existing = _snakemake_error("--configfile", "config/config.yaml", "docs/cluster.md")
    assert existing.startswith("Config file is not valid JSON or YAML")
    assert "Config file is not valid JSON or YAML" in text
    resources = _snakemake_error("--resources", "gpu=1", "results/table1.md")
    assert f"`{resources}`" in text


def _readme_bold_k() -> dict[str, str]:
    """Backbone -> its bold k in the README's Table 1 excerpt."""
    bold = {}
    for line in (REPO / "README.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 5 and cells[3].startswith("**"):  # the "one run" column
            bold[cells[0]] = cells[1]
    return bold


def test_report_doc_quotes_the_norms_best_and_auto_k():
    """Before: the twin's best k 16, where Table 1's bold (and norms.md) says 4."""
    from lsrbench.model.checkpoint import load_mlm
    from lsrbench.model.rescale import head_norms

    (here,) = re.findall(r"Here: ([\d.]+) \(best k (\w+), auto (\w+)\) against ([\d.]+) \(best k (\w+), auto (\w+)\)",
                         _doc("report.md"))
    norm, best, auto, twin_norm, twin_best, twin_auto = here
    assert _readme_bold_k() == {"SPLADE-tiny MLM re-fit (BERT 2L, tied head)": best,
                                "SPLADE-tiny MLM re-fit x10 head (synthetic large-norm twin) †": twin_best}
    # the re-fit trains the head alone (mlm_refit.train: head): W_head is the checkpoint's
    frobenius = head_norms(load_mlm(str(shared_or_skip("models", "splade-tiny-msmarco")), "test", "model"))["frobenius_norm"]
    assert norm == f"{frobenius:.1f}" and twin_norm == f"{10 * frobenius:.0f}"  # the twin: head x10 at load
    assert (auto, twin_auto) == ("1", "10")  # auto k: norm / the reference's norm (splade-tiny itself)


def test_independent_checks_quote_an_agreement_mteb_check_would_print():
    """Before: the doc's tiny-default row differed by 0.01 (the training lengths); the verdict line
    it quotes must be what ``summary_line`` prints for its table at the evaluation's lengths."""
    from lsrbench.config.strict_yaml import load_yaml
    from lsrbench.evaluate.mteb_check import TOLERANCE, summary_line

    text = (DOCS / "independent-checks.md").read_text(encoding="utf-8")
    table = text[text.index("`lsrbench mteb-check splade-tiny/k1 vaswani`:"):]
    rows = re.findall(r"^\| (nDCG@10|RR@10|R@1000) \| ([\d.]+) \| ([\d.]+) \| ([-+]?[\d.e-]+) \|$", table, re.M)
    assert [r[0] for r in rows] == ["nDCG@10", "RR@10", "R@1000"]
    for _, ours, theirs, diff in rows:
        assert float(diff) == pytest.approx(float(theirs) - float(ours), abs=5e-8)
    evaluation = load_yaml(REPO / "config" / "config.yaml")["evaluation"]
    report = {"ok": True, "tol": TOLERANCE, "mteb_version": "2.26.24",
              "encode_lengths": {"query_length": evaluation["query_max_length"],
                                 "document_length": evaluation["document_max_length"]},
              "rows": [{"measure": m, "diff": float(t) - float(o), "ok": abs(float(t) - float(o)) <= TOLERANCE}
                       for m, o, t, _ in rows]}
    assert all(r["ok"] for r in report["rows"])
    line = summary_line(report, "splade-tiny/k1 on vaswani")
    quoted = " ".join(table[table.index("`AGREE:"):].split("`")[1].split())
    assert quoted == line, line
    assert "(1e-4: mteb rounds to 5 decimals)" in " ".join(text.split()) and TOLERANCE == 1e-4
    ndcg = float(rows[0][1])
    readme_row = re.search(r"^\| SPLADE-tiny MLM re-fit \(BERT 2L, tied head\) +\| +1 \|[^|]*\| \*\*([\d.]+)\*\* \|",
                           (REPO / "README.md").read_text(encoding="utf-8"), re.M)
    assert readme_row and f"{ndcg:.3f}" == readme_row.group(1)  # the README's one run is the run checked


def test_report_doc_describes_the_figures_the_code_draws():
    """docs/report.md's figure section against the figures drawn from the tiny default's recorded
    metrics (benchmark/results/tiny_default-metrics.csv): the trade-off plot on one axis (every run
    below 75 % of BM25), BM25's value as quoted; the norms figure without the probe in two panels;
    the loss curves on a log scale when every loss is positive."""
    import pandas as pd

    from lsrbench.cli_options import load_config
    from lsrbench.report.figures import plots

    text = _doc("report.md")
    config = load_config([str(REPO / "config" / "config.yaml")], check_files=False)[0]
    metrics = pd.read_csv(REPO / "benchmark" / "results" / "tiny_default-metrics.csv", dtype={"k": str})
    fig, axes, _ = plots.tradeoff_figure(metrics, config["report"], config["backbones"])
    bm25 = float(metrics[(metrics["backbone"] == "BM25") & (metrics["measure"] == "nDCG@10")]["value"].iloc[0])
    scores = metrics[(metrics["backbone"] != "BM25") & (metrics["measure"] == "nDCG@10")]["value"]
    assert len(axes) == 1 and scores.max() < plots.BAND * bm25
    assert f"every SPLADE run is below 75 % of BM25's {bm25:.3f}, so one axis holds BM25's line" in text
    assert f"at least {plots.MIN_PANEL:.0%} of the height".replace("%", " %") in text
    norms = {b: {"frobenius_norm": 1.0 + i, "mean_row_norm": 0.5} for i, b in enumerate(config["backbones"])}
    assert len(plots.norms_figure(norms, {}, {}, config["backbones"])[1]) == 2
    assert "in the tiny default the probe does not run, so two panels" in text
    assert config["probe"]["with_grid"] is False
    runs = {"splade-tiny": {"1": [(s, 100.0 / s) for s in range(1, 20)]}}
    assert plots.loss_figure(runs, config["backbones"])[1][0].get_yscale() == "log"
    assert "log when every value is positive (as in the tiny default)" in text
