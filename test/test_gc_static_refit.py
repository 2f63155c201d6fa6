"""The gravity refit to static holds (ROS-free): an identified model whose gravity aliased with the friction
offsets is corrected from holds at rest, by the least change, and then holds the simulated PSM."""
from __future__ import annotations

import numpy as np
import pytest

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.gc.fitting.static_refit import refit_gravity, rest_holds
from dvrk_ident_ros.gc.runtime.model_law import ModelCompensation
from dvrk_ident_ros.sim.arm import SimulatedArm
from dvrk_ident_ros.sim.config import load_sim_config
from dvrk_ident_ros.sim.experiments import drift_test, random_poses, static_holds


def _holds_from_the_model(config, delta: np.ndarray, poses: np.ndarray) -> np.ndarray:
    """Efforts at rest, dVRK joint space: gravity, springs and known (cable) torques of ``delta``, by the
    model's own static torque (the simulator's, computed apart from the refit's stacked regressor)."""
    model = config.model
    q_motor = model.motor_from_dvrk(poses)
    motor = model.gravity(q_motor, delta) + model.known_torques(q_motor)
    return model.dvrk_torque_from_motor(motor)


def _aliased(config, rng: np.random.Generator, spread: float = 0.3) -> np.ndarray:
    """The true parameters with the masses and first moments off by up to ``spread`` and the friction offsets
    and inertias off too (an identification's errors): every gravity combination wrong."""
    model = config.model
    delta = config.delta.copy()
    for i, name in enumerate(model.parameter_names):
        if name.startswith(("m", "l", "K")):
            delta[i] *= 1.0 + rng.uniform(-spread, spread)
        elif name.startswith(("Fo", "L")):
            delta[i] += rng.normal(scale=0.05)
    return delta


@pytest.mark.parametrize("family", ["psm", "mtm"])
def test_the_refit_matches_the_holds_and_changes_nothing_the_holds_cannot_see(family):
    config = load_sim_config(family)
    model = config.model
    rng = np.random.default_rng(5)
    arm = SimulatedArm(config, family.upper(), noise=False)
    poses = random_poses(arm, 40, rng, fraction=0.9)
    wrong = _aliased(config, rng)
    refit = refit_gravity(model, wrong, poses, _holds_from_the_model(config, config.delta, poses))
    assert refit.poses == 40 and refit.rank < len(model.parameter_names) // 4
    assert refit.before.max() > 20 * refit.after.max() and refit.after.max() < 1e-9
    # at other poses the corrected gravity is the true one (the holds determine every gravity combination)
    elsewhere = random_poses(arm, 20, np.random.default_rng(6), fraction=0.9)
    expected = _holds_from_the_model(config, config.delta, elsewhere)
    assert np.allclose(_holds_from_the_model(config, refit.delta, elsewhere), expected, atol=1e-9)
    # the least change: orthogonal to what the holds cannot see (the gravity regressor's null space)
    Y = model.gravity_regressor(model.motor_from_dvrk(poses)).reshape(-1, len(wrong))
    _, s, vt = np.linalg.svd(Y)
    null = vt[int((s > 1e-8 * s[0]).sum()):]
    assert np.abs(null @ (refit.delta - wrong)).max() < 1e-9
    # parameters without a gravity column (friction, inertia) are exactly as identified
    no_gravity = np.abs(Y).max(axis=0) == 0.0
    assert no_gravity.sum() > len(wrong) // 2
    assert np.array_equal(refit.delta[no_gravity], wrong[no_gravity])


def test_noisy_holds_leave_the_noise_and_the_summary_says_it():
    config = load_sim_config("psm")
    rng = np.random.default_rng(8)
    arm = SimulatedArm(config, "PSM1", noise=False)
    poses = random_poses(arm, 30, rng, fraction=0.9)
    efforts = _holds_from_the_model(config, config.delta, poses) + rng.normal(scale=0.01, size=(30, arm.dof))
    refit = refit_gravity(config.model, _aliased(config, rng), poses, efforts)
    assert 0.004 < refit.after[:3].min() and refit.after.max() < 0.012  # the noise, not the model's error
    assert "30 static holds" in refit.summary() and f"{refit.rank} gravity combinations" in refit.summary()


