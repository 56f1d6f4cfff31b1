"""mteb as an independent check of lsrbench's evaluation (``lsrbench mteb-check``), and lsrbench's
metrics in MTEB's result format (``lsrbench export-mteb``).

The real SPLADE-tiny checkpoint (``../shared/models/splade-tiny-msmarco``), saved as a run's
``model/`` the way the train stage saves it, at the tiny default's own lengths (issue 23.1): the
model folder keeps the *training* lengths (``recipe.*_max_length``, 64) in its
``sentence_bert_config.json``, and lsrbench scores it (the index stage's encoding at the
*evaluation* lengths, ``evaluation.*_max_length``, 256; exact search; ir_measures) into the run's
``metrics.tsv``. Then ``lsrbench mteb-check`` scores the same model folder through mteb with
every network connection refused, at the evaluation's lengths, and must agree within 1e-4. At the
saved lengths (what ``SparseEncoder(path)`` and mteb alone use) the numbers differ, which is what
the check failed on before. Measured on the whole collection (11,429 documents, 93 queries, max
length 512): lsrbench nDCG@10 0.372485, mteb 0.37248 (mteb rounds to 5 decimals); that takes
minutes on 2 cores, so the test uses a fixed subset: the first 10 queries, their judged documents
and the first 100 other documents in corpus order.
"""

from __future__ import annotations

import json
import socket

import pytest

from helpers.paths import REPO, shared_or_skip

pytest.importorskip("mteb")
pytest.importorskip("beir")

from lsrbench.evaluate import mteb_check as mc  # noqa: E402
from lsrbench.report import mteb_results as mr  # noqa: E402

N_QUERIES, N_OTHER_DOCS = 10, 100
MEASURES = ["nDCG@10", "RR@10", "R@100", "P@10", "AP@10"]


def tiny_default_lengths() -> dict:
    """The tiny default's token lengths: the recipe's (training, saved with the model) and the
    evaluation's (what every table was computed at)."""
    import yaml

    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    return {"train": (config["recipe"]["query_max_length"], config["recipe"]["document_max_length"]),
            "evaluate": (config["evaluation"]["query_max_length"], config["evaluation"]["document_max_length"])}


class NoNetwork:
    """Refuse every IPv4/IPv6 connection (Unix sockets are left alone); records the attempts."""

    def __enter__(self):
        self.attempts, self._connect, self._connect_ex = [], socket.socket.connect, socket.socket.connect_ex
        original = self._connect

        def refuse(sock, address, *rest):
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                self.attempts.append(address)
                raise OSError(f"network disabled in this test (tried {address})")
            return original(sock, address, *rest)

        socket.socket.connect = socket.socket.connect_ex = refuse
        return self

    def __exit__(self, *exc):
        socket.socket.connect, socket.socket.connect_ex = self._connect, self._connect_ex


@pytest.fixture(scope="module")
def vaswani_subset(tmp_path_factory):
    """The first 10 queries, their judged documents plus the first 100 others (BEIR layout)."""
    from lsrbench.data.beir import load_beir_folder
    from lsrbench.data.store import write_beir_folder

    ds = load_beir_folder(shared_or_skip("data", "vaswani"))
    qids = list(ds.queries)[:N_QUERIES]
    judged = {d for q in qids for d in ds.qrels[q]}
    keep = judged | set([d for d in ds.corpus if d not in judged][:N_OTHER_DOCS])
    ds.corpus = {d: t for d, t in ds.corpus.items() if d in keep}
    ds.queries = {q: ds.queries[q] for q in qids}
    ds.qrels = {q: ds.qrels[q] for q in qids}
    return write_beir_folder(ds, tmp_path_factory.mktemp("results") / "data" / "vaswani" / "eval")


