"""The simulated arm's physics: energy, holding, tracking (issue: simulated dVRK arm)."""
from __future__ import annotations

import numpy as np
import pytest

from dvrk_ident_ros.excitation.fourier import rest_to_rest
from dvrk_ident_ros.identify.synthetic import plausible_parameters
from dvrk_ident_ros.model.arm_model import load_model
from dvrk_ident_ros.model.reference import LagrangianReference
from dvrk_ident_ros.sim.physics import ArmPhysics, ArmState
from dvrk_ident_ros.sim.servo import PidGains, PidServo

pytestmark = pytest.mark.slow


def _conservative(arm: str):
    model = load_model(arm)
    delta = plausible_parameters(model, np.random.default_rng(0))
    for kind in ("K", "Fv", "Fc", "Fo"):
        delta[model.layout.of_kind(kind)] = 0.0
    return model, delta


def test_energy_is_conserved_without_friction_and_control():
    model, delta = _conservative("psm")
    physics = ArmPhysics(model, delta, friction=False)
    ref = LagrangianReference(model.description)
    rng = np.random.default_rng(1)
    state = ArmState(rng.uniform(-0.5, 0.5, 7) + np.array([0, 0, 0.15, 0, 0, 0, 0.5]), rng.normal(0, 0.5, 7))

    def energy(s):
        return physics.kinetic_energy(s.q, s.qd) + float(np.real(ref.potential(s.q, delta)))

    e0 = energy(state)
    zero = np.zeros(7)
    for _ in range(500):  # 0.5 s at 1 kHz
        state = physics.step(state, zero, 1e-3)
    assert abs(energy(state) - e0) <= 1e-6 * max(abs(e0), physics.kinetic_energy(state.q, state.qd))
    assert np.linalg.norm(state.qd) > 0.1  # it did move


def test_true_holding_torques_keep_the_arm_still():
    model = load_model("mtm")
    delta = plausible_parameters(model, np.random.default_rng(2))
    physics = ArmPhysics(model, delta)
    q0 = np.array([0.1, 0.3, 0.5, 0.2, 0.4, 0.1, 0.0])
    state = ArmState(q0.copy(), np.zeros(7))
    hold = physics.bias(q0, np.zeros(7))  # gravity, springs, cable (and friction offsets) at rest
    for _ in range(300):
        state = physics.step(state, hold, 1.0 / 1500)
    assert np.max(np.abs(state.q - q0)) < 1e-9


def _servo(model):
    kp = np.array([100.0, 150.0, 150.0, 20.0, 10.0, 6.0, 2.0])
    gains = PidGains(kp=kp, kd=0.1 * kp, ki=2 * kp, torque_limit=np.full(7, 40.0), integral_limit=np.full(7, 0.5))
    return PidServo(gains, model.dof)


def test_pid_holds_a_pose_against_gravity():
    model = load_model("mtm")
    delta = plausible_parameters(model, np.random.default_rng(3))
    physics = ArmPhysics(model, delta)
    servo = _servo(model)
    q_ref_d = np.array([0.1, 0.3, 0.2, 0.2, 0.4, 0.1, 0.0])  # dVRK joint space
    state = ArmState(model.motor_from_dvrk(q_ref_d), np.zeros(7))
    dt = 1.0 / 1500
    for _ in range(3000):
        qd_d, vd_d = model.dvrk_from_motor(state.q), model.dvrk_from_motor(state.qd)
        tau_d = servo.command(qd_d, vd_d, q_ref_d, np.zeros(7), dt)
        state = physics.step(state, model.motor_torque_from_dvrk(tau_d), dt)
    assert np.max(np.abs(model.dvrk_from_motor(state.q) - q_ref_d)) < 0.01  # the integral removes the sag
    assert np.max(np.abs(state.qd)) < 1e-2


