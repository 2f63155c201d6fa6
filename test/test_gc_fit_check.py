"""The fit check of a gc file against the arm's holding effort (gc/runtime/fit_check.py): the band of the file's two
directions, the per-joint distance, the score and the reason; checked against the law itself."""
from __future__ import annotations

import numpy as np
import pytest

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.gc.model.params import GcParameters
from dvrk_ident_ros.gc.runtime.fit_check import MTM_TOLERANCE, FitCheck
from dvrk_ident_ros.gc.runtime.law import CompensationLaw

Q = [0.1, 0.3, -0.2, 0.4, 1.2, 0.1, 0.0]


def _law(offset: float = 0.05) -> CompensationLaw:
    """Gravity of a plausible MTM (the shared 10 parameters) and direction polynomials that differ by
    ``offset`` N m (the constant terms): the two directions' torques are a band of that width."""
    rng = np.random.default_rng(4)
    pos = np.zeros(40)
    pos[:10] = rng.normal(0.0, 0.1, 10)
    neg = pos.copy()
    for i in range(6):
        pos[10 + 5 * i] = offset / 2
        neg[10 + 5 * i] = -offset / 2
    return CompensationLaw(GcParameters("MTML", "1", pos, neg, np.full(7, 5.0), np.full(7, -5.0)))


def _mean_torque(law: CompensationLaw, q: list[float] = Q) -> np.ndarray:
    return np.array(law.compute(q, [0.0] * 7))  # the console's blend at rest: the middle of the band


def test_the_band_is_the_two_directions_torques_and_the_middle_is_the_law_at_rest():
    law = _law()
    low, high = FitCheck(law).band(Q)
    assert np.allclose((np.array(low) + np.array(high)) / 2, _mean_torque(law), atol=1e-12)
    assert np.allclose(np.array(high)[:6] - np.array(low)[:6], 0.05, atol=1e-12)


def test_an_arm_held_inside_the_band_fits_with_score_0():
    law = _law()
    low, high = FitCheck(law).band(Q)
    inside = 0.3 * np.array(low) + 0.7 * np.array(high)
    verdict = FitCheck(law).check(Q, inside)
    assert verdict.fits and verdict.score == 0.0 and max(verdict.distance) == 0.0


def test_a_distance_is_scaled_by_its_joints_tolerance_and_summed_in_squares():
    """0.8 of its tolerance off on one joint fits; on two joints at once (score 1.13) it does not."""
    law = _law()
    check = FitCheck(law)
    low, high = check.band(Q)
    effort = np.array(high)
    effort[1] += 0.8 * MTM_TOLERANCE[1]
    one = check.check(Q, effort)
    assert one.distance[1] == pytest.approx(0.8 * MTM_TOLERANCE[1]) and one.score == pytest.approx(0.8)
    assert one.fits
    effort[2] = low[2] - 0.8 * MTM_TOLERANCE[2]  # below the band
    two = check.check(Q, effort)
    assert two.distance[2] == pytest.approx(0.8 * MTM_TOLERANCE[2])
    assert two.score == pytest.approx(np.hypot(0.8, 0.8)) and not two.fits


def test_a_file_off_on_the_shoulder_is_refused_with_the_joint_and_the_newton_metres():
    law = _law()
    check = FitCheck(law)
    effort = _mean_torque(law)
    effort[1] += 0.5  # N m: the weight of another arm's shoulder model
    verdict = check.check(Q, effort)
    assert not verdict.fits and verdict.score > 2.0
    reason = verdict.reason("MTML", ["outer_yaw", "shoulder_pitch", "elbow_pitch"])
    assert reason.startswith("the gc file does not fit MTML here")
    assert f"shoulder_pitch {effort[1]:+.3f} N m held" in reason and "elbow_pitch" not in reason


@pytest.mark.parametrize("tolerance", [[0.1] * 6, [0.1] * 6 + [0.0], [0.1] * 6 + [float("nan")]])
def test_a_tolerance_that_is_not_seven_positive_numbers_is_refused(tolerance):
    with pytest.raises(DataError, match="fit tolerance"):
        FitCheck(_law(), tolerance)


def test_wrong_lengths_are_a_data_error():
    with pytest.raises(DataError, match="6 positions"):
        FitCheck(_law()).check(Q[:6], [0.0] * 7)


