"""``benchmark/real_size_smoke.py``'s parts that decide what it measures: each family's stand-in
tokenizer has exactly its published vocabulary with the special tokens at the ids its config names
(so the model's padding id and its tokenizer's agree), the smoke collection's documents fill the
paper's 256 tokens, and the paper batch's extrapolation is the linear fit, measured where run."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from helpers.paths import shared_or_skip
from lsrbench.model.public_configs import PUBLIC_CONFIGS, public_config

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmark"))
smoke = importlib.import_module("real_size_smoke")


@pytest.mark.parametrize("model", sorted(PUBLIC_CONFIGS))
def test_the_stand_in_tokenizer_has_the_configs_vocabulary_and_special_ids(model, tmp_path):
    shared_or_skip("models", "splade-tiny-msmarco")
    config = public_config(model)
    tok = smoke.stand_in_tokenizer(config, tmp_path)
    assert len(tok) == config["vocab_size"]
    assert tok.pad_token_id == config["pad_token_id"]
    for name in ("bos_token_id", "cls_token_id"):
        if name in config:
            assert tok.cls_token_id == config[name]
    ids = tok("the rescaled head of a sparse retriever")["input_ids"]
    assert ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id and max(ids) < config["vocab_size"]
    assert tok.unk_token_id not in ids  # ordinary English: real word pieces, as the real tokenizers give


def test_the_smoke_documents_fill_the_papers_document_length(tmp_path):
    shared_or_skip("data", "vaswani")
    shared_or_skip("models", "splade-tiny-msmarco")
    counts = smoke.smoke_collection(tmp_path / "c", 30, 5)
    assert counts["documents"] == 30 and counts["judgments"] > 0
    tok = smoke.stand_in_tokenizer(public_config("bert-base-uncased"), tmp_path / "tok")
    import json

    texts = [json.loads(line)["text"] for line in (tmp_path / "c" / "corpus.jsonl").read_text().splitlines()]
    assert min(len(tok(t)["input_ids"]) for t in texts) > 256


def test_the_paper_batch_is_the_linear_fit_of_the_measured_batches():
    trains = {4: {"peak_rss_gib": 3.0, "steady_step_seconds": 10.0}, 8: {"peak_rss_gib": 5.0, "steady_step_seconds": 18.0}}
    at = smoke.at_paper_batch(trains, 32)
    assert at["peak_rss_gib"] == pytest.approx(1.0 + 0.5 * 32) and at["step_seconds"] == pytest.approx(2.0 + 2.0 * 32)
    assert at["how"].startswith("extrapolated")
    trains[32] = {"peak_rss_gib": 16.5, "steady_step_seconds": 70.0, "steady_step_cpu_seconds": 35.0}
    assert smoke.at_paper_batch(trains, 32) == {"batch": 32, "how": "measured", "peak_rss_gib": 16.5, "step_seconds": 70.0,
                                                "step_cpu_seconds": 35.0}


def test_the_record_says_which_batches_ran_and_how_they_are_scaled_to_the_papers():
    trains = {"2": {"peak_rss_gib": 4.0}, "4": {"peak_rss_gib": 6.0}}
    result = {"batches": [2, 4], "recipe": {"batch_size": 32}, "families": {"m": {
        "parameters": 2**30 // 12, "stages": {"norm": {"peak_rss_gib": 0.5}, "train": {
            "batches": trains, "paper_batch": smoke.at_paper_batch({int(b): t for b, t in trains.items()}, 32)}}}}}
    note = smoke.annotate(result)["paper_batch"]
    assert note["batch"] == 32 and note["trained_at"] == [2, 4]
    assert "24 GiB" in note["why"] and "linear in the batch" in note["how"] and note["uncertainty"].startswith("8x beyond")
    fit = result["families"]["m"]["stages"]["train"]["paper_batch"]["fits"]["peak_rss_gib"]
    assert fit["intercept"] == pytest.approx(2.0) and fit["expected_intercept_gib"] == 1.5  # 0.5 + 12 B x 2^30 / 12
    assert fit["at_paper_batch_through_expected_intercept"] == pytest.approx(1.5 + (6.0 - 1.5) / 4 * 32)
    assert smoke.paper_batch_note([4, 32], 32) == {"batch": 32, "trained_at": [4, 32], "how": "measured at the paper's batch"}


def test_merged_records_keep_each_family_once_and_refuse_other_settings(tmp_path, monkeypatch):
    import json

    record = importlib.import_module("real_size_record")
    monkeypatch.setattr(record, "REPO", tmp_path)
    monkeypatch.setattr(record, "write_result", lambda name, payload: (tmp_path / f"{name}.json").write_text(json.dumps(payload)))
    results = tmp_path / "benchmark" / "results"
    results.mkdir(parents=True)
    settings = {"threads": 1, "steps": 2, "batches": [2, 4], "recipe": {"batch_size": 32}, "evaluation": {}, "collection": {}}
    family = {"parameters": 1, "stages": {"train": {"paper_batch": {"how": "measured"}}}}
    (results / "a.json").write_text(json.dumps({**settings, "families": {"x": family}, "runs": [{"families": ["x"], "git": "abc"}]}))
    (results / "b.json").write_text(json.dumps({**settings, "families": {"x": {}, "y": family}, "runs": [{"families": ["y"], "git": "abc"}]}))
    assert smoke.merge_records("m", ["a", "b"]) == 0
    merged = json.loads((tmp_path / "m.json").read_text())
    assert merged["families"] == {"x": family, "y": family}
    assert merged["runs"] == [{"families": ["x"], "git": "abc"}, {"families": ["y"], "git": "abc"}]
    # one record is one clean commit: parts of two commits, or of a dirty tree, are refused
    (results / "d.json").write_text(json.dumps({**settings, "families": {"y": family}, "runs": [{"families": ["y"], "git": "def"}]}))
    with pytest.raises(SystemExit, match="are not one record: 2 commits"):
        smoke.merge_records("m", ["a", "d"])
    (results / "e.json").write_text(json.dumps({**settings, "families": {"y": family}, "runs": [{"families": ["y"], "git": "abc+dirty"}]}))
    with pytest.raises(SystemExit, match=r"are not one record: a dirty working tree \(abc\+dirty\)"):
        smoke.merge_records("m", ["a", "e"])
    (results / "c.json").write_text(json.dumps({**settings, "steps": 3, "families": {}}))
    with pytest.raises(SystemExit, match="c ran other settings"):
        smoke.merge_records("m", ["a", "c"])


def test_the_committed_smoke_record_is_not_one_clean_commit():
    """issue 49: merged from 5 runs at 4 commits, 3 of them dirty (the guard that refuses it now)."""
    import json

    from helpers.paths import REPO

    record = importlib.import_module("real_size_record")
    runs = json.loads((REPO / "benchmark/results/real_size_smoke.json").read_text())["runs"]
    why = record.not_one_clean_commit([run["git"] for run in runs])
    assert len(runs) == 5 and why.startswith("a dirty working tree (0fa4cb104e96+dirty, b7abeebf0906+dirty, f60f3c698689+dirty)")
    assert record.not_one_clean_commit(["3638386d7b6e"] * 2) is None and record.not_one_clean_commit([None]) is not None