@pytest.fixture(scope="module")
def checked(vaswani_subset, tmp_path_factory):
    """A results folder with one run scored by lsrbench, then ``lsrbench mteb-check`` on it."""
    import contextlib
    import io

    from lsrbench.cli import main
    from lsrbench.data.beir import load_beir_folder
    from lsrbench.evaluate.metrics import evaluate_run
    from lsrbench.evaluate.retrieval import search
    from lsrbench.evaluate.tidy import write_metric_rows
    from lsrbench.index.indexing import index_dataset
    from lsrbench.index.sparse import load_sparse
    from lsrbench.model.encoder import build_sparse_encoder
    from lsrbench.report.results import collect_metrics

    lengths = tiny_default_lengths()
    (train_query, train_doc), (eval_query, eval_doc) = lengths["train"], lengths["evaluate"]
    results = vaswani_subset.parents[2]
    run_dir = results / "runs" / "splade-tiny" / "k1"
    # as the train stage builds it (lsrbench.model.train._Run.build) and saves it
    build_sparse_encoder(str(shared_or_skip("models", "splade-tiny-msmarco")), train_doc, query_length=train_query,
                         document_length=train_doc, device="cpu").save(str(run_dir / "model"))
    ds = load_beir_folder(vaswani_subset)
    vectors = run_dir / "vaswani" / "index"
    index_dataset(str(run_dir / "model"), ds, 32, str(vectors / "queries.npz"), str(vectors / "docs.npz"),
                  query_max_length=eval_query, document_max_length=eval_doc)  # the index stage's encoding
    (docs, doc_ids), (queries, qids) = load_sparse(vectors / "docs.npz"), load_sparse(vectors / "queries.npz")
    hits = search(queries, qids, docs, doc_ids, top_k=1000)
    ours, _ = evaluate_run({q: dict(h) for q, h in hits.items()}, ds.qrels, MEASURES)
    write_metric_rows(run_dir / "vaswani" / "metrics.tsv", None, "splade-tiny", "1", "vaswani",
                      [*ours.items(), ("FLOPs", 1.0)])
    collect_metrics([str(run_dir / "vaswani" / "metrics.tsv")], str(results / "metrics.csv"))
    mteb_root = tmp_path_factory.mktemp("mteb_results")
    printed = io.StringIO()
    with NoNetwork() as guard, contextlib.redirect_stdout(printed):
        status = main(["mteb-check", "splade-tiny/k1", "vaswani", "--results", str(results),
                       "--configfile", str(REPO / "config/config.yaml"), "--mteb-results", str(mteb_root)])
    report = json.loads((run_dir / "vaswani" / "mteb_check.json").read_text())
    return {"status": status, "report": report, "ours": ours, "hits": hits, "ds": ds, "mteb_root": mteb_root,
            "folder": vaswani_subset, "attempts": guard.attempts, "results": results, "run_dir": run_dir,
            "printed": printed.getvalue(), "lengths": lengths}


def test_subset_is_what_it_claims(checked):
    ds = checked["ds"]
    assert len(ds.queries) == N_QUERIES
    assert len(ds.corpus) == len({d for rels in ds.qrels.values() for d in rels}) + N_OTHER_DOCS


def test_mteb_ran_offline(checked):
    assert checked["attempts"] == []


def test_the_model_folder_saves_the_training_lengths(checked):
    """The premise: a finished run's model/ loads, in sentence-transformers and mteb, with the
    recipe's lengths (64), not those every table was computed at (256)."""
    saved = json.loads((checked["run_dir"] / "model" / "sentence_bert_config.json").read_text())
    assert (saved["query_length"], saved["document_length"]) == checked["lengths"]["train"] == (64, 64)
    assert checked["lengths"]["evaluate"] == (256, 256)


def test_mteb_agrees_with_lsrbench(checked):
    """Issue 23.1: before, mteb scored the saved (training) lengths: nDCG@10 0.39391 against
    lsrbench's 0.40394 on the tiny default."""
    report = checked["report"]
    text = "; ".join(f"{r['measure']} ours {r['lsrbench']:.6f} mteb {r['mteb']:.6f}" for r in report["rows"])
    assert checked["status"] == 0, text
    assert [r["measure"] for r in report["rows"]] == MEASURES  # every measure of metrics.tsv that mteb has
    assert report["tol"] == 1e-4
    assert report["ok"] is True and all(abs(r["diff"]) <= 1e-4 for r in report["rows"]), text
    assert report["encode_lengths"] == {"query_length": 256, "document_length": 256}
    assert report["model_saved_lengths"] == {"query_length": 64, "document_length": 64}
    assert report["mteb_scores"]["main_score"] == report["mteb_scores"]["ndcg_at_10"]
    assert 0.3 < checked["ours"]["nDCG@10"] < 0.95, text  # a real model on real data, not a degenerate run
    # every query has >= 10 positive-score hits, so mteb's zero-score padding cannot enter @10
    assert min(len(h) for h in checked["hits"].values()) >= 10
    assert report["mteb_model_name"] == "lsrbench/splade-tiny-k1"


