"""The reports of a finished micro run as a user makes and checks them (``pytest -m slow``): through
``snakemake`` and ``lsrbench verify`` on copies of the micro run (issue 23, items 2 and 3).

- one results folder, two configs (config A's Table 1 copied by hand over config B's reports):
  ``verify`` names both groups, and ``snakemake --cores 2`` of B makes it pass;
- a changed verdict or number in claims.md or claims.json fails ``verify``, naming the claim;
- a copy of the results folder alone, under another name, verifies from anywhere."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers.snakemake import COLLAPSE_K, copy_run, run_snakemake

pytestmark = pytest.mark.slow

CLAIMS = {"datasets": ["slice"], "resamples": 200, "list": [
    {"id": "trained_beats_collapsed", "text": "k = 1 beats the collapsed k", "type": "compare",
     "a": {"backbone": "rand-roberta", "k": 1}, "b": {"backbone": "rand-roberta", "k": float(COLLAPSE_K)},
     "expect": "greater"},
    {"id": "loss", "text": "the loss at k = 1 against the collapsed k", "type": "loss", "backbone": "rand-roberta",
     "a_k": 1, "b_k": float(COLLAPSE_K)},
]}


def _verify(results: Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lsrbench.cli", "verify", "--results", str(results)], capture_output=True,
                          text=True, cwd=cwd)


def _variant(micro_run: dict, path: Path, **changes) -> Path:
    """The micro run's config with ``changes`` (top-level keys; ``caption``: report.caption)."""
    config = yaml.safe_load(Path(micro_run["config"]).read_text())
    if "caption" in changes:
        config["report"]["caption"] = changes.pop("caption")
    config.update(changes)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def with_claims(micro_run, tmp_path_factory) -> dict:
    """A copy of the micro run whose config also states claims: only the report rules run."""
    tmp = tmp_path_factory.mktemp("claims_run")
    work = copy_run(micro_run, tmp / "work")
    config = _variant(micro_run, tmp / "claims.yaml", claims=CLAIMS)
    proc = run_snakemake("--cores", "2", "-d", str(work), "--configfile", str(config))
    assert "rule train" not in proc.stdout, "a config that only adds claims re-trained"
    return {"work": work, "results": work / "results", "config": config}


def test_reports_of_two_configs_fail_verify_until_every_report_is_remade(micro_run, tmp_path):
    """snakemake no longer leaves two configs' reports in one folder (a target that would is refused,
    tests/dag/test_folder_state_dag.py); a folder mixed by hand (config A's Table 1 copied over
    config B's) fails verify, naming both groups, and snakemake of B makes every report B's again."""
    work = copy_run(micro_run, tmp_path / "work")
    assert _verify(work / "results").returncode == 0
    other = _variant(micro_run, tmp_path / "other.yaml", caption="micro run, another caption")
    run_snakemake("--cores", "2", "-d", str(work), "--configfile", str(other))
    for name in ("table1.md", "table1.cells.json", "manifests/table1.json"):
        shutil.copy(micro_run["results"] / name, work / "results" / name)
    proc = _verify(work / "results")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    mixed = [line for line in proc.stderr.splitlines() if "the reports come from 2 configs" in line]
    assert len(mixed) == 1, proc.stderr
    sources = json.loads((work / "results/metrics.sources.json").read_text())["config"]
    assert sources["files"] == [str(other)]
    assert f"({micro_run['config']}): table1.md, table1.cells.json, manifests/table1.json" in mixed[0], mixed[0]
    assert f"config {sources['id']} ({other}): metrics.sources.json, table_beir.md," in mixed[0], mixed[0]
    assert "without a target (snakemake --cores 2 [--configfile FILE])" in mixed[0]
    # the HTML page of Table 1 is B's, its Markdown A's
    assert any(line.startswith(f"lsrbench: verify: {work / 'results/html/table1.html'}: not the page of ")
               for line in proc.stderr.splitlines()), proc.stderr
    run_snakemake("--cores", "2", "-d", str(work), "--configfile", str(other))
    proc = _verify(work / "results")
    assert proc.returncode == 0, proc.stderr


def test_claims_say_their_config_and_verify(with_claims):
    results = with_claims["results"]
    record = json.loads((results / "claims.json").read_text())
    assert record["config"]["files"] == [str(with_claims["config"])]
    assert [c["id"] for c in record["claims"]] == ["trained_beats_collapsed", "loss"]
    assert {row[2] for row in record["sources"]["perquery_files"]} == {"slice"}
    assert (results / "claims.md").read_text().rstrip().splitlines()[-1].startswith(
        f"Made with config {record['config']['id']} (read from {with_claims['config']}; snapshot: results/configs/")
    proc = _verify(results)
    assert proc.returncode == 0, proc.stderr
    assert "8 reports made again" in proc.stdout  # chance.json among them