# -- the take-over guard (gc/runtime/takeover_guard.py) ------------------------------------------------------------
def test_the_guard_trips_on_the_joint_furthest_beyond_its_limit_within_its_window():
    from dvrk_ident_ros.gc.runtime.takeover_guard import MTM_GUARD_LIMIT, TakeoverGuard

    guard = TakeoverGuard(MTM_GUARD_LIMIT, window=2.0)
    assert not guard.watching and guard.check(Q, 0.0) == -1  # not started: nothing to watch
    assert not guard.start(Q, [0.0, 0.06] + [0.0] * 5, 10.0) and not guard.watching  # moving: not its file's
    assert guard.start(Q, [0.04] * 7, 10.0)
    q = list(Q)
    q[1] += 0.09  # 90 % of the shoulder's limit
    q[4] -= 0.15  # 75 % of the wrist pitch's
    assert guard.watching and guard.check(q, 11.0) == -1 and guard.worst == pytest.approx(0.9)
    q[4] = Q[4] - 0.25  # 125 %: the wrist pitch now
    q[2] += 0.11  # 110 %
    assert guard.check(q, 11.5) == 4
    assert guard.displacement(q, 4) == pytest.approx(-0.25)
    assert guard.check(q, 12.01) == -1 and not guard.watching  # the window has passed: the guard stops


def test_the_guard_starts_again_at_every_take_over_and_refuses_bad_limits():
    from dvrk_ident_ros.gc.runtime.takeover_guard import TakeoverGuard

    guard = TakeoverGuard((0.1, 0.1), window=1.0)
    guard.start([0.0, 0.0], [0.0, 0.0], 0.0)
    assert guard.check([0.2, 0.0], 0.5) == 0
    guard.start([0.2, 0.0], [0.0, 0.0], 5.0)  # the next take-over, where the arm rests now
    assert guard.check([0.25, 0.0], 5.5) == -1 and guard.worst == pytest.approx(0.5)
    for limits in ((), (0.1, 0.0), (0.1, float("nan"))):
        with pytest.raises(DataError, match="take-over guard limits"):
            TakeoverGuard(limits)
    with pytest.raises(DataError, match="window"):
        TakeoverGuard((0.1,), window=0.0)


# -- an identified model's check (the PSM's) ---------------------------------------------------------------
def test_a_models_band_is_its_torque_plus_or_minus_each_joints_static_friction(psm_compensation):
    """Checked against the model's own torque and its Fc<j> + |Fo<j>| read independently of the check."""
    from dvrk_ident_ros.gc.runtime.fit_check import PSM_TOLERANCE, ModelFitCheck, fit_check_for

    check = ModelFitCheck(psm_compensation)
    q = [0.2, -0.3, 0.12, 0.1, 0.2, -0.1]
    torque = np.array(psm_compensation.compute([*q, 0.0], [0.0] * 7))[:6]
    names = list(psm_compensation.model.parameter_names)
    friction = np.array([abs(psm_compensation.delta[names.index(f"Fc{j}")])
                         + abs(psm_compensation.delta[names.index(f"Fo{j}")]) for j in range(1, 7)])
    low, high = check.band(q)
    assert np.allclose(low, torque - friction) and np.allclose(high, torque + friction)
    assert check.check(q, torque).fits and check.check(q, torque).score == 0.0
    off = torque.copy()
    off[1] = high[1] + 2 * PSM_TOLERANCE[1]  # two tolerances above the band on the pitch
    verdict = check.check(q, off)
    assert not verdict.fits and verdict.score == pytest.approx(2.0)
    assert verdict.reason("PSM1", ["yaw", "pitch"]).startswith("the parameter file does not fit PSM1 here")
    assert isinstance(fit_check_for(psm_compensation, "PSM"), ModelFitCheck)
    assert fit_check_for(psm_compensation, "MTM") is None  # an MTM's model: the take-over guard alone
    with pytest.raises(DataError, match="fit tolerance"):
        ModelFitCheck(psm_compensation, [0.1] * 8)