def test_the_check_says_which_lengths_and_agrees_in_words(checked):
    lines = checked["printed"].splitlines()
    assert lines[0] == ("mteb encodes at the evaluation's lengths, 256 query / 256 document tokens "
                        "(evaluation.query_max_length / document_max_length), as lsrbench's index stage did; "
                        "the model folder saves its training lengths (64 / 64)")
    assert lines[-1].startswith(f"AGREE: mteb {checked['report']['mteb_version']} and lsrbench agree on all 5 measures "
                                f"of {checked['run_dir']} on vaswani within 0.0001 (largest difference ")
    assert "encoded at 256 query / 256 document tokens)" in lines[-1] and "mteb_check.json" in lines[-1]


def test_at_the_saved_lengths_mteb_scores_another_model(checked):
    """What ``SparseEncoder(path)`` alone gives (and mteb-check gave before): other numbers, beyond
    the tolerance, so the agreement above depends on the lengths and this test on the fix."""
    with NoNetwork():
        theirs = mc.mteb_scores(checked["run_dir"] / "model", checked["folder"], model_name="lsrbench/saved-lengths",
                                model_revision="r")
    assert theirs["lengths"] == {"query_length": 64, "document_length": 64}
    rows = mc.compare_scores(checked["ours"], theirs["scores"], MEASURES)
    assert not all(r["ok"] for r in rows), rows


def test_disagreement_reads_as_disagreement():
    report = {"ok": False, "tol": 1e-4, "mteb_version": "2.26.24", "encode_lengths": {"query_length": 64, "document_length": 64},
              "rows": mc.compare_scores({"nDCG@10": 0.40394, "RR@10": 0.62577, "R@1000": 0.96898},
                                        {"ndcg_at_10": 0.39391, "mrr_at_10": 0.62577, "recall_at_1000": 0.95735},
                                        ["nDCG@10", "RR@10", "R@1000"])}
    assert mc.summary_line(report, "splade-tiny/k1 on vaswani") == (
        "DISAGREE: mteb 2.26.24 and lsrbench differ by more than 0.0001 on 2 of 3 measures of splade-tiny/k1 on "
        "vaswani: nDCG@10 by -0.01003, R@1000 by -0.01163 (encoded at 64 query / 64 document tokens)")


def test_a_difference_fails_the_check(checked, tmp_path):
    rows = mc.compare_scores({"nDCG@10": 0.50}, {"ndcg_at_10": 0.5021}, ["nDCG@10", "FLOPs"])
    assert rows[0]["ok"] is False and rows[0]["diff"] == pytest.approx(0.0021)
    assert rows[1] == {"measure": "FLOPs", "mteb_key": None, "lsrbench": None, "mteb": None, "diff": None, "ok": None}


def test_mteb_filed_its_result_and_ours_reads_the_same_way(checked, tmp_path):
    report = checked["report"]
    assert report["mteb_task_name"] == "LocalBEIR-vaswani"
    theirs = mr.load_mteb_result(checked["mteb_root"], report["mteb_model_name"], report["mteb_task_name"])
    assert theirs.scores["test"][0]["ndcg_at_10"] == pytest.approx(report["mteb_scores"]["ndcg_at_10"], abs=1e-6)
    assert theirs.dataset_revision == mc.folder_revision(checked["folder"])
    # lsrbench's own numbers of the same run, exported in MTEB's format, read back by mteb's API
    written = mr.export_mteb_results(checked["results"], tmp_path)
    assert written == [tmp_path / "results" / "lsrbench__splade-tiny-k1" / "unknown" / "LocalBEIR-vaswani.json"]
    ours = mr.load_mteb_result(tmp_path, "lsrbench/splade-tiny-k1", "LocalBEIR-vaswani", model_revision="unknown")
    assert ours.get_score() == pytest.approx(checked["ours"]["nDCG@10"], abs=5e-7)  # mteb files 6 decimals
    assert abs(ours.get_score() - theirs.get_score()) <= 1e-4