def _flip(verdict: str) -> str:
    return "holds" if verdict != "holds" else "fails"


def test_a_changed_verdict_in_claims_json_is_named(with_claims, tmp_path):
    work = Path(shutil.copytree(with_claims["work"], tmp_path / "work", symlinks=True))
    side = work / "results/claims.json"
    record = json.loads(side.read_text())
    was = record["claims"][0]["verdict"]
    record["claims"][0]["verdict"] = _flip(was)
    side.write_text(json.dumps(record, indent=1))
    proc = _verify(work / "results")
    assert proc.returncode == 1
    assert (f"{side}: claims[trained_beats_collapsed].verdict: \"{_flip(was)}\" does not follow from "
            f"{work / 'results/metrics.csv'} and the per-query, head-norm and training-log files it names with config "
            f"{record['config']['id']}: recomputed \"{was}\"") in proc.stderr, proc.stderr


def test_a_changed_number_and_verdict_in_claims_md_are_named(with_claims, tmp_path):
    work = Path(shutil.copytree(with_claims["work"], tmp_path / "work", symlinks=True))
    md = work / "results/claims.md"
    lines = md.read_text().splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith("| trained_beats_collapsed "))
    cells = [c.strip() for c in lines[i].strip("|").split("|")]
    lines[i] = lines[i].replace(cells[-1], _flip(cells[-1]), 1)
    # the claim's own line: what its test asks
    j = next(j for j, line in enumerate(lines) if line.startswith("**`trained_beats_collapsed`**"))
    lines[j] = lines[j].replace(" > rand-roberta", " >= rand-roberta", 1)
    md.write_text("\n".join(lines) + "\n")
    proc = _verify(work / "results")
    assert proc.returncode == 1
    err = proc.stderr.splitlines()
    assert any(f"{md}: line {i + 1}: row trained_beats_collapsed, column verdict: '{_flip(cells[-1])}' does not "
               f"follow from" in e and e.endswith(f"recomputed '{cells[-1]}'") for e in err), proc.stderr
    assert any(e.startswith(f"lsrbench: verify: {md}: line {j + 1}: ") and ">= rand-roberta" in e for e in err), \
        proc.stderr


def test_a_copy_of_the_results_folder_verifies_wherever_it_is(with_claims, tmp_path):
    copy = Path(shutil.copytree(with_claims["results"], tmp_path / "x" / "results_copy"))
    proc = _verify(copy, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.rstrip().endswith(": ok")


def test_chance_levels_are_shown_and_a_changed_one_is_named(with_claims, tmp_path):
    """results/chance.json is what a random ranking of the evaluated documents scores (computed again
    here from the evaluated folder), Table 1 shows it in a row, and verify names an edited level."""
    from lsrbench.data.beir import read_qrels_tsv, written_split
    from lsrbench.evaluate.chance import chance_levels
    from lsrbench.report.tables.chance import CHANCE_LABEL

    work = Path(shutil.copytree(with_claims["work"], tmp_path / "work", symlinks=True))
    side = work / "results/chance.json"
    record = json.loads(side.read_text())
    folder = work / dict(record["sources"]["data_dirs"])["slice"]
    slice_ = record["datasets"]["slice"]
    qrels: dict = {}
    for qid, did, rel, _ in read_qrels_tsv(folder / "qrels" / f"{written_split(folder)}.tsv"):
        qrels.setdefault(qid, {})[did] = rel
    n_docs = sum(1 for _ in (folder / "corpus.jsonl").open())
    assert slice_["documents"] == n_docs and slice_["queries"] == len(qrels)
    fresh = chance_levels(["nDCG@10"], n_docs, qrels)["nDCG@10"]
    assert slice_["measures"]["nDCG@10"]["expected"] == pytest.approx(fresh.expected)
    table = (work / "results/table1.md").read_text()
    assert f"| {CHANCE_LABEL}" in table and "a random ranking of them scores nDCG@10" in table
    slice_["measures"]["nDCG@10"]["expected"] *= 2
    side.write_text(json.dumps(record, indent=1))
    proc = _verify(work / "results")
    assert proc.returncode == 1
    assert f"{side}: slice.measures.nDCG@10.expected: {slice_['measures']['nDCG@10']['expected']}" in proc.stderr, \
        proc.stderr
    # Table 1 read the level too: made from another chance.json
    assert f"made from another {side}" in proc.stderr, proc.stderr
