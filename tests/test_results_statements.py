"""Every statement of a result in the README and docs agrees with the result (issue 37 item 6): the
numbers are read from the recorded results files here, not typed twice. The pool and its chance
levels (computed again from ../shared's Vaswani judgments), the claims calibration table
(benchmark/results/claims_calibration.md) and docs/claims.md's summary of it, the default's verdicts in the README, the confirmation on new seeds, the
full-corpus record, and the previous default's numbers and engine benchmark/README.md quotes."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from helpers.paths import REPO, shared_or_skip

RESULTS = REPO / "benchmark" / "results"


def _text(path) -> str:
    return " ".join((REPO / path).read_text(encoding="utf-8").split())  # one line: quotes may wrap


def _json(path) -> dict:
    return json.loads((RESULTS / path).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def vaswani_qrels() -> dict:
    from lsrbench.data.beir import read_qrels_tsv

    qrels: dict[str, dict[str, int]] = {}
    for qid, did, rel, _ in read_qrels_tsv(shared_or_skip("data", "vaswani", "qrels", "test.tsv")):
        qrels.setdefault(qid, {})[did] = rel
    return qrels


def test_the_pool_and_its_chance_levels_where_readers_look(vaswani_qrels):
    """README and docs/claims.md say "pooled subset" with its size, and the chance levels they quote
    are a random ranking's expected values on it (and on the whole collection), computed here."""
    from lsrbench.evaluate.chance import chance_levels

    pool = _json("full_corpus/pooled-chance.json")["datasets"]["vaswani"]
    size = f"{pool['documents']:,} of its {pool['full_documents']:,} documents, {pool['queries']} queries"
    on_pool = chance_levels(["nDCG@10", "RR@10", "R@1000"], pool["documents"], vaswani_qrels)
    on_full = chance_levels(["nDCG@10"], pool["full_documents"], vaswani_qrels)
    for doc in ("README.md", "docs/claims.md"):
        text = _text(doc)
        assert "pooled subset" in text and size in text, doc
        assert f"nDCG@10 {on_pool['nDCG@10'].expected:.4f} on it, {on_full['nDCG@10'].expected:.4f}" in text, doc
    claims_doc = _text("docs/claims.md")
    assert f"RR@10 {on_pool['RR@10'].expected:.4f}" in claims_doc and f"R@1000 {on_pool['R@1000'].expected:.3f}" in claims_doc
    assert pool["measures"]["nDCG@10"]["expected"] == pytest.approx(on_pool["nDCG@10"].expected)


def test_the_benchmark_notes_quote_the_previous_default_as_recorded():
    """Before: 0.394, 0.003, 0.282 where the record says 0.404, 0.0034, 0.268."""
    outcomes = {(r["backbone"], r["k"]): r["outcome"] for r in _json("probe-tiny-default.json")["outcomes"]["runs"]}
    quoted = (f"{outcomes[('splade-tiny', '1')]:.3f}, {outcomes[('splade-tiny', '16')]:.4f}, "
              f"{outcomes[('splade-tiny+untie', '16')]:.3f}")
    assert quoted == "0.404, 0.0034, 0.268" and quoted in _text("benchmark/README.md")


def test_the_calibration_table_is_the_recorded_one():
    from importlib import util

    spec = util.spec_from_file_location("claims_calibration_bench", REPO / "benchmark" / "claims_calibration.py")
    bench = util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    from lsrbench.report.claims.calibration import load_config

    record = _json("claims_calibration.json")
    assert (RESULTS / "claims_calibration.md").read_text(encoding="utf-8") == bench.markdown(record)
    # docs/claims.md's summary: the most false verdicts of one claim under no effect, per config
    worst = {name: max(r["false"] for s in record["sections"] if s["config"] == name and s["scenario"] == "no_effect"
                       for r in s["rows"] if r.get("false") is not None) for name in ("config/config.yaml", "config/paper.yaml")}
    draws = [s["draws"] for s in record["sections"] if s["config"] == "config/paper.yaml" and s["scenario"] == "no_effect"]
    summary = _text("docs/claims.md")
    assert f"the tiny default at most {worst['config/config.yaml']}/200 false verdicts per claim" in summary
    assert f"the paper config at most {worst['config/paper.yaml']} per claim in {'/'.join(map(str, draws))} draws" in summary
    ids = {name: {spec["id"] for spec in load_config(str(REPO / name))["claims"]["list"]}
           for name in ("config/config.yaml", "config/paper.yaml")}
    cells = {(s["config"], s["cap"], s["scenario"]) for s in record["sections"]}
    assert cells == {(name, cap, scenario) for name in ids for cap in (50, 200, 1000)
                     for scenario in ("no_effect", "paper_shaped")}
    for s in record["sections"]:  # every claim of both configs, each at most 10 % false of at least 200 draws
        assert {r["claim"] for r in s["rows"]} == ids[s["config"]], (s["config"], s["cap"], s["scenario"])
        assert s["scenario"] != "no_effect" or (s["draws"] >= 200 and all(r["false"] <= 0.10 * s["draws"]
                                                                          for r in s["rows"])), (s["config"], s["cap"])