def test_pid_follows_a_fourier_trajectory():
    model = load_model("psm")
    delta = plausible_parameters(model, np.random.default_rng(4))
    physics = ArmPhysics(model, delta)
    gains = PidGains(kp=np.array([200, 200, 2000, 20, 20, 20, 20.0]), kd=np.array([10, 10, 100, 0.5, 0.5, 0.5, 0.5]),
                     ki=np.zeros(7), torque_limit=np.full(7, 50.0))
    servo = PidServo(gains, 7)
    rng = np.random.default_rng(5)
    traj = rest_to_rest(0.5, np.array([0, 0, 0.15, 0, 0, 0, 0.4]), rng.normal(0, 0.05, (3, 7)),
                        rng.normal(0, 0.05, (3, 7)))
    q0, _, _ = traj.evaluate(np.array([0.0]))
    state = ArmState(q0[0].copy(), np.zeros(7))
    dt = 1.0 / 1500
    errors = []
    for k in range(1500):
        q_ref, qd_ref, _ = traj.evaluate(np.array([k * dt]))
        tau_d = servo.command(model.dvrk_from_motor(state.q), model.dvrk_from_motor(state.qd),
                              model.dvrk_from_motor(q_ref[0]), model.dvrk_from_motor(qd_ref[0]), dt)
        state = physics.step(state, model.motor_torque_from_dvrk(tau_d), dt)
        errors.append(np.max(np.abs(state.q - traj.evaluate(np.array([(k + 1) * dt]))[0][0])))
    assert max(errors) < 0.05


def test_compiled_and_numpy_dynamics_agree():
    model = load_model("mtm")
    delta = plausible_parameters(model, np.random.default_rng(6))
    fast, slow = ArmPhysics(model, delta), ArmPhysics(model, delta, compiled=False)
    rng = np.random.default_rng(7)
    q, qd = rng.normal(0, 0.5, 7), rng.normal(0, 1, 7)
    assert np.allclose(fast.mass_matrix(q), slow.mass_matrix(q), rtol=1e-12, atol=1e-14)
    assert np.allclose(fast.bias(q, qd), slow.bias(q, qd), rtol=1e-12, atol=1e-14)
    known = fast.known_torques(q)  # the MTM's joint-4 cable, compiled; projected on motors 2, 3 and 4
    assert np.count_nonzero(known) == 3 and np.allclose(known, slow.known_torques(q), rtol=1e-12, atol=1e-14)


STICKY_PSM = {"1": 1e-4, "2": 1e-4, "3": 1e-4}  # static friction on the PSM's yaw, pitch and insertion


@pytest.mark.parametrize("family,friction,velocity", [("mtm", True, 0.02), ("psm", True, 0.02),
                                                      ("mtm", False, 0.02), ("psm", True, STICKY_PSM)])