def test_results_writer_round_trip(tmp_path):
    metrics = {"nDCG@10": 0.372528, "RR@10": 0.61, "R@1000": 0.93, "R(rel=2)@1000": 0.8, "FLOPs": 1.25}
    path = mr.write_mteb_result(tmp_path, metrics, model_name="lsrbench/splade-tiny-k1", model_revision="cfg0123",
                                dataset="vaswani", dataset_revision="abcd")
    assert path == tmp_path / "results" / "lsrbench__splade-tiny-k1" / "cfg0123" / "LocalBEIR-vaswani.json"
    assert {p.name for p in path.parent.iterdir()} == {"LocalBEIR-vaswani.json", "model_meta.json", "run_settings.jsonl"}
    (entry,) = mr.load_mteb_result(tmp_path, "lsrbench/splade-tiny-k1", "LocalBEIR-vaswani").scores["test"]
    assert entry["main_score"] == entry["ndcg_at_10"] == 0.372528
    assert entry["mrr_at_10"] == 0.61 and entry["recall_at_1000"] == 0.93
    assert entry["lsrbench:R(rel=2)@1000"] == 0.8 and entry["lsrbench:FLOPs"] == 1.25
    meta = json.loads((path.parent / "model_meta.json").read_text())
    assert meta["name"] == "lsrbench/splade-tiny-k1" and meta["model_type"] == ["sparse"]


def test_nanobeir_results_are_filed_under_mtebs_own_tasks(tmp_path):
    """A NanoBEIR dataset goes under MTEB's task (split train, as MTEB evaluates it), so the result
    reads back with mteb's validation on, like a published one."""
    import mteb
    from mteb.cache import ResultCache

    with NoNetwork() as guard:
        mr.write_mteb_result(tmp_path, {"nDCG@10": 0.5, "RR@10": 0.45}, model_name="lsrbench/x-k1",
                             model_revision="r1", dataset="NanoSciFact")
        task = mteb.get_task("NanoSciFactRetrieval")
        bench = ResultCache(tmp_path).load_results(models=["lsrbench/x-k1"], tasks=[task], include_remote=False,
                                                   validate_and_filter=True)
    assert guard.attempts == []
    (result,) = bench.model_results[0].task_results
    assert result.scores["train"][0]["ndcg_at_10"] == 0.5 and result.dataset_revision == task.metadata.revision
    assert set(mr.MTEB_NANOBEIR_TASKS.values()) == {t.metadata.name for t in mteb.get_benchmark("NanoBEIR").tasks}


def test_mteb_key():
    assert [mc.mteb_key(m) for m in ("nDCG@10", "RR@10", "R@1000", "P@5", "AP@100", "Success@1")] == \
        ["ndcg_at_10", "mrr_at_10", "recall_at_1000", "precision_at_5", "map_at_100", "hit_rate_at_1"]
    assert mc.mteb_key("R(rel=2)@1000") is None and mc.mteb_key("nDCG") is None and mc.mteb_key("FLOPs") is None


@pytest.mark.slow
def test_export_says_which_lengths_its_numbers_were_computed_at(micro_run, tmp_path, capsys):
    """``lsrbench export-mteb`` on a finished DAG run: every trained run's model_meta.json records
    the evaluation's length as ``max_tokens``, and the command says how to load a run's model/ to
    score as the results do (its sentence_bert_config.json has the recipe's lengths)."""
    import yaml

    from lsrbench.cli import main

    config = yaml.safe_load(micro_run["config"].read_text())
    evaluation = {"query_max_length": 256, "document_max_length": 256, **config["evaluation"]}  # the schema's defaults
    assert main(["export-mteb", str(tmp_path / "out"), "--results", str(micro_run["results"])]) == 0
    printed = capsys.readouterr().out.splitlines()
    metas = {p.parent.parent.name: json.loads(p.read_text()) for p in (tmp_path / "out").rglob("model_meta.json")}
    trained = {name: meta for name, meta in metas.items() if name != "lsrbench__bm25"}
    assert len(trained) == 2 and all(m["max_tokens"] == evaluation["document_max_length"] for m in trained.values())
    assert printed[1] == (f"2 results of trained runs were computed with texts cut at {evaluation['query_max_length']} "
                          f"query / {evaluation['document_max_length']} document tokens (evaluation.query_max_length / "
                          "document_max_length, at most a backbone's positions; max_tokens in model_meta.json). A run's "
                          "model/ saves its training lengths: to score it as these results do, set model[0].query_length "
                          f"= {evaluation['query_max_length']} and model[0].document_length = "
                          f"{evaluation['document_max_length']} after SparseEncoder(path) (lsrbench mteb-check does)")
