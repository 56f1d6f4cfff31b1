"""The bill of ``lsrbench plan`` (lsrbench.ops.bill) on hand-made jobs, sizes and records: exact
algebra from the counted FLOPs, the parameters and the records; a backbone that is not on disk is
sized from its published config; a GPU record's measured share replaces the assumed bracket."""

from __future__ import annotations

import json

import pytest

from helpers.paths import tiny_default
from lsrbench.index import roofline
from lsrbench.index.density import ROW_BYTES
from lsrbench.ops.bill import DOC_TERMS, QUERY_TERMS, SHARES, backbone_bill, bill_totals, read_records

DATASETS = {"corpus-a": {"documents": 1000, "evaluated_documents": 1000, "queries": 10},
            "corpus-b": {"documents": 50, "evaluated_documents": 50, "queries": 5}}


def _config() -> dict:
    config = tiny_default()
    config["backbones"] = {"bert": {"model": "bert-base-uncased"}, "mystery": {"model": "some-org/not-published"}}
    config["recipe"].update(steps=100, batch_size=8, query_max_length=32, document_max_length=128, checkpoint_steps=10)
    config["evaluation"].update(query_max_length=64, document_max_length=128, top_k=100, datasets=list(DATASETS))
    config["_datasets"] = {name: {"source": "beir", "path": name} for name in DATASETS}
    return config


def _jobs(run: str) -> dict:
    keys = [{"run": run, "k": k} for k in ("1", "16")]
    return {"train": keys, "index": [("index", {**key, "dataset": d}) for key in keys for d in DATASETS],
            "evaluate": [{**key, "dataset": d} for key in keys for d in DATASETS]}


def _peers(tmp_path, ms_1m: float, ms_100k: float) -> None:
    for name, ms in (("peers-1m.json", ms_1m), ("peers-100k.json", ms_100k)):
        row = {"collection": "realistic", "k": {"1000": {"systems": {"lsrbench": {"ms_per_query": ms}}}}}
        (tmp_path / name).write_text(json.dumps({"rows": [row]}))


def test_a_backbone_not_on_disk_is_billed_from_its_published_config(tmp_path):
    _peers(tmp_path, 4.0, 0.5)
    config, records = _config(), read_records(tmp_path)
    bill = backbone_bill(config, "bert", _jobs("bert"), DATASETS, records, gpu="H100")
    assert bill["shape"] == "published config of bert-base-uncased"
    params = roofline.parameters("bert-base-uncased")
    assert bill["parameters"] == params == 109514298
    step = roofline.train_step_flops("bert-base-uncased", 8, 32, 128)
    assert bill["flops"]["train"] == 2 * 100 * step
    # no dataset has a published length: texts at the evaluation's maxima; documents of both runs, queries too
    doc, query = (roofline.forward_flops("bert-base-uncased", n)["total"] for n in (128, 64))
    assert bill["flops"]["index"] == 2 * (1050 * doc + 15 * query)
    peak = roofline.DATASHEET_BF16_TFLOPS["H100"][0]
    train = bill["gpu_hours"]["train"]
    assert train["bound"] == pytest.approx(bill["flops"]["train"] / (peak * 1e12) / 3600, rel=1e-12)
    assert [train[f"at {s:g}"] for s in SHARES] == pytest.approx([train["bound"] / s for s in SHARES], rel=1e-12)
    assert bill["disk"] == {"train": 2 * params * 4, "train_checkpoint": 3 * params * 4,
                            "index": 2 * (1050 * (DOC_TERMS * 8 + ROW_BYTES) + 15 * (QUERY_TERMS * 8 + ROW_BYTES)),
                            "evaluate": int(2 * (10 * 100 + 5 * 50) * 45),
                            # one run's 1,050 documents with every term of BERT's 30,522 active
                            "index_one_run_every_term": 1050 * (30522 * 8 + ROW_BYTES)}
    # the exact search: 4 ms per query at 1M documents, linear, never below the 100k rate
    assert bill["evaluate_cpu_hours"] == pytest.approx(2 * (10 * 0.5 + 5 * 0.5) / 1000 / 3600, rel=1e-12)
    mystery = backbone_bill(config, "mystery", _jobs("mystery"), DATASETS, records)
    assert mystery["gpu_hours"] is None and "no published config" in mystery["shape"]
    total = bill_totals({"bert": bill, "mystery": mystery})
    assert total["backbones"] == 1 and total["gpu_hours"]["train"] == train
    assert "train_checkpoint" not in total["disk"] and total["disk"]["index_one_run_every_term"] == 1050 * (30522 * 8 + 56)