def test_bad_holds_are_refused_with_the_reason():
    config = load_sim_config("psm")
    model, delta = config.model, config.delta
    arm = SimulatedArm(config, "PSM1", noise=False)
    poses = random_poses(arm, 30, np.random.default_rng(9), fraction=0.9)
    efforts = _holds_from_the_model(config, delta, poses)
    with pytest.raises(DataError, match="expected K x 7"):
        refit_gravity(model, delta, poses[:, :6], efforts[:, :6])
    with pytest.raises(DataError, match="not finite"):
        bad = efforts.copy()
        bad[3, 2] = np.nan
        refit_gravity(model, delta, poses, bad)
    with pytest.raises(DataError, match="poses for 6 gravity combinations"):
        refit_gravity(model, delta, poses[:10], efforts[:10])
    with pytest.raises(DataError, match="parameters, the model has"):
        refit_gravity(model, delta[:-1], poses, efforts)


@pytest.mark.slow
def test_the_refitted_compensation_holds_the_simulated_psm_where_the_aliased_one_lets_it_fall():
    """Static holds on the simulated PSM (its PID, noise on), the refit, then the drift test: the aliased
    model's compensation lets the arm move by centimetres in 1 s, the refitted one by about a millimetre."""
    config = load_sim_config("psm")
    wrong = _aliased(config, np.random.default_rng(12), spread=0.1)  # (30 % drops the arm onto its limits)
    holds = static_holds(SimulatedArm(config, "PSM1", seed=2),
                         random_poses(SimulatedArm(config, "PSM1"), 18, np.random.default_rng(13), fraction=0.9),
                         settle=1.0, samples=20)
    assert holds.seconds > 18 * 1.2  # a settle and a sampling window per pose at least, on the simulated clock
    refit = refit_gravity(config.model, wrong, holds.q, holds.effort)
    limit = np.array(config.spec.compensation_torque_limit, dtype=float)
    arm = SimulatedArm(config, "PSM1", seed=1)
    goals = random_poses(arm, 3, np.random.default_rng(4), fraction=0.8)
    before = drift_test(arm, ModelCompensation(config.model, wrong, limit), goals, hold_time=1.0)
    after = drift_test(arm, ModelCompensation(config.model, refit.delta, limit), goals, hold_time=1.0)
    assert before.position_mm.mean() > 10.0, before.summary()
    assert after.position_mm.mean() < 3.0 and after.position_mm.mean() < before.position_mm.mean() / 10, \
        (before.summary(), after.summary())