def _verdicts(path) -> dict[str, str]:
    return {c["id"]: c["verdict"] for c in _json(path)["claims"]}


def test_the_readme_lists_every_verdict_of_the_default():
    """Before: the summary left out that the frontier claim fails and the match is inconclusive."""
    summary = re.search(r"`results/claims.md`, every verdict: (.*?)\.", _text("README.md")).group(1)
    for claim, verdict in _verdicts("full_corpus/pooled-claims.json").items():
        assert f"`{claim}`" in summary and re.search(rf"`{claim}`[^;]*?\b{verdict}\b", summary), (claim, verdict)


def test_the_confirmation_is_recorded_and_the_readme_says_what_it_showed():
    record = _json("confirmation/record.json")
    assert record["config"] == "config/confirmation.yaml" and record["command"].startswith("bash benchmark/confirmation.sh")
    metrics = pd.read_csv(RESULTS / "confirmation" / "metrics.csv", dtype={"k": str, "seed": str})
    assert sorted(set(metrics["seed"]) - {"-"}) == ["1", "2", "3"]
    text = _text("README.md")
    confirmation = re.search(r"On seeds it never saw(.*?)\(benchmark/results/confirmation/", text).group(1)
    for claim, verdict in _verdicts("confirmation/claims.json").items():
        if verdict in ("holds", "fails") or claim in confirmation:
            assert re.search(rf"`{claim}`[^;]*?\b{verdict}\b", confirmation), (claim, verdict)


def test_the_full_corpus_record_beside_the_pooled_numbers():
    record = _json("full_corpus/record.json")
    text = _text("docs/miniature.md")
    for run in record["runs"]:
        pooled, full = run["pooled"]["nDCG@10"], run["full"]["nDCG@10"]
        assert f"{pooled:.3f} | {full:.3f}" in (RESULTS / "full_corpus" / "side_by_side.md").read_text(encoding="utf-8")
    twin1, twin16 = (next(r["full"]["nDCG@10"] for r in record["runs"] if (r["run"], r["k"]) == ("splade-tiny-x10", k))
                     for k in ("1", "16"))
    reference = next(r["full"]["nDCG@10"] for r in record["runs"] if (r["run"], r["k"]) == ("splade-tiny", "1"))
    assert f"{twin1:.3f}, {twin16:.3f} and {reference:.3f}" in text


def test_what_the_engine_said_before_is_the_recorded_comparison():
    record = _json("claims_calibration-before.json")
    before, now = record["engines"]["4e850cd"], record["engines"]["this revision"]
    text = _text("benchmark/README.md")
    assert (f"`fails` for `rescaled_beats_k1` in {before['rescaled_beats_k1']['fails']} and for `rescaled_frontier` in "
            f"{before['rescaled_frontier']['fails']}, and `by construction` for the norm claim in all "
            f"{before['optimal_k_grows_with_norm']['by construction']}") in text
    assert record["draws"] == before["optimal_k_grows_with_norm"]["by construction"] == 100
    for claim in ("rescaled_beats_k1", "rescaled_frontier", "optimal_k_grows_with_norm"):
        assert not now[claim].get("holds") and not now[claim].get("fails") and not now[claim].get("by construction")


def test_the_readme_table1_excerpt_is_the_expected_values_and_the_seed_42_run():
    """The README's Table 1 excerpt: the expected column is config/expected/tiny.yaml's nDCG@10 (mean
    over the seeds ± one run's tolerance), the one-run columns are training seed 42's row of the seeds
    record (nDCG@10 at three decimals, FLOPs at two)."""
    import yaml

    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text(encoding="utf-8"))
    run_of = {b["label"]: name for name, b in config["backbones"].items()}
    expected = {(e["backbone"], e["k"]): e for e in
                yaml.safe_load((REPO / "config" / "expected" / "tiny.yaml").read_text(encoding="utf-8"))["table1"]
                if e["measure"] == "nDCG@10"}
    seeds = pd.read_csv(RESULTS / "tiny_default_seeds-metrics.csv", dtype={"k": str, "seed": str})
    seed42 = seeds[seeds["seed"].isin(["42", "-"])].set_index(["backbone", "k", "measure"])["value"]  # BM25: "-"
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in
            (REPO / "README.md").read_text(encoding="utf-8").splitlines()
            if line.startswith("| SPLADE-tiny") or line.startswith("| BM25")]
    assert len(rows) == 6
    for label, k, expect, one_run, flops in rows:
        untie = label.endswith(" [untie]")
        name = run_of.get(label.removesuffix(" [untie]").removesuffix(" †").strip())
        run = "BM25" if label.startswith("BM25") else name + ("+untie" if untie else "")
        entry = expected[(run, k)]
        assert expect == f"{entry['expected']:.4f} ± {entry['tolerance']:.4f}", (label, k)
        assert one_run.strip("*") == f"{seed42[(run, k, 'nDCG@10')]:.3f}", (label, k)
        assert flops == ("–" if run == "BM25" else f"{seed42[(run, k, 'FLOPs')]:.2f}"), (label, k)
