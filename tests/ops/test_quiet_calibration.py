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


def _plan(calibration: dict) -> dict:
    return {"backbones": {"splade-tiny": {"calibration": calibration}, "other": {"calibration": {"error": "not on disk"}}}}


def test_the_page_refuses_a_noisy_or_unchecked_calibration_and_takes_a_quiet_one():
    committed = json.loads((REPO / "benchmark/results/plan-tiny_default.json").read_text())  # calibrated under load
    with pytest.raises(InputError, match="backbones.splade-tiny.calibration: made before calibrations recorded"):
        check_publishable(committed, "plan.json")
    noisy = disturbance([0.65, 7.98, 0.66, 0.70], cores_got=0.3, load=3.0)
    with pytest.raises(InputError) as err:
        check_publishable(_plan(noisy), "plan.json")
    assert str(err.value).startswith("plan.json: backbones.splade-tiny.calibration.noisy: calibrated under load "
                                     "(timed steps spread 1047%")
    check_publishable(_plan(disturbance([0.64, 0.66, 0.65, 0.70], 0.97, 0.4)), "plan.json")


def test_lsrbench_cells_refuses_the_load_made_plan_in_one_line():
    proc = lsrbench("cells", "--expected", "config/expected/tiny.yaml", "--plan", "benchmark/results/plan-tiny_default.json",
                    cwd=REPO)
    assert proc.returncode != 0 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "lsrbench: error: benchmark/results/plan-tiny_default.json: backbones.splade-tiny.calibration: made before "
        "calibrations recorded whether they were disturbed; make the plan again on a quiet machine (lsrbench plan --json)"]