def _stream_of_holds(config, delta: np.ndarray, poses: np.ndarray, rng: np.random.Generator, rate: float = 100.0,
                     move: float = 1.0, rest: float = 2.5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A recording as the arm makes it: a 1 s move to each pose (efforts of a moving arm: the gravity there plus
    0.2 N m of friction), then ``rest`` s at rest (encoder jitter 1e-5, effort noise 5 mN m); dVRK joint space."""
    t, q, effort = [], [], []
    now, previous = 0.0, poses[0] + 0.1  # from elsewhere: the first pose is reached by a move too
    for pose in poses:
        for s in np.linspace(0.0, 1.0, round(move * rate), endpoint=False):
            p = previous + s * (pose - previous)
            t.append(now)
            q.append(p)
            effort.append(_holds_from_the_model(config, delta, p[None])[0] + 0.2)
            now += 1.0 / rate
        for _ in range(round(rest * rate)):
            t.append(now)
            q.append(pose + rng.normal(scale=1e-5, size=pose.shape))
            effort.append(_holds_from_the_model(config, delta, pose[None])[0]
                          + rng.normal(scale=0.005, size=pose.shape))
            now += 1.0 / rate
        previous = pose
    return np.array(t), np.array(q), np.array(effort)


def test_rest_holds_finds_each_rest_and_leaves_out_the_moves_and_the_settling():
    config = load_sim_config("psm")
    arm = SimulatedArm(config, "PSM1", noise=False)
    poses = random_poses(arm, 6, np.random.default_rng(14), fraction=0.9)
    t, q, effort = _stream_of_holds(config, config.delta, poses, np.random.default_rng(15))
    holds = rest_holds(t, q, effort)
    assert len(holds.q) == 6 and np.abs(holds.q - poses).max() < 1e-5
    expected = _holds_from_the_model(config, config.delta, poses)
    assert np.abs(holds.effort - expected).max() < 0.005  # the moves' +0.2 N m kept out
    # the settle: 2.5 s at rest, counted from 0.5 s before the first sample at rest, less 1 s: about 1.5 s
    assert np.all(np.abs(holds.samples - 150) <= 2), holds.samples
    assert len(rest_holds(t, q, effort, min_hold=3.0).q) == 0  # rests shorter than min_hold are no holds
    moving = q + np.linspace(0.0, 1.0, len(t))[:, None]  # never at rest
    assert len(rest_holds(t, moving, effort).q) == 0
    with pytest.raises(DataError, match="times must increase"):
        rest_holds(t[::-1], q, effort)


def _identified_file(config, delta: np.ndarray, path) -> str:
    """A parameter file of the PSM with ``delta`` as its standard parameters (as /identify writes them)."""
    from dvrk_ident_ros.identify.results import IdentificationResult

    model = config.model
    IdentificationResult(
        arm=model.description.arm, description_hash=model.description.content_hash, method="sdp",
        base_values=model.base.from_standard(delta).tolist(), base_definitions=list(model.base_parameter_names),
        base_indices=model.base.independent.tolist(), filter={}, solver={"status": "optimal"}, errors={},
        standard=dict(zip(model.parameter_names, (float(x) for x in delta), strict=True))).save(path)
    return str(path)


def test_gc_refit_command_writes_a_file_the_compensation_loads_with_the_true_gravity(tmp_path, capsys):
    """A bag of the PSM at rest at 24 poses (measured_js with 6 joints and the jaw on its own topic, as the dVRK
    publishes them) and a parameter file whose gravity is off: `dvrk-ident gc refit` writes a file whose
    compensation is the true gravity at other poses, and says what it did."""
    from dvrk_ident_ros.app import cli
    from dvrk_ident_ros.arm.registry import arm_spec
    from dvrk_ident_ros.data.bags import write_joint_state_bag
    from dvrk_ident_ros.gc.runtime.model_law import load_model_compensation
    from dvrk_ident_ros.identify.results import IdentificationResult

    config = load_sim_config("psm")
    rng = np.random.default_rng(16)
    arm = SimulatedArm(config, "PSM1", noise=False)
    t, q, effort = _stream_of_holds(config, config.delta, random_poses(arm, 24, rng, fraction=0.9), rng)
    zeros = np.zeros_like(q)
    bag = write_joint_state_bag(tmp_path / "holds", {
        "/PSM1/measured_js": (t, q[:, :6], zeros[:, :6], effort[:, :6]),
        "/PSM1/jaw/measured_js": (t, q[:, 6:], zeros[:, 6:], effort[:, 6:])})
    params = _identified_file(config, _aliased(config, rng), tmp_path / "psm1.json")
    out = tmp_path / "psm1-refit.json"
    assert cli.main(["gc", "refit", "--params", params, "--data", str(bag), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "24 static holds, 6 gravity combinations refitted" in said and str(out) in said
    record = IdentificationResult.load(out).gravity_refit
    assert record["holds"] == 24 and max(record["residual_rms_after"]) < 0.005 < max(record["residual_rms_before"])
    spec = arm_spec("PSM1")
    elsewhere = random_poses(arm, 10, np.random.default_rng(17), fraction=0.9)
    refitted, before = load_model_compensation(out, spec), load_model_compensation(params, spec)
    expected = _holds_from_the_model(config, config.delta, elsewhere)

    def errors_of(law) -> np.ndarray:
        return np.array([np.array(law.compute(p, np.zeros(7))) - e for p, e in zip(elsewhere, expected, strict=True)])

    errors, errors_before = errors_of(refitted), errors_of(before)
    assert np.abs(errors).max() < 0.005 and np.abs(errors_before).max() > 0.05
    # a recording without a hold: refused with the reason, nothing written
    moving = write_joint_state_bag(tmp_path / "moving", {
        "/PSM1/measured_js": (t, q[:, :6] + np.linspace(0, 1, len(t))[:, None], zeros[:, :6], effort[:, :6]),
        "/PSM1/jaw/measured_js": (t, q[:, 6:], zeros[:, 6:], effort[:, 6:])})
    assert cli.main(["gc", "refit", "--params", params, "--data", str(moving), "--out", str(tmp_path / "x.json")]) == 2
    assert "no static hold" in capsys.readouterr().err and not (tmp_path / "x.json").exists()