def test_records_measured_on_a_gpu_replace_the_assumed_share(tmp_path):
    """gpu.sh's record: its measured bf16 peak, and for the family it timed, the share the encode
    reached and the share a training step reached."""
    gpu = {"peaks_tflops": {"bf16": 700.0},
           "encode": [{"case": "random bert-base, length 256", "precision": "bf16", "tflops_lsrbench": 140.0}],
           "train": [{"case": "random bert-base", "batch_triplets": 32, "sides": {"fused": {"s_per_step": 0.5}}}]}
    (tmp_path / "gpu-cuda.json").write_text(json.dumps(gpu))
    bill = backbone_bill(_config(), "bert", _jobs("bert"), DATASETS, read_records(tmp_path))
    assert bill["rate"]["peak_tflops"] == 700.0 and "measured" in bill["rate"]["peak"]
    assert bill["rate"]["measured_shares"]["index"] == pytest.approx(0.2)
    share = roofline.train_step_flops("bert", 32, 32, 256) / (0.5 * 700e12)
    assert bill["rate"]["measured_shares"]["train"] == pytest.approx(share, rel=1e-12)
    index = bill["gpu_hours"]["index"]
    assert set(index) == {"bound", "at measured"} and index["at measured"] == pytest.approx(index["bound"] / 0.2)
    assert bill["evaluate_cpu_hours"] is None  # no search record: not estimated


def test_the_smoke_record_gives_memory_and_the_bytes_of_a_run_file(tmp_path):
    smoke = {"collection": {"documents": 200, "queries": 20}, "evaluation": {"top_k": 1000},
             "families": {"bert-base-uncased": {
                 "stages": {"train": {"batches": {"4": {"achieved_gflops": 50.0},
                                                  "8": {"achieved_gflops": 6.0, "step_flops": 3e12,
                                                        "steady_step_cpu_seconds": 50.0}},
                                      "paper_batch": {"how": "extrapolated", "peak_rss_gib": 9.5, "step_seconds": 30.0}},
                            "index": {"documents_per_second": 2.0}, "evaluate": {"output_bytes": 200_000}}}}}
    (tmp_path / "real_size_smoke.json").write_text(json.dumps(smoke))
    bill = backbone_bill(_config(), "bert", _jobs("bert"), DATASETS, read_records(tmp_path))
    assert bill["smoke"] == {"paper_batch": smoke["families"]["bert-base-uncased"]["stages"]["train"]["paper_batch"],
                             "trained_at": [4, 8], "achieved_gflops": 60.0,  # 3e12 / 50 s of CPU
                             "index_documents_per_second": 2.0}
    per_line = 200_000 / (20 * 200)  # the smoke's evaluate folder over its run lines
    assert bill["disk"]["evaluate"] == int(2 * (10 * 100 + 5 * 50) * per_line)


def _plan_of(hours: dict, disk: dict) -> dict:
    return {"gpu": "H100", "gpus": 8, "bill": {"a": {"gpu_hours": hours}, "unsized": {"gpu_hours": None}},
            "bill_totals": {"disk": disk}}


def test_the_total_line_sums_the_band_the_disk_and_the_days():
    from lsrbench.ops.bill_text import total_line

    hours = {"train": {"bound": 1.0, "at 0.5": 2.0, "at 0.25": 4.0}, "index": {"bound": 2.0, "at 0.5": 4.0, "at 0.25": 8.0}}
    disk = {"train": 1e12, "index": 2e12, "evaluate": 0.5e12, "index_one_run_every_term": 3e14}
    # 2 + 4 = 6 to 4 + 8 = 12 GPU-hours; 3.5 TB kept; 12 h / 8 GPUs / 24 h = 0.0625 days
    assert total_line(_plan_of(hours, disk)) == (
        "total: 6-12 GPU-hours (H100), 3.5 TB disk, about 0.062 days on 8 GPUs (the band: 50% to 25% of the bf16 "
        "peak, assumed: no benchmark/gpu.sh record; days at its high end; one run collapsed to every vocabulary term "
        "would need 300 TB for its documents' index alone: the index stage stops it on its sample)")
    measured = {"train": {"bound": 1.0, "at measured": 3.0}, "index": {"bound": 2.0, "at measured": 9.0}}
    assert total_line(_plan_of(measured, {"train": 0, "index": 1e9})).startswith(
        "total: 12-24 GPU-hours (H100), 0.001 TB disk, about 0.12 days on 8 GPUs (the band: measured share of the "
        "peak (benchmark/gpu.sh record) to half of it (assumed)")
    assert total_line({"bill": {"a": {"gpu_hours": None}}, "bill_totals": {"disk": {}}}) is None
