"""``benchmark/gpu.sh --device cpu --quick``, the GPU script of issue 21, runs end to end on a CPU (so the
first GPU run does not die on a typo) and its JSON holds every section with agreeing numbers:
lsrbench's fp32 vectors are sentence-transformers', bf16 ones close to fp32 ones, the fused and
SpladePooling training steps start from the same loss, the CPU nDCG@10 is the fp32 one, and the
micro tiny default finishes through Snakemake. What needs CUDA is listed in the output."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers.paths import REPO, SHARED

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gpu_json(tmp_path_factory):
    if not (SHARED / "models" / "splade-tiny-msmarco" / "model.safetensors").is_file():
        pytest.skip(f"{SHARED} has no splade-tiny-msmarco")
    out = tmp_path_factory.mktemp("gpu") / "gpu-cpu-quick.json"
    env = {**os.environ, "PYTHON": sys.executable, "LSRBENCH_SHARED": str(SHARED)}
    # 8 texts per encode case (--quick's default is 16): every case and comparison, less encoding
    proc = subprocess.run(["bash", "benchmark/gpu.sh", "--device", "cpu", "--quick", "--docs", "8", "--output", str(out)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert "Not checked without CUDA" in proc.stdout and "tiny default" in proc.stdout
    return json.loads(out.read_text())


def test_every_section_ran(gpu_json):
    assert gpu_json["errors"] == {} and gpu_json["device"] == "cpu" and gpu_json["quick"]
    assert {"encode", "train", "agree", "dag"} <= set(gpu_json)
    assert gpu_json["peaks_tflops"]["bf16"] > 0 and gpu_json["peaks_tflops"]["fp32"] > 0
    assert any("peak GPU memory" in line for line in gpu_json["not_checked"])


def test_encode_cases_agree_with_sentence_transformers(gpu_json):
    cases = gpu_json["encode"]
    assert len(cases) == 3 * 2 * 2  # models x lengths x precisions
    for case in cases:
        assert case["lsrbench_path"] == "fast" and case["docs_per_s_lsrbench"] > 0
        assert case["docs_per_s_sentence_transformers"] > 0 and case["flops"]["total_flops"] > 0
        assert case["share_of_bf16_peak_lsrbench"] > 0
        assert case["host_savings_output"]["bit_identical"]  # tokenising ahead, non-zeros on the device: same bytes
        out = case["output_vs_sentence_transformers"]
        if case["precision"] == "fp32":  # the fast path's premise: sentence-transformers' vectors
            assert out["same_nonzero_set"] and out["max_abs_diff"] <= 1e-4
        else:
            agree = case["bf16_vs_fp32_lsrbench"]
            assert agree["nonzero_overlap_jaccard"] > 0.9 and agree["median_relative_difference"] < 0.02


def test_training_steps_and_batch_search(gpu_json):
    assert len(gpu_json["train"]) == 3
    for case in gpu_json["train"]:
        fused, plain = case["sides"]["fused"], case["sides"]["spladepooling"]
        assert fused["fused_path_on"] and fused["s_per_step"] > 0 and plain["s_per_step"] > 0
        assert case["first_loss_relative_difference"] < 0.05  # same batch, same dropout: same loss up to bf16
        for side in (fused, plain):  # a CPU never runs out of memory here: the search stops at --max-batch
            assert side["largest_batch"]["largest"] == 4 and side["largest_batch"]["limit_reached"]


def test_vaswani_agreement(gpu_json):
    agree = gpu_json["agree"]
    runs = agree["runs"]
    assert set(runs) == {"device_fp32", "device_bf16"} and all(0 < r["nDCG@10"] <= 1 for r in runs.values())
    assert agree["ndcg10_device_fp32_minus_cpu"] == 0  # on a CPU the device run is the CPU run
    assert agree["device_fp32_vs_cpu_fp32_documents"]["bit_identical"]
    assert agree["bf16_vs_fp32_documents"]["nonzero_overlap_jaccard"] > 0.9
    assert abs(agree["ndcg10_bf16_minus_fp32"]) < 0.05


def test_micro_tiny_default(gpu_json):
    dag = gpu_json["dag"]
    assert dag["returncode"] == 0 and not dag["timed_out"] and dag["jobs_finished"] > 5 and not dag["use_gpu"]
    measures = {row["measure"] for row in dag["metrics"]}
    assert {"nDCG@10", "RR@10"} <= measures and dag["rows_only_in_one"] == 0
    assert all(v == 0 for v in dag["max_abs_difference_per_measure"].values())  # --quick: compared with itself
