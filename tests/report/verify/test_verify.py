"""``lsrbench verify`` on a small hand-made results tree (no model, no Snakemake): the run files and
their manifests are written by the stages' own writers, metrics.csv and table1.md by the report
rules' functions, exactly as the DAG does. Every number of table1.md must trace to a
manifest-backed run file; tampering with the table, metrics.csv, a run file or the paper's
reference file is named."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lsrbench.config.schema import with_defaults
from lsrbench.evaluate.tidy import write_metric_rows
from lsrbench.report.reports.collect import report_collect
from lsrbench.report.reports.norms import report_norms
from lsrbench.report.reports.table1 import report_table1
from lsrbench.report.reports.table_beir import report_table_beir
from lsrbench.report.reports.tradeoff import report_tradeoff
from lsrbench.names import POOLED
from lsrbench.provenance import write_json
from lsrbench.names import BM25, NO_K
from lsrbench.report.verify.manifests import verify
from lsrbench.report.reports.table1 import TABLE1_CELLS
from lsrbench.report.verify.table1 import markdown_table

BACKBONES = with_defaults("backbones", {"small": {"model": "x", "label": "Small"},
                                        "large": {"model": "y", "label": "Large", "synthetic": True}})
REPORT = with_defaults("report", {
                            "caption": "hand-made results",
                            "columns": [{"name": "D nDCG@10", "datasets": ["d1", "d2"], "measure": "nDCG@10"},
                                        {"name": "d1 RR@10", "datasets": ["d1"], "measure": "RR@10"}],
                            "flops_datasets": ["d1", "d2"],
                            "reference": "reference.yaml",
                            "beir_measure": "nDCG@10",
                            "tradeoff_measure": "nDCG@10",
                        })
AUTO_K = {"reference": "small", "statistic": "frobenius_norm"}
# (run, k) -> (nDCG@10 on d1, d2; RR@10 on d1; FLOPs; collapsed)
RUNS = {
    ("small", "1"): (0.5012, 0.4004, 0.61, 2.5, 0.0),
    ("small", "4"): (0.45, 0.35, 0.55, 2.0, 0.0),
    ("large", "1"): (0.0, 0.0, 0.0, 0.0, 1.0),
    ("large", "4"): (0.52, 0.42, 0.7, 1.25, 0.0),
    ("large", "auto"): (0.51, 0.41, 0.69, 1.5, 0.0),
}
BM25_ROWS = {"d1": (0.3, 0.4), "d2": (0.2, 0.3)}


def _build(work: Path) -> None:
    """Write the results tree under ``work`` (paths relative to it, as Snakemake passes them)."""
    cwd = os.getcwd()
    os.chdir(work)
    try:
        (work / "reference.yaml").write_text("values:\n  large:\n    4: {D nDCG@10: 0.405}\n")
        metric_files = []
        for name, frob in (("small", 10.0), ("large", 100.0)):
            norm = f"results/norms/{name}.json"
            write_json(norm, _norms(frob))
            status = f"results/runs/{name}/status.json"
            write_json(status, {"status": "ok"})
            prov = f"results/runs/{name}/train_provenance.json"
            write_json(prov, _manifest(prov, [norm], [status]))  # the training manifest vouches for the norms
        for (run, k), (n1, n2, rr, fl, collapsed) in RUNS.items():
            for ds, n in (("d1", n1), ("d2", n2)):
                out = f"results/runs/{run}/k{k}/{ds}"
                rows = [("nDCG@10", n), ("FLOPs", fl), ("query_active_dims", 10.0), ("doc_active_dims", 55.25),
                        ("collapsed", collapsed)] + ([("RR@10", rr)] if ds == "d1" else [])
                write_metric_rows(f"{out}/metrics.tsv", f"{out}/perquery.tsv", run, k, ds, rows, [])
                write_json(f"{out}/provenance.json", _manifest(f"{out}/provenance.json", [],
                                                               [f"{out}/metrics.tsv", f"{out}/perquery.tsv"]))
                metric_files.append(f"{out}/metrics.tsv")
            # FLOPs pooled over flops_datasets (as the pooled_flops rule writes them): Table 1's FLOPs column
            out = f"results/runs/{run}/k{k}/{POOLED}"
            write_metric_rows(f"{out}/metrics.tsv", None, run, k, POOLED,
                                      [("FLOPs", fl), ("query_active_dims", 10.0), ("doc_active_dims", 55.25)], None)
            write_json(f"{out}/provenance.json", _manifest(f"{out}/provenance.json", [], [f"{out}/metrics.tsv"]))
            metric_files.append(f"{out}/metrics.tsv")
        for ds, (n, rr) in BM25_ROWS.items():
            out = f"results/bm25/{ds}"
            write_metric_rows(f"{out}/metrics.tsv", f"{out}/perquery.tsv", BM25, NO_K, ds,
                                      [("nDCG@10", n), ("RR@10", rr)], [])
            write_json(f"{out}/provenance.json", _manifest(f"{out}/provenance.json", [],
                                                           [f"{out}/metrics.tsv", f"{out}/perquery.tsv"]))
            metric_files.append(f"{out}/metrics.tsv")
        snapshot = _config_snapshot()
        report_collect(metric_files, "results/metrics.csv", "results/metrics.sources.json", snapshot)
        norm_rows = [["small", "results/norms/small.json"], ["large", "results/norms/large.json"]]
        report_table1("results/metrics.csv", norm_rows, REPORT, BACKBONES, AUTO_K, "results/table1.md",
                                    cells_json=f"results/{TABLE1_CELLS}", config_yaml=snapshot)
        report_table_beir("results/metrics.csv", REPORT, BACKBONES, "results/table_beir.md", snapshot)
        report_norms(norm_rows, "results/metrics.csv", REPORT, BACKBONES, AUTO_K, "results/norms.md",
                                   "results/norms.png", "results/norms.data.json", snapshot)
        report_tradeoff("results/metrics.csv", REPORT, BACKBONES, "results/tradeoff.png",
                                      "results/tradeoff.pdf", "results/tradeoff.data.json", snapshot)
    finally:
        os.chdir(cwd)


def _norms(frobenius: float) -> dict:
    """A head-norm record as the norm stage writes one (lsrbench.model.rescale.head_norms)."""
    return {"frobenius_norm": frobenius, "mean_row_norm": frobenius / 100, "max_row_norm": frobenius / 50,
            "bias_norm": 1.0, "has_bias": True, "vocab_size": 100, "hidden_size": 8, "tied": True}


def _config_snapshot() -> str:
    """The config snapshot the reports are made with, written as the config_snapshot rule writes it
    (its job function, and the params.json the job runner writes beside every addressed output)."""
    from lsrbench.hashing import stable_hash
    from lsrbench.stages.config_snapshot import config_snapshot

    config = {"report": REPORT,
              "backbones": BACKBONES, "auto_k": AUTO_K, "recipe": {"batch_size": 4}}
    identity = {"config": config, "backbone_order": list(BACKBONES)}
    folder = f"results/configs/{stable_hash(identity)[:12]}"
    config_snapshot(config, identity["backbone_order"], f"{folder}/config.yaml", files=["my.yaml"])
    write_json(f"{folder}/params.json", {"kind": "configs", "id": Path(folder).name, "sha256": stable_hash(identity),
                                         "identity": identity})
    return f"{folder}/config.yaml"


def _manifest(path: str, inputs: list[str], outputs: list[str]) -> dict:
    from lsrbench.provenance import manifest_fields

    return {"stage": "test", **manifest_fields(path, inputs, outputs)}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("verify_tree") / "work"
    work.mkdir()
    _build(work)
    return work


@pytest.fixture()
def work(built, tmp_path) -> Path:
    """A fresh copy of the hand-made tree, safe to tamper with."""
    return Path(shutil.copytree(built, tmp_path / "work"))


def _row_line(md: Path, label: str, k: str) -> tuple[int, str]:
    for i, line in enumerate(md.read_text().splitlines()):
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("|") and cells[:2] == [label, k]:
            return i, line
    raise AssertionError(f"no row {label} k {k}")


def _problems(work: Path) -> list[str]:
    problems, _ = verify(work / "results")
    return problems


def test_untouched_tree_verifies_and_every_cell_is_recorded(built):
    proc = subprocess.run([sys.executable, "-m", "lsrbench.cli", "verify", "--results", str(built / "results")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith(": ok") and "table1.md cells checked" in proc.stdout
    record = json.loads((built / "results" / TABLE1_CELLS).read_text())
    header, rows = markdown_table((built / "results/table1.md").read_text())
    assert header == record["columns"] == ["Backbone", "k", "D nDCG@10", "d1 RR@10", "FLOPs", "q / d dims"]
    assert [[c["text"] for c in r["cells"]] for r in record["rows"]] == [cells for _, cells in rows]
    assert len(rows) == 6  # BM25 + 5 runs
    texts = {(r["backbone"], r["k"]): {c["column"]: c for c in r["cells"]} for r in record["rows"]}
    # the mean of d1 and d2, bold as small's best k; each source row with its metrics.csv line and value
    cell = texts[("small", "1")]["D nDCG@10"]
    assert cell["text"] == "**0.451**" and cell["bold"]
    assert [(s["dataset"], s["value"]) for s in cell["numbers"][0]["sources"]] == [("d1", 0.5012), ("d2", 0.4004)]
    metrics_lines = (built / "results/metrics.csv").read_text().splitlines()
    assert all(metrics_lines[s["line"] - 1].startswith(f"small,1,{s['dataset']},nDCG@10,")
               for s in cell["numbers"][0]["sources"])
    # written as formatted: tabulate does not turn 2.50 into 2.5
    assert texts[("small", "1")]["FLOPs"]["text"] == "2.50" and rows[1][1][4] == "2.50"
    assert texts[("large", "1")]["D nDCG@10"]["text"] == "collapsed"
    # the paper's value: from the reference file, labelled as such
    ref = texts[("large", "4")]["D nDCG@10"]
    assert ref["text"] == "**0.470** (paper 0.405)" and ref["reference"]["file"] == "reference.yaml"
    # k auto: a ratio of head norms, not a metric
    assert texts[("large", "auto")]["k"]["text"] == "auto (10)"
    assert texts[(BM25, NO_K)]["FLOPs"]["text"] == "–"
    assert record["table"]["path"] == "results/table1.md" and len(record["metrics_csv"]["sha256"]) == 64


def test_edited_number_in_table1_is_named_with_its_cell(work):
    md = work / "results/table1.md"
    i, line = _row_line(md, "Small", "4")
    lines = md.read_text().splitlines()
    assert "0.550" in line
    lines[i] = line.replace("0.550", "0.650")
    md.write_text("\n".join(lines) + "\n")
    proc = subprocess.run([sys.executable, "-m", "lsrbench.cli", "verify", "--results", str(work / "results")],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    err = proc.stderr.splitlines()
    assert any(f"{md}: modified: SHA-256 differs" in e for e in err), proc.stderr
    assert any(f"{md}: line {i + 1}: row small k 4, column d1 RR@10: '0.650' but {TABLE1_CELLS} records '0.550'" in e
               for e in err), proc.stderr
    assert sum("0.650" in e for e in err) == 1


def test_a_forged_cell_in_both_table_and_sidecar_does_not_follow_from_metrics(work):
    md, side = work / "results/table1.md", work / "results" / TABLE1_CELLS
    md.write_text(md.read_text().replace("**0.451**", "**0.481**"))
    record = json.loads(side.read_text())
    cell = next(c for r in record["rows"] if (r["backbone"], r["k"]) == ("small", "1") for c in r["cells"]
                if c["column"] == "D nDCG@10")
    cell["text"] = "**0.481**"
    from lsrbench.hashing import sha256_file

    record["table"].update(sha256=sha256_file(md), bytes=md.stat().st_size)
    side.write_text(json.dumps(record))
    problems = _problems(work)
    assert len(problems) == 1
    assert problems[0].endswith("row small k 1, column D nDCG@10: '**0.481**' does not follow from "
                                f"{work / 'results/metrics.csv'}: recomputed '**0.451**'")


def test_edited_metrics_csv_is_named_and_the_table_no_longer_follows(work):
    csv = work / "results/metrics.csv"
    lines = csv.read_text().splitlines()
    j = next(j for j, line in enumerate(lines) if line.startswith("small,4,d1,RR@10,"))
    lines[j] = "small,4,d1,RR@10,0.65"
    csv.write_text("\n".join(lines) + "\n")
    problems = _problems(work)
    md = work / "results/table1.md"
    assert any(p.startswith(f"{csv}: line {j + 1}: RR@10 = 0.65 but the run's metrics.tsv has 0.55") for p in problems)
    assert any(p.startswith(f"{md}: made from another {csv}") for p in problems)
    assert any("row small k 4, column d1 RR@10: '0.550' does not follow from" in p and p.endswith("recomputed '0.650'")
               for p in problems)
    assert any(f"row small k 4: d1 RR@10 rest on {csv} line {j + 1}, which do not trace" in p for p in problems)


def test_truncated_run_file_is_named_and_its_table_cells_are_untraced(work):
    tsv = work / "results/runs/large/k4/d2/metrics.tsv"
    tsv.write_bytes(tsv.read_bytes()[:40])
    problems = _problems(work)
    assert any(p.startswith(f"{tsv}: truncated: SHA-256 differs from") for p in problems), problems
    line = next(p for p in problems if "row large k 4:" in p and "do not trace" in p)
    # only the columns that average d2 rows; d1 RR@10 and the pooled FLOPs stay traced
    assert "D nDCG@10 rest on" in line and "d1 RR@10" not in line and "FLOPs" not in line


def test_truncated_pooled_flops_file_untraces_the_flops_cells(work):
    tsv = work / f"results/runs/large/k4/{POOLED}/metrics.tsv"
    tsv.write_bytes(tsv.read_bytes()[:40])
    problems = _problems(work)
    assert any(p.startswith(f"{tsv}: truncated: SHA-256 differs from") for p in problems), problems
    line = next(p for p in problems if "row large k 4:" in p and "do not trace" in p)
    assert "FLOPs, q / d dims rest on" in line and "nDCG@10" not in line


def test_truncated_table1_is_named(work):
    md = work / "results/table1.md"
    md.write_bytes(md.read_bytes()[:600])
    problems = _problems(work)
    assert any(p.startswith(f"{md}: truncated: SHA-256 differs") for p in problems)
    assert any(f"{md}: row large k auto is missing" in p for p in problems)


def test_changed_paper_reference_is_named(work):
    (work / "reference.yaml").write_text("values:\n  large:\n    4: {D nDCG@10: 0.415}\n")
    problems = _problems(work)
    assert any("its paper values were read from" in p and "reference.yaml" in p for p in problems)
    assert any("row large k 4, column D nDCG@10: '**0.470** (paper 0.405)' does not follow" in p
               and p.endswith("recomputed '**0.470** (paper 0.415)'") for p in problems)


def test_missing_reference_file_is_one_problem(work):
    (work / "reference.yaml").unlink()
    side = work / "results" / TABLE1_CELLS
    record = json.loads(side.read_text())
    record["reference"]["resolved"] = str(work / "gone.yaml")  # nor where it was when the table was made
    side.write_text(json.dumps(record))
    problems = _problems(work)
    assert problems == [f"{work / 'results/table1.md'}: its paper values cannot be traced: reference file "
                        "reference.yaml not found"]


def test_norm_file_behind_k_auto_must_be_vouched_for(work):
    norm = work / "results/norms/large.json"
    norm.write_text(json.dumps(_norms(200.0)))
    problems = _problems(work)
    assert any(p.startswith(f"{norm}: truncated: SHA-256 differs from") for p in problems)
    assert any("row large k auto, column k: 'auto (10)' does not follow from results/norms/large.json and "
               "results/norms/small.json: recomputed 'auto (20)'" in p for p in problems)
    assert any("k auto comes from the head norms of large" in p for p in problems)


def test_table1_without_its_sidecar_cannot_be_traced(work):
    (work / "results" / TABLE1_CELLS).unlink()
    assert _problems(work) == [f"{work / 'results/table1.md'}: no {TABLE1_CELLS} beside it, so its numbers cannot "
                               "be traced (made by an older lsrbench? re-run the table1 rule)"]


def test_moved_tree_still_verifies(built, tmp_path):
    moved = Path(shutil.copytree(built, tmp_path / "elsewhere" / "copy"))
    assert _problems(moved) == []


# -- the other reports (issue 23, items 2 and 3) -------------------------------------------------

def _cli_verify(results: Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lsrbench.cli", "verify", "--results", str(results)], capture_output=True,
                          text=True, cwd=cwd)


def test_a_copy_of_the_results_folder_alone_verifies_wherever_it_is(built, tmp_path):
    """Only results/, copied under another name (x/results_copy) and verified from elsewhere: every
    recorded path is found under the copy (it gave one 'missing' per artifact)."""
    copy = Path(shutil.copytree(built / "results", tmp_path / "x" / "results_copy"))
    proc = _cli_verify(copy, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith(": ok"), proc.stderr
    # table_beir.md, norms.md, norms.data.json, tradeoff.data.json (no claims, no training logs here)
    assert "4 reports made again" in proc.stdout


def test_every_report_names_its_config(built):
    results = built / "results"
    record = json.loads((results / "metrics.sources.json").read_text())["config"]
    assert record["files"] == ["my.yaml"] and record["snapshot"] == f"results/configs/{record['id']}/config.yaml"
    line = (f"Made with config {record['id']} (read from my.yaml; snapshot: "
            f"results/configs/{record['id']}/config.yaml).")
    for name in ("table1.md", "table_beir.md", "norms.md"):
        assert (results / name).read_text().rstrip().splitlines()[-1] == line, name
    for name in (TABLE1_CELLS, "tradeoff.data.json", "norms.data.json"):
        assert json.loads((results / name).read_text())["config"] == record, name


def test_a_changed_number_in_table_beir_is_named_with_its_cell(work):
    md = work / "results/table_beir.md"
    md.write_text(md.read_text().replace("| 0.450 | 0.350 |", "| 0.450 | 0.390 |"))
    proc = _cli_verify(work / "results")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    config = json.loads((work / "results/metrics.sources.json").read_text())["config"]["id"]
    assert proc.stderr.splitlines()[0] == (
        f"lsrbench: verify: {md}: line 9: row Small, k 4, column d2: '0.390' does not follow from "
        f"{work / 'results/metrics.csv'} with config {config}: recomputed '0.350'")


def test_edited_figure_data_and_a_replaced_image_are_named(work):
    side, png = work / "results/tradeoff.data.json", work / "results/tradeoff.png"
    record = json.loads(side.read_text())
    point = next(p for p in record["data"]["points"] if (p["run"], p["k"]) == ("small", "4"))
    point["score"] = 0.6
    side.write_text(json.dumps(record))
    png.write_bytes(png.read_bytes()[:-10] + b"0123456789")
    problems = _problems(work)
    assert any(p.startswith(f"{side}: points[small k 4].score: 0.6 does not follow from ") and
               p.endswith("recomputed 0.4") for p in problems), problems
    assert any(p.startswith(f"{png}: modified: SHA-256 differs from {side}") for p in problems), problems


def test_reports_of_two_configs_in_one_folder_are_named(work):
    """table_beir.md re-made with another config's snapshot (a changed caption): verify names the
    reports of each config and how to re-make them."""
    cwd = os.getcwd()
    os.chdir(work)
    try:
        global REPORT
        kept = REPORT
        REPORT = {**kept, "caption": "another config"}
        other = _config_snapshot()
        report_table_beir("results/metrics.csv", REPORT, BACKBONES, "results/table_beir.md", other)
        REPORT = kept
    finally:
        os.chdir(cwd)
    proc = _cli_verify(work / "results")
    assert proc.returncode == 1
    mixed = [line for line in proc.stderr.splitlines() if "the reports come from 2 configs" in line]
    assert len(mixed) == 1, proc.stderr
    first, second = json.loads((work / "results/metrics.sources.json").read_text())["config"]["id"], Path(other).parent.name
    assert (f"config {first} (my.yaml): metrics.sources.json, table1.md, {TABLE1_CELLS}, norms.md, norms.data.json, "
            f"tradeoff.data.json; config {second} (my.yaml): table_beir.md" in mixed[0])
    assert "re-make every report with the config you mean, without a target" in mixed[0]


def test_a_stale_html_page_is_named(work):
    from lsrbench.report.render import report_html

    (work / "results/html").mkdir()
    page = work / "results/html/table_beir.html"
    report_html(str(work / "results/table_beir.md"), str(page))
    assert _problems(work) == []
    md = work / "results/table_beir.md"
    md.write_text(md.read_text().replace("0.350", "0.390"))
    assert any(p.startswith(f"{page}: not the page of {md} as it is now") for p in _problems(work))


def test_a_change_at_the_end_of_a_long_line_is_quoted_where_it_is():
    from lsrbench.report.verify.diff import text_differences

    shown, fresh = "the claim details " * 12 + "p = 0.0348.", "the claim details " * 12 + "p = 0.0448."
    [(where, old, new)] = text_differences(f"# t\n{shown}\n", f"# t\n{fresh}\n")
    assert where == "line 2" and old.endswith("p = 0.0348.'") and new.endswith("p = 0.0448.'")
    assert old.startswith("'…") and len(old) < 80
