"""Reports over training seeds (issue 18, item 8): metrics.csv's seed column, the means over seeds
and their spread (sample standard deviation), Table 1 and the BEIR table with mean ± spread and
the best k of the means, claims on per-query scores averaged over seeds and the best-k agreement
over seeds; and, with one seed, nothing of it (the reports as they were, claims.md's one
sentence). Exact values from fixed rows; the two-seed micro DAG is tests/dag/test_seeds_dag.py."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from lsrbench.config.schema import with_defaults
from lsrbench.names import METRIC_COLUMNS, NO_SEED, SEEDED_METRIC_COLUMNS
from lsrbench.report import seeds
from lsrbench.report.tables import beir as beir_table, table1
from lsrbench.report.claims.claim_type import seed_notes
from lsrbench.report.claims.engine import Evidence, evaluate_claims
from lsrbench.report.claims.evidence import Settings
from lsrbench.report.claims.output import claims_markdown, claims_record
from lsrbench.report.results import best_k, collect_metrics, read_metrics, run_table

BACKBONES = with_defaults("backbones", {"small": {"model": "x", "label": "Small"}})
REPORT = with_defaults("report", {"columns": [{"name": "D nDCG@10", "datasets": ["d1", "d2"], "measure": "nDCG@10"}],
                                  "flops_datasets": ["d1"], "beir_measure": "nDCG@10", "tradeoff_measure": "nDCG@10"})
# (k, seed) -> nDCG@10 on d1, d2: seed 0 picks k=1 (0.45 vs 0.40), seed 1 picks k=4 (0.60 vs 0.30);
# the mean picks k=4 (0.50 vs 0.375). k=16 collapsed in seed 1 only.
NDCG = {("1", "0"): (0.50, 0.40), ("1", "1"): (0.35, 0.25), ("4", "0"): (0.45, 0.35), ("4", "1"): (0.65, 0.55),
        ("16", "0"): (0.10, 0.10), ("16", "1"): (0.02, 0.02)}
FLOPS = {"0": 2.0, "1": 4.0}


def _rows() -> list[tuple]:
    rows = []
    for (k, seed), values in NDCG.items():
        for ds, v in zip(("d1", "d2"), values):
            rows += [("small", k, seed, ds, "nDCG@10", v), ("small", k, seed, ds, "FLOPs", FLOPS[seed]),
                     ("small", k, seed, ds, "query_active_dims", 10.0), ("small", k, seed, ds, "doc_active_dims", 50.0),
                     ("small", k, seed, ds, "collapsed", float(k == "16" and seed == "1"))]
    return rows + [("BM25", "-", NO_SEED, "d1", "nDCG@10", 0.3), ("BM25", "-", NO_SEED, "d2", "nDCG@10", 0.2)]


@pytest.fixture()
def seeded(tmp_path) -> pd.DataFrame:
    """A two-seed metrics.csv as the collect rule writes it, read back."""
    by_file = {}
    for row in _rows():
        by_file.setdefault((row[0], row[1], row[2], row[3]), []).append(row)
    files, seed_of = [], {}
    for (run, k, seed, ds), rows in by_file.items():
        path = tmp_path / f"{run}-{k}-{seed}-{ds}.tsv"
        pd.DataFrame([(r[0], r[1], r[3], r[4], r[5]) for r in rows], columns=METRIC_COLUMNS).to_csv(path, sep="\t", index=False)
        files.append(str(path))
        if seed != NO_SEED:
            seed_of[str(path)] = seed
    collect_metrics(files, str(tmp_path / "metrics.csv"), seed_of)
    return read_metrics(str(tmp_path / "metrics.csv"))


def test_metrics_csv_gets_a_seed_column_only_with_several_seeds(seeded, tmp_path):
    text = (tmp_path / "metrics.csv").read_text().splitlines()
    assert text[0] == ",".join(SEEDED_METRIC_COLUMNS)
    assert text[1:3] == ["BM25,-,-,d1,nDCG@10,0.3", "BM25,-,-,d2,nDCG@10,0.2"]
    # sorted run, k (numeric), seed (numeric), dataset, measure
    assert [tuple(r) for r in seeded[["k", "seed"]].drop_duplicates().to_numpy()][1:] == [
        ("1", "0"), ("1", "1"), ("4", "0"), ("4", "1"), ("16", "0"), ("16", "1")]
    one = tmp_path / "one.csv"
    path = tmp_path / "small-1-0-d1.tsv"
    collect_metrics([str(path)], str(one))
    assert one.read_text().splitlines()[0] == ",".join(METRIC_COLUMNS)


def test_seed_order_is_numeric(tmp_path):
    files, seed_of = [], {}
    for seed in ("10", "2"):
        path = tmp_path / f"{seed}.tsv"
        pd.DataFrame([("a", "1", "d", "nDCG@10", float(seed))], columns=METRIC_COLUMNS).to_csv(path, sep="\t", index=False)
        files.append(str(path))
        seed_of[str(path)] = seed
    frame = collect_metrics(files, str(tmp_path / "m.csv"), seed_of)
    assert list(frame["seed"]) == ["2", "10"]


def test_the_mean_over_seeds_and_the_spread(seeded):
    means = seeds.seed_mean(seeded)
    assert list(means.columns) == METRIC_COLUMNS and len(means) == len(seeded) - 5 * 2 * 3 + 0
    row = means[(means["k"] == "4") & (means["dataset"] == "d1") & (means["measure"] == "nDCG@10")]
    assert row["value"].item() == pytest.approx((0.45 + 0.65) / 2)
    # collapsed in one seed of two: the mean flag is above 0, the run counts as collapsed
    flag = means[(means["k"] == "16") & (means["measure"] == "collapsed")]["value"]
    assert list(flag) == [0.5, 0.5]
    assert seeds.spread([0.2, 0.4]) == pytest.approx(math.sqrt(0.02))  # sample std, n - 1
    assert seeds.spread([0.2]) is None
    one = seeds.per_seed(seeded)["0"]
    assert seeds.seed_mean(one) is one  # one seed: the frame itself
    assert set(one["backbone"]) == {"small", "BM25"} and len(one) == 3 * 2 * 5 + 2
    with pytest.raises(ValueError, match="seed_mean"):
        run_table(seeded, REPORT, BACKBONES)


def test_best_k_is_that_of_the_mean_and_each_seed_has_its_own(seeded):
    per = seeds.per_seed(seeded)
    assert best_k(seeds.seed_mean(seeded), "small", "nDCG@10", ["d1", "d2"]) == "4"
    assert {s: best_k(m, "small", "nDCG@10", ["d1", "d2"]) for s, m in per.items()} == {"0": "1", "1": "4"}


def _cells(cells: dict) -> dict:
    return {(row["k"], cell["column"]): cell for row in cells["rows"] for cell in row["cells"]}


def test_table1_shows_the_mean_and_the_spread_over_seeds(seeded):
    cells = table1.table1_cells(seeded, REPORT, BACKBONES)
    by = _cells(cells)
    assert cells["seeds"] == ["0", "1"]
    # k=4: seed means 0.40 and 0.60 -> 0.500 ± 0.141 (std of (0.4, 0.6), n - 1); the best k of the means
    assert by[("4", "D nDCG@10")]["text"] == "**0.500 ± 0.141**"
    assert by[("1", "D nDCG@10")]["text"] == "0.375 ± 0.106"
    assert by[("4", "FLOPs")]["text"] == "3.00 ± 1.41"
    assert by[("4", "q / d dims")]["text"] == "10.0 ± 0.0 / 50.0 ± 0.0"
    assert by[("16", "D nDCG@10")]["text"] == "collapsed (1 of 2 seeds)"
    assert by[("-", "D nDCG@10")]["text"] == "0.250"  # BM25: not trained, one value
    number = by[("4", "D nDCG@10")]["numbers"][0]
    assert number["seeds"] == ["0", "1"] and number["spread"] == pytest.approx(math.sqrt(0.02))
    # every source is a metrics.csv line (header = line 1) with its seed
    for src in number["sources"]:
        line = seeded.loc[src["line"] - 2]
        assert (line["seed"], line["dataset"], line["value"]) == (src["seed"], src["dataset"], src["value"])
    assert sorted((s["seed"], s["dataset"]) for s in number["sources"]) == [("0", "d1"), ("0", "d2"), ("1", "d1"),
                                                                             ("1", "d2")]
    md = table1.table1_markdown(seeded, REPORT, BACKBONES, cells=cells)
    assert "Seeds: every run was trained once per seed (2 seeds: 0, 1; recipe.seeds)" in md


def test_a_seed_missing_a_dataset_leaves_the_cell_empty(seeded):
    partial = seeded.drop(seeded[(seeded["k"] == "4") & (seeded["seed"] == "1") & (seeded["dataset"] == "d2")
                                 & (seeded["measure"] == "nDCG@10")].index)
    by = _cells(table1.table1_cells(partial, REPORT, BACKBONES))
    assert by[("4", "D nDCG@10")]["text"] == "–"
    assert by[("1", "D nDCG@10")]["text"] == "**0.375 ± 0.106**"  # now the best k of the means


def test_one_seed_tables_carry_nothing_of_seeds(seeded):
    one = seeds.per_seed(seeded)["0"]
    cells = table1.table1_cells(one, REPORT, BACKBONES)
    text = json.dumps(cells)
    assert "seed" not in text and "spread" not in text and "±" not in text
    md = table1.table1_markdown(one, REPORT, BACKBONES, cells=cells)
    assert "Seeds:" not in md and "±" not in md
    assert "**0.450**" in md  # seed 0's own best k, k=1
    beir = beir_table.beir_markdown(one, REPORT, BACKBONES)
    assert "±" not in beir and "Seeds:" not in beir


def test_the_beir_table_shows_mean_and_spread_per_dataset(seeded):
    md = beir_table.beir_markdown(seeded, REPORT, BACKBONES)
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in md.splitlines() if line.startswith("| ")]
    assert rows[0] == ["Backbone", "k", "d1", "d2", "mean (D nDCG@10)"]
    # d1: 0.45, 0.65; d2: 0.35, 0.55; their per-seed means 0.40, 0.60
    assert ["Small", "4", "0.550 ± 0.141", "0.450 ± 0.141", "0.500 ± 0.141"] in rows
    assert ["BM25 (Anserini, k1=0.9, b=0.4)", "-", "0.300", "0.200", "0.250"] in rows
    assert "|   4 | 0.550 ± 0.141 |" in md  # numbers right-aligned
    assert "Seeds: every run was trained once per seed" in md and "best k" not in md


def test_per_query_scores_are_averaged_over_seeds():
    a = pd.DataFrame({"query_id": ["q1", "q2", "q3"], "measure": "nDCG@10", "value": [1.0, 0.0, 0.5]})
    b = pd.DataFrame({"query_id": ["q2", "q1"], "measure": "nDCG@10", "value": [0.5, 0.0]})
    mean = seeds.mean_perquery([a, b])
    assert mean.to_dict("list") == {"query_id": ["q1", "q2"], "measure": ["nDCG@10"] * 2, "value": [0.5, 0.25]}
    assert seeds.mean_perquery([a]) is a
    grouped = seeds.by_model({("r", "1", 0, "d"): "x", ("r", "1", 1, "d"): "y", ("r", "4", 0, "d"): "z"}, 3)
    assert grouped == {("r", "1", "d"): ["x", "y"], ("r", "4", "d"): ["z"]}
    assert seeds.by_model({("r", "1", "d"): "x"}, 3) == {("r", "1", "d"): ["x"]}


def test_training_logs_are_averaged_step_by_step():
    a = [{"step": 1, "ranking_loss": 1.0, "flops": None}, {"step": 2, "ranking_loss": 0.5}, {"step": 3, "ranking_loss": 0.2}]
    b = [{"step": 1, "ranking_loss": 3.0, "flops": None}, {"step": 2, "ranking_loss": float("nan")}]
    mean = seeds.mean_train_logs([a, b])
    assert [row["step"] for row in mean] == [1, 2]  # the steps every seed logged
    assert mean[0] == {"step": 1, "ranking_loss": 2.0, "flops": None}
    assert math.isnan(mean[1]["ranking_loss"])  # a seed that collapsed stops the mean curve


def _evidence(seeded) -> Evidence:
    pq = {}
    for k, seed in NDCG:
        for j, ds in enumerate(("d1", "d2")):
            base = NDCG[(k, seed)][j]
            pq.setdefault(("small", k, ds), []).append(
                pd.DataFrame({"query_id": [f"q{i}" for i in range(4)], "measure": "nDCG@10",
                              "value": [base - 0.1, base - 0.05, base + 0.05, base + 0.1]}))
    perquery = {key: seeds.mean_perquery(frames) for key, frames in pq.items()}
    return Evidence(seeds.seed_mean(seeded), perquery, backbones=BACKBONES, report=REPORT,
                    seed_metrics=seeds.per_seed(seeded))


CLAIMS = {"datasets": ["d1", "d2"], "list": [
    {"id": "c1", "text": "best k beats k=1", "type": "best_k_above", "backbones": ["small"], "above": 1},
    {"id": "c2", "text": "best beats 16", "type": "compare", "a": {"backbone": "small", "k": "best"},
     "b": {"backbone": "small", "k": 16}, "expect": "greater"}]}


def test_claims_test_the_seed_means_and_say_how_many_seeds_select_the_best_k(seeded):
    ev = _evidence(seeded)
    cfg = with_defaults("claims", CLAIMS)
    verdicts = {v.id: v for v in evaluate_claims(ev, cfg)}
    # compare on the per-query scores averaged over seeds: k=4's macro mean is the mean over seeds
    assert "small k=4 = 0.5000 vs small k=16 = 0.0600" in verdicts["c2"].details
    agreement = ("small: 1 of 2 training seeds select k=4, the best k of their mean, each on its own "
                 "(seed 0: 1, seed 1: 4; on d1, d2, nDCG@10)")
    assert agreement in verdicts["c1"].notes and agreement in verdicts["c2"].notes
    md = claims_markdown(list(verdicts.values()), cfg, seeds=["0", "1"])
    # two seeds are too few to estimate their spread: the declared run-level noise, said once
    assert md.count("every run was trained with 2 seeds (0, 1), too few to estimate their spread, so each "
                    "comparison adds a declared run-level noise per trained model") == 1
    assert claims_record(list(verdicts.values()), cfg, ["0", "1"])["seeds"] == ["0", "1"]


def test_one_seed_claims_say_once_that_a_declared_training_variance_is_in_the_tests(seeded):
    one = seeds.per_seed(seeded)["0"]
    ev = Evidence(one, {}, backbones=BACKBONES, report=REPORT)
    s = Settings.from_config(with_defaults("claims", CLAIMS))
    assert seed_notes(ev, s, ["small"]) == []
    cfg = with_defaults("claims", {"datasets": ["d1", "d2"], "list": []})
    md = claims_markdown([], cfg, seeds=["0"])
    assert md.count("Training variance: one training seed per run, so each comparison adds a "
                    "declared run-level noise") == 1 and md == claims_markdown([], cfg)
    assert "seeds" not in claims_record([], cfg, ["0"])


def test_export_mteb_writes_one_model_per_seed_with_its_own_training_revision(tmp_path):
    """``lsrbench export-mteb`` of a two-seed metrics.csv: each seed its own MTEB model
    (``lsrbench__<run>-k<k>-seed<s>``), its revision the config hash of that seed's training
    (found through metrics.sources.json's ``seeds``); BM25 one model."""
    from lsrbench.report.mteb_results import export_mteb_results
    from lsrbench.report.results import collect_metrics

    results, files, seed_of = tmp_path / "results", [], {}
    for seed, value, train in (("0", 0.4, "a" * 12), ("1", 0.6, "b" * 12), (NO_SEED, 0.3, None)):
        run, k = ("BM25", "-") if train is None else ("small", "1")
        folder = (results / "bm25" / "d1" / "x") if train is None else (results / "runs" / run / "k1" / train / "d1" / "i" / "e")
        folder.mkdir(parents=True)
        pd.DataFrame([(run, k, "d1", "nDCG@10", value)], columns=METRIC_COLUMNS).to_csv(folder / "metrics.tsv", sep="\t",
                                                                                       index=False)
        files.append(str((folder / "metrics.tsv").relative_to(tmp_path)))
        if train is not None:
            seed_of[files[-1]] = seed
            (folder.parents[2] / "train_provenance.json").write_text(json.dumps({"config_hash": seed * 64}))
    collect_metrics([str(tmp_path / f) for f in files], str(results / "metrics.csv"),
                    {str(tmp_path / f): s for f, s in seed_of.items()})
    (results / "metrics.sources.json").write_text(json.dumps(
        {"manifest": "results/metrics.sources.json", "sources": files, "seeds": seed_of}))
    written = export_mteb_results(results, tmp_path / "mteb")
    names = sorted(str(p.relative_to(tmp_path / "mteb" / "results")) for p in written)
    assert names == ["lsrbench__bm25/unknown/LocalBEIR-d1.json", f"lsrbench__small-k1-seed0/{'0' * 16}/LocalBEIR-d1.json",
                     f"lsrbench__small-k1-seed1/{'1' * 16}/LocalBEIR-d1.json"]
    scores = {p.parent.parent.name: json.loads(p.read_text())["scores"]["test"][0]["ndcg_at_10"] for p in written}
    assert scores == {"lsrbench__bm25": 0.3, "lsrbench__small-k1-seed0": 0.4, "lsrbench__small-k1-seed1": 0.6}
