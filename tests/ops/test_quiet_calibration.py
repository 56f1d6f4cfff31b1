"""A calibration that knows when it was disturbed (lsrbench.ops.calibrate.disturbance) and a cost page
that refuses a disturbed one (lsrbench.ops.plan.check_publishable, ``lsrbench cells``), on the numbers
of the calibration that made the old docs/cells-tiny.md under load (7.98 s per step against 0.65 s)."""

from __future__ import annotations

import json

import pytest

from helpers.cli import lsrbench
from helpers.paths import REPO
from lsrbench.errors import InputError
from lsrbench.ops.calibrate import disturbance
from lsrbench.ops.plan import check_publishable


def test_steady_steps_on_a_whole_core_are_quiet():
    found = disturbance([0.64, 0.66, 0.65, 0.70], cores_got=0.97, load=0.4)
    assert found["noisy"] == [] and found["train_step_spread"] == pytest.approx((0.70 - 0.64) / 0.66)
    assert found["train_step_samples"] == [0.64, 0.66, 0.65, 0.70] and found["cores_got"] == 0.97


def test_a_step_slowed_by_other_work_or_a_quarter_core_is_noisy():
    spiky = disturbance([0.65, 7.98, 0.66, 0.70], cores_got=0.95, load=None)
    assert len(spiky["noisy"]) == 1 and spiky["noisy"][0].startswith("timed steps spread 1047% (more than 50%")
    shared = disturbance([2.6, 2.7, 2.6, 2.65], cores_got=0.25, load=3.5)
    assert shared["noisy"] == ["got 0.25 CPU seconds per wall second (less than 0.8: other processes shared the cores; "
                               "1-minute load 3.50 per core)"]
    assert disturbance([0.65], cores_got=None, load=None)["noisy"] == ["fewer than 2 timed training steps: no spread to check"]


# the calibration behind the old docs/cells-tiny.md (benchmark/results/plan-tiny_default.json before a
# quiet machine remakes it: benchmark/cells_costs.sh), made before calibrations recorded their disturbance
LOAD_MADE = {"source": "../shared/models/splade-tiny-msmarco", "device": "cpu (1 threads)", "train_batch": 16,
             "train_step_seconds": 7.981822907499918, "document_seconds": 0.0928272904843741,
             "query_seconds": 0.02896798227956551, "posting_seconds": 6.839035015698376e-07, "texts": "256 passages",
             "encode_call_seconds": 1.1556410875000438, "train_startup_seconds": 78.57947707176208,
             "index_startup_seconds": 78.57947707176208, "evaluate_startup_seconds": 12.349345922470093,
             "result_seconds": 3.071245900906527e-05, "threads": 1}


def _plan(calibration: dict) -> dict:
    return {"backbones": {"splade-tiny": {"calibration": calibration}, "other": {"calibration": {"error": "not on disk"}}}}


def test_the_page_refuses_a_noisy_or_unchecked_calibration_and_takes_a_quiet_one():
    with pytest.raises(InputError, match="backbones.splade-tiny.calibration: made before calibrations recorded"):
        check_publishable(_plan(LOAD_MADE), "plan.json")
    noisy = disturbance([0.65, 7.98, 0.66, 0.70], cores_got=0.3, load=3.0)
    with pytest.raises(InputError) as err:
        check_publishable(_plan(noisy), "plan.json")
    assert str(err.value).startswith("plan.json: backbones.splade-tiny.calibration.noisy: calibrated under load "
                                     "(timed steps spread 1047%")
    check_publishable(_plan(disturbance([0.64, 0.66, 0.65, 0.70], 0.97, 0.4)), "plan.json")


def test_lsrbench_cells_refuses_a_noisy_plan_in_one_line(tmp_path):
    plan = tmp_path / "plan.json"
    noisy = {**LOAD_MADE, **disturbance([6.76, 7.59, 4.16, 3.54], cores_got=0.19, load=7.46)}  # measured here, 13:08 UTC
    plan.write_text(json.dumps({"backbones": {"splade-tiny": {"calibration": noisy}}}))
    proc = lsrbench("cells", "--expected", "config/expected/tiny.yaml", "--plan", str(plan), cwd=REPO)
    assert proc.returncode != 0 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"lsrbench: error: {plan}: backbones.splade-tiny.calibration.noisy: calibrated under load (timed steps spread "
        "60% (more than 50%: 6.76, 7.59, 4.16, 3.54 s); got 0.19 CPU seconds per wall second (less than 0.8: other "
        "processes shared the cores; 1-minute load 7.46 per core)): its costs are not published; make the plan again "
        "on a quiet machine (lsrbench plan --json)"]
