"""The PSM's fit check from both sides of its pose (gc/runtime/fit_probe.py BothSidesProbe, ModelFitCheck.check_span):
its goals and limits, its steps on synthetic samples, the score, and the probe run on the simulated PSM1 with the
arm's own model (fits) and another arm's (refused)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.gc.runtime.fit_probe import (
    FROM_ABOVE,
    FROM_BELOW,
    PROBE_FRACTION,
    PROBE_JOINTS,
    PROBE_TOLERANCE,
    BothSidesProbe,
)

LOWER = np.array([-1.0, -0.8, 0.0, -2.0, -1.5, -1.5])
UPPER = np.array([1.0, 0.8, 0.24, 2.0, 1.5, 1.5])
POSE = [0.1, -0.2, 0.12, 0.3, 0.0, 0.1]


def test_the_probe_holds_the_pose_from_above_then_from_below_on_the_joints_that_carry_weight():
    probe = BothSidesProbe(POSE, LOWER, UPPER)
    d = np.zeros(6)
    d[:PROBE_JOINTS] = PROBE_FRACTION * (UPPER - LOWER)[:PROBE_JOINTS]
    expected = [np.add(POSE, d), POSE, np.subtract(POSE, d), POSE]
    assert all(np.allclose(g, e) for g, e in zip(probe.goals, expected, strict=True))
    assert d[3:].max() == 0.0 and d[:3].min() > 0.0  # the wrist stays where it is


def test_a_pose_too_near_a_limit_to_be_held_from_both_sides_is_refused_naming_the_joint():
    near = list(POSE)
    near[2] = UPPER[2] - 0.1 * PROBE_FRACTION * (UPPER[2] - LOWER[2])
    with pytest.raises(DataError, match=r"insertion at .* too near it"):
        BothSidesProbe(near, LOWER, UPPER, names=["yaw", "pitch", "insertion"])
    with pytest.raises(DataError, match="finite"):
        BothSidesProbe([np.nan] * 6, LOWER, UPPER)


def _run(probe: BothSidesProbe, efforts: dict[int, list[float]], reach: bool = True, dt: float = 0.01,
         until: float = 60.0) -> list[list[float]]:
    """Feed the probe samples every ``dt`` s: the setpoint at the last goal sent once 0.5 s has passed (or never,
    without ``reach``), the effort of the hold under way (``efforts`` by goal index, else zeros)."""
    sent: list[list[float]] = []
    t, sent_at, setpoint = 0.0, 0.0, list(POSE)
    while not (probe.done or probe.failed) and t < until:
        if sent and reach and t - sent_at >= 0.5:
            setpoint = sent[-1]
        index = len(sent) - 1
        goal = probe.advance(t, setpoint, efforts.get(index, [0.0] * 6))
        if goal is not None:
            sent.append(goal)
            sent_at = t
        t += dt
    return sent


def test_the_probe_sends_each_goal_once_its_last_move_has_ended_and_settled_and_keeps_both_efforts():
    above, below = [1.0, 0.2, -0.3, 0.0, 0.0, 0.0], [1.1, 0.1, -0.2, 0.0, 0.0, 0.0]
    probe = BothSidesProbe(POSE, LOWER, UPPER, settle=1.0)
    sent = _run(probe, {FROM_ABOVE: above, FROM_BELOW: below})
    assert probe.done and not probe.failed and len(sent) == 4
    assert probe.efforts == {FROM_ABOVE: above, FROM_BELOW: below}
    low, high = probe.span()
    assert low == [1.0, 0.1, -0.3, 0.0, 0.0, 0.0] and high == [1.1, 0.2, -0.2, 0.0, 0.0, 0.0]


def test_a_move_that_does_not_end_fails_the_probe_with_its_reason():
    probe = BothSidesProbe(POSE, LOWER, UPPER, timeout=2.0)
    sent = _run(probe, {}, reach=False)
    assert len(sent) == 1 and not probe.done and "move 1 of 4 did not end within 2 s" in probe.failed
    with pytest.raises(DataError, match="not done"):
        probe.span()


def test_the_span_score_is_the_models_distance_from_the_efforts_over_the_tolerance(psm_compensation):
    from dvrk_ident_ros.gc.runtime.fit_check import ModelFitCheck

    check = ModelFitCheck(psm_compensation)
    q = POSE
    torque = np.array(psm_compensation.compute([*q, 0.0], [0.0] * 7))[:6]
    assert check.check_span(q, torque - 0.01, torque + 0.01).score == 0.0
    low, high = torque - 0.01, torque + 0.01
    high[2] = torque[2] - 3 * PROBE_TOLERANCE[2]  # the arm rests under efforts three tolerances below the model
    low[2] = high[2] - 0.02
    verdict = check.check_span(q, low, high)
    assert not verdict.fits and verdict.score == pytest.approx(3.0)
    assert "insertion rests under" in verdict.reason("PSM1", ["yaw", "pitch", "insertion"])
    with pytest.raises(DataError, match="expected 6"):
        check.check_span(q[:3], low, high)


@pytest.mark.slow
def test_on_the_simulated_psm_its_own_model_fits_from_both_sides_and_another_arms_does_not(
        psm_compensation, tmp_path):
    """The probe run on the simulated PSM1 (its holds under its own PID, gc/runtime/fit_probe.py) at a pose: the
    simulator's own parameter file fits; the same with every link's first moments 10 % larger (another arm of
    the design) is refused. The arm ends where it started, reached from below."""
    from dvrk_ident_ros.arm.registry import arm_spec
    from dvrk_ident_ros.excitation.holds import joint_ranges
    from dvrk_ident_ros.gc.runtime.fit_check import ModelFitCheck
    from dvrk_ident_ros.gc.runtime.model_law import load_model_compensation
    from dvrk_ident_ros.sim.arm import SimulatedArm
    from dvrk_ident_ros.sim.config import load_sim_config
    from dvrk_ident_ros.sim.experiments import run_fit_probe

    config = load_sim_config("psm")
    document = json.loads(config.parameter_file.read_text())
    for name in document["standard"]:
        if name.startswith("l") and name[-1] in "xyz":
            document["standard"][name] *= 1.1
    path = tmp_path / "psm_other_arm.json"
    path.write_text(json.dumps(document))
    other = load_model_compensation(path, arm_spec("PSM1"))
    arm = SimulatedArm(config, "PSM1", seed=5)
    arm.use_gravity_compensation(False)
    arm.advance(arm.move_jp(np.array([*POSE, 0.0])) + 1.0)
    lower, upper = joint_ranges(arm.checker)
    rested = arm.q[:6].copy()  # short of the setpoint by what the PID (no integral term) leaves
    probe = BothSidesProbe(arm.sample().setpoint_position[:6], lower[:6], upper[:6])
    took = run_fit_probe(arm, probe)
    assert probe.done and not probe.failed, probe.failed
    q = list(arm.q[:6])
    assert np.allclose(q, rested, atol=2e-3), np.subtract(q, rested)
    own, another = ModelFitCheck(psm_compensation).check_span(q, *probe.span()), ModelFitCheck(other).check_span(
        q, *probe.span())
    print(f"\nprobe {took:.1f} s of arm time; score: own model {own.score:.2f}, another arm's {another.score:.2f}")
    assert own.fits and not another.fits