def test_compiled_euler_step_is_the_numpy_one(family, friction, velocity):
    """The simulator's step in C (model/compiled.py _EULER_STEP) against ArmPhysics' NumPy step: friction
    (sliding, at rest, offsets; or none; one Coulomb velocity or one per element), the known torques and the
    solve, over random states and torques."""
    model = load_model(family)
    delta = plausible_parameters(model, np.random.default_rng(8))
    fast = ArmPhysics(model, delta, friction=friction, coulomb_velocity=velocity)
    slow = ArmPhysics(model, delta, friction=friction, compiled=False, coulomb_velocity=velocity)
    assert fast._euler is not None and slow._euler is None
    rng = np.random.default_rng(9)
    for k in range(20):
        q, qd, tau = rng.normal(0, 0.4, model.dof), rng.normal(0, 0.5, model.dof), rng.normal(0, 0.3, model.dof)
        if k % 4 == 0:
            qd[rng.integers(model.dof)] = 0.0  # at rest: the stiff Coulomb damping, sign(v) = 0
        state = ArmState(q, qd, 1.0)
        a, b = fast.step_euler(state, tau, 1 / 1500), slow.step_euler(state, tau, 1 / 1500)
        assert a.t == b.t
        np.testing.assert_allclose(a.qd, b.qd, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(a.q, b.q, rtol=1e-12, atol=1e-14)
        assert not np.allclose(a.qd, qd)  # it moved: the comparison is not of two copies of the input


def test_a_small_coulomb_velocity_is_static_friction():
    """v_s per friction element (sim/physics.py): with 1e-4 on the PSM's yaw, pitch and insertion, a torque of
    half their Coulomb friction beyond the exact holding torque (in the direction the offset Fo does not
    weaken) leaves them where they are (stiction), while
    the default 0.02 lets them slide; unknown elements and non-positive values are refused."""
    from dvrk_ident_ros.errors import DescriptionError
    from dvrk_ident_ros.sim.config import load_sim_config

    config = load_sim_config("psm")
    model, delta = config.model, config.delta
    q0 = model.motor_from_dvrk(np.array([0.2, -0.3, 0.12, 0.1, 0.2, -0.1, 0.3]))
    fc = np.array([delta[model.layout.index(f"Fc{j}")] for j in (1, 2, 3)])
    fo = np.array([delta[model.layout.index(f"Fo{j}")] for j in (1, 2, 3)])
    push = np.zeros(model.dof)
    # against motion of sign s the friction at rest holds up to Fc + s Fo: pushed where that is Fc + |Fo|
    push[:3] = 0.5 * fc * np.where(fo >= 0, 1.0, -1.0)  # dVRK joints 1-3 are motors 1-3 on the PSM
    moved = {}
    for label, velocity in (("sticky", STICKY_PSM), ("smooth", 0.02)):
        physics = ArmPhysics(model, delta, coulomb_velocity=velocity)
        hold = physics.bias(q0, np.zeros(model.dof)) + model.motor_torque_from_dvrk(push)
        state = ArmState(q0.copy(), np.zeros(model.dof))
        for _ in range(1500):  # 1 s
            state = physics.step_euler(state, hold, 1.0 / 1500)
        moved[label] = np.abs(model.dvrk_from_motor(state.q) - model.dvrk_from_motor(q0))[:3]
    assert np.all(moved["sticky"] < 2e-4), moved  # creeps at v_s * push / Fc at most: 5e-5 / s
    assert np.all(moved["smooth"] > 20 * moved["sticky"]), moved
    physics = ArmPhysics(model, delta, coulomb_velocity=STICKY_PSM)
    assert physics.friction_elements[:3] == ["1", "2", "3"]
    np.testing.assert_array_equal(physics.coulomb_velocity[:4], [1e-4, 1e-4, 1e-4, 0.02])
    with pytest.raises(DescriptionError, match="not friction elements"):
        ArmPhysics(model, delta, coulomb_velocity={"9": 1e-4})
    with pytest.raises(DescriptionError, match="must be > 0"):
        ArmPhysics(model, delta, coulomb_velocity={"default": 0.0})


def test_the_simulation_file_gives_coulomb_velocities_per_element(tmp_path):
    """config/sim/<arm>.yaml: coulomb_velocity is a number or a mapping of friction elements; the simulated
    arm's physics takes it; a value that is no number is refused with the file's name."""
    import yaml

    from dvrk_ident_ros.errors import DescriptionError
    from dvrk_ident_ros.model.description import config_directory
    from dvrk_ident_ros.sim.arm import SimulatedArm
    from dvrk_ident_ros.sim.config import load_sim_config

    source = config_directory() / "sim" / "psm.yaml"
    raw = yaml.safe_load(source.read_text())
    raw["coulomb_velocity"] = {"default": 0.01, **STICKY_PSM}
    path = tmp_path / "psm_sticky.yaml"
    path.write_text(yaml.safe_dump(raw))
    config = load_sim_config("psm", path, parameters=source.parent / raw["parameters"])
    arm = SimulatedArm(config, "PSM1")
    np.testing.assert_array_equal(arm.physics.coulomb_velocity[:4], [1e-4, 1e-4, 1e-4, 0.01])
    raw["coulomb_velocity"] = {"1": "slow"}
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(DescriptionError, match=r"psm_sticky\.yaml: coulomb_velocity"):
        load_sim_config("psm", path, parameters=source.parent / raw["parameters"])