def test_a_models_refit_to_holds_narrows_its_band_to_the_friction_the_holds_showed(psm_compensation, tmp_path):
    """A refitted model (gravity_refit.residual_rms_after: r per joint) allows at most HOLD_SIGMAS r of its
    identified friction: a joint whose holds scattered little gets a narrow band, one that scattered much keeps
    its friction. The record is read from a parameter file written as `dvrk-ident gc refit` writes it."""
    import json

    from dvrk_ident_ros.arm.registry import arm_spec
    from dvrk_ident_ros.gc.runtime.fit_check import HOLD_SIGMAS, ModelFitCheck
    from dvrk_ident_ros.gc.runtime.model_law import load_model_compensation
    from dvrk_ident_ros.sim.config import load_sim_config

    q = [0.2, -0.3, 0.12, 0.1, 0.2, -0.1]
    wide = ModelFitCheck(psm_compensation).band(q)
    residual = [0.001, 1.0, 0.001, 1.0, 0.001, 1.0, 0.0]
    document = json.loads(load_sim_config("psm").parameter_file.read_text())
    document["gravity_refit"] = {"residual_rms_after": residual}
    path = tmp_path / "refit.json"
    path.write_text(json.dumps(document))
    refitted = load_model_compensation(path, arm_spec("PSM1"))
    low, high = ModelFitCheck(refitted).band(q)
    torque = (np.array(wide[0]) + np.array(wide[1])) / 2
    half = np.array(wide[1]) - torque
    expected = np.minimum(half, HOLD_SIGMAS * np.array(residual[:6]))
    assert np.allclose(np.array(high) - torque, expected) and np.allclose(torque - np.array(low), expected)
    assert expected[0] < half[0] and expected[1] == half[1]
    for bad in ({"residual_rms_after": [0.1] * 3}, {"residual_rms_after": ["a"] * 7},
                {"residual_rms_after": [[0.1], [0.1, 0.2]]}, "not a record"):
        document["gravity_refit"] = bad
        path.write_text(json.dumps(document))
        with pytest.raises(DataError, match="residual_rms_after"):
            load_model_compensation(path, arm_spec("PSM1"))


def test_a_gc_file_s_own_fit_residual_widens_its_tolerance_never_narrows_it(tmp_path):
    """lse.fit_residual_rms (written by `dvrk-ident gc fit`, read back): the tolerance is max(default,
    RESIDUAL_SIGMAS r); a file without it keeps the defaults; a malformed one is refused."""
    import json

    from dvrk_ident_ros.gc.model.params import load_gc
    from dvrk_ident_ros.gc.runtime.fit_check import RESIDUAL_SIGMAS

    law = _law()
    params = law.params
    params.fit_residual = np.array([0.001, 0.2, 0.001, 0.001, 0.001, 0.001, 0.0])
    saved = load_gc(params.save(tmp_path / "gc-MTML-1.json"))
    assert saved.fit_residual == pytest.approx(params.fit_residual)
    tolerance = FitCheck(CompensationLaw(saved)).tolerance
    expected = list(MTM_TOLERANCE)
    expected[1] = RESIDUAL_SIGMAS * 0.2
    assert tolerance == pytest.approx(expected)
    params.fit_residual = None
    assert FitCheck(CompensationLaw(load_gc(params.save(tmp_path / "plain.json")))).tolerance == MTM_TOLERANCE
    document = json.loads((tmp_path / "gc-MTML-1.json").read_text())
    for bad in ([0.1, -1.0], ["x"] * 7, [[0.1], [0.1, 0.2]]):
        document["lse"]["fit_residual_rms"] = bad
        (tmp_path / "bad.json").write_text(json.dumps(document))
        with pytest.raises(DataError, match="fit_residual_rms"):
            load_gc(tmp_path / "bad.json")
    document["lse"].pop("fit_residual_rms")
    document["GC_controller"]["gc_dynamic_params_pos"] = ["x"] * 40  # a DataError, not a ValueError
    (tmp_path / "bad.json").write_text(json.dumps(document))
    with pytest.raises(DataError, match="gc_dynamic_params_pos: expected 40 finite numbers"):
        load_gc(tmp_path / "bad.json")


# -- the joint range a file's data covered ---------------------------------------------------------------------------
def _ranged_law(lower_deg: list[float], upper_deg: list[float]) -> CompensationLaw:
    law = _law()
    law.params.position_lower_deg, law.params.position_upper_deg = lower_deg, upper_deg
    return CompensationLaw(law.params)


def test_a_pose_beyond_the_file_s_range_by_more_than_the_margin_is_refused_naming_the_joint():
    """Q's joint 2 is at 17.2 deg: a file whose data swept it over 0..10 deg is taken at its word up to
    10 + 2 + 0.1 x 10 = 13 deg; beyond, it is refused even with the effort at the middle of its band, and the reason
    names the joint, the pose and the range."""
    from dvrk_ident_ros.gc.runtime.fit_check import RANGE_MARGIN_DEG, RANGE_REACH

    lower, upper = [-90.0] * 6 + [-400.0], [90.0] * 6 + [400.0]
    lower[1], upper[1] = 0.0, 10.0
    law = _ranged_law(lower, upper)
    effort = _mean_torque(law)
    verdict = FitCheck(law).check(Q, effort)
    assert (RANGE_MARGIN_DEG, RANGE_REACH) == (2.0, 0.1) and verdict.score == 0.0 and not verdict.fits
    assert verdict.outside == ("joint 2 at +17.2 deg, file +0.0..+10.0 deg (taken to -3.0..+13.0)",)
    reason = verdict.reason("MTML")
    assert reason.startswith("MTML is outside the joint range this gc file's data covered: joint 2 at +17.2 deg")
    assert FitCheck(law, range_margin_deg=6.5).check(Q, effort).fits  # 17.2 <= 10 + 6.5 + 1
    assert not FitCheck(law, range_reach=0.4).check(Q, effort).fits  # 17.2 > 10 + 2 + 4
    assert FitCheck(law, range_reach=0.6).check(Q, effort).fits  # 17.2 <= 10 + 2 + 6
    upper[1] = 14.5
    assert FitCheck(_ranged_law(lower, upper)).check(Q, effort).fits  # 17.2 <= 14.5 + 2 + 1.45


def test_the_range_holds_joints_1_to_6_only_and_a_file_without_one_is_not_limited():
    law = _ranged_law([-1.0] * 6 + [0.0], [1.0] * 6 + [0.0])  # joint 7 (the roll: no gravity) at 0 only
    q = [0.0] * 6 + [1.5]
    assert FitCheck(law).check(q, _mean_torque(law, q)).fits
    assert FitCheck(_law()).outside([3.0] * 7) == ()
    with pytest.raises(DataError, match="range margin"):
        FitCheck(law, range_margin_deg=-1.0)
    with pytest.raises(DataError, match="range reach"):
        FitCheck(law, range_reach=float("nan"))


def test_gc_fit_writes_the_range_its_data_covered_and_load_gc_reads_it_back(tmp_path):
    """gc_parameters (what `dvrk-ident gc fit` writes) records each joint's range of the data in degrees (joint 7:
    the MLSE tool's +-400, not limited); load_gc reads it; a range upside down is refused."""
    import json

    from dvrk_ident_ros.gc.fitting.data import PoseData
    from dvrk_ident_ros.gc.fitting.gc_file import gc_parameters
    from dvrk_ident_ros.gc.fitting.mlse import fit_mlse
    from dvrk_ident_ros.gc.model.params import load_gc

    law = _law()
    rng = np.random.default_rng(7)
    rows = []
    for joint in range(1, 7):
        for direction in (1, -1):
            sweep = np.tile(np.array(Q), (8, 1))
            sweep[:, joint - 1] += np.linspace(-0.3, 0.3, 8)[::direction]
            rows.append((sweep, joint, direction))
    q = np.vstack([r[0] for r in rows])
    tau = np.array([law.compute(p, [0.0] * 7) for p in q]) + rng.normal(0.0, 1e-3, (len(q), 7))
    joint = np.repeat([r[1] for r in rows], 8)
    direction = np.repeat([r[2] for r in rows], 8)
    data = PoseData(q, tau, joint, direction, np.zeros(len(q)), np.repeat(np.arange(len(rows)), 8), "synthetic")
    params = gc_parameters(fit_mlse(data), data, "MTML", "1", "test")
    expected_low, expected_high = np.degrees(q[:, :6].min(0)), np.degrees(q[:, :6].max(0))
    assert params.position_lower_deg == pytest.approx([*expected_low, -400.0], abs=1e-3)
    assert params.position_upper_deg == pytest.approx([*expected_high, 400.0], abs=1e-3)
    saved = load_gc(params.save(tmp_path / "gc-MTML-1.json"))
    assert saved.position_lower_deg == pytest.approx(params.position_lower_deg)
    assert saved.position_upper_deg == pytest.approx(params.position_upper_deg)
    document = json.loads((tmp_path / "gc-MTML-1.json").read_text())
    document["GC_controller"]["joint_position_lower_limit"][1] = 90.0
    (tmp_path / "bad.json").write_text(json.dumps(document))
    with pytest.raises(DataError, match=r"joint_position_lower_limit above its upper limit on joint\(s\) \[2\]"):
        load_gc(tmp_path / "bad.json")
    document["GC_controller"].pop("joint_position_upper_limit")
    (tmp_path / "bad.json").write_text(json.dumps(document))
    with pytest.raises(DataError, match="joint_position_upper_limit: missing field"):
        load_gc(tmp_path / "bad.json")


def test_the_real_mlse_tool_s_file_keeps_its_recorded_range():
    """CUHK's MTML-41878 file (the MATLAB MLSE tool's) records the range its grid swept: read as written."""
    from pathlib import Path

    from dvrk_ident_ros.gc.model.params import load_gc

    path = Path(__file__).resolve().parents[2] / "shared" / "data" / "cuhk-mtm-gc" / "MTML-41878" / "gc-MTML-41878.json"
    if not path.is_file():
        pytest.skip(f"{path} absent (../shared is not beside the repository)")
    params = load_gc(path)
    assert params.position_upper_deg == [40, 23, 34, 80, 175, 40, 400]
    assert params.position_lower_deg == [-9, -14, -34, -190, -85, -40, -400]
