"""MTM gravity compensation: model, MLSE, files, the compensation law."""
from __future__ import annotations

import json

import numpy as np
import pytest

from dvrk_ident_ros.app import cli
from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.gc.fitting.data import PoseData, robust_mean
from dvrk_ident_ros.gc.fitting.mlse import fit_mlse, fit_slse, new_gravity_columns, relative_errors
from dvrk_ident_ros.gc.model.derivation import format_in_core, gc_gravity_from_standard
from dvrk_ident_ros.gc.model.params import GcParameters, load_gc
from dvrk_ident_ros.gc.model.regressor import gravity_regressor, gravity_torques, regressor, torques
from dvrk_ident_ros.gc.runtime.law import CompensationLaw
from dvrk_ident_ros.model.arm_model import load_model
from dvrk_ident_ros.model.physical import random_physical_parameters


def test_format_gravity_columns_are_the_cores_mtm_gravity():
    """The ten lumped columns of the dVRK file lie in the physics core's gravity space (1e-12)."""
    assert format_in_core(load_model("mtm")) < 1e-12


def test_core_parameters_convert_to_the_format():
    """With the wrist roll's centre of mass on its axis, the core's gravity is exactly the format's."""
    model = load_model("mtm")
    delta = random_physical_parameters(model.layout, np.random.default_rng(0))
    i = model.layout.inertial_blocks["7"]
    delta[i + 6:i + 8] = 0.0  # l7x = l7y = 0
    delta[model.layout.of_kind("K")] = 0.0
    theta, residual = gc_gravity_from_standard(model, delta)
    assert residual < 1e-10
    assert theta.shape == (10,)


def test_scalar_gravity_matches_the_vectorised_regressor():
    rng = np.random.default_rng(1)
    theta = rng.normal(size=40)
    out = [0.0] * 7
    for q in rng.uniform(-3, 3, (20, 7)):
        gravity_torques(q, theta, out)
        assert np.allclose(out, gravity_regressor(q[None])[0] @ theta[:10], atol=1e-12)


def test_upper_echelon_structure():
    assert new_gravity_columns() == {6: [8, 9], 5: [6, 7], 4: [4, 5], 3: [2, 3], 2: [0, 1], 1: []}


def _synthetic(rng, theta_pos, theta_neg, noise=0.0):
    """Pose sweeps like the two-joint grid, torques from known parameters."""
    aux = {6: 4, 5: 2, 4: 2, 3: 1}
    qs, joints, dirs, auxv, sweeps = [], [], [], [], []
    sweep = 0
    for i in range(1, 7):
        for a in (np.linspace(-0.3, 0.3, 4) if i in aux else [0.0, 0.0, 0.0]):
            base = np.array([0.2, 0.1, 0.1, 0.0, 1.5, 0.0, 0.0])
            if i in aux:
                base[aux[i]] = a
            sweep_q = np.tile(base, (30, 1))
            sweep_q[:, i - 1] = np.linspace(-1.0, 1.2, 30)
            for d in (1, -1):
                qs.append(sweep_q if d > 0 else sweep_q[::-1])
                joints += [i] * 30
                dirs += [d] * 30
                auxv += [a] * 30
                sweeps += [sweep] * 30
                sweep += 1
    q = np.vstack(qs)
    d = np.array(dirs)
    tau = np.where(d[:, None] > 0, torques(q, theta_pos), torques(q, theta_neg))
    tau = tau + noise * rng.normal(size=tau.shape)
    return PoseData(q, tau, np.array(joints), d, np.array(auxv), np.array(sweeps), "synthetic")


def _thetas(rng):
    theta_pos = np.zeros(40)
    theta_pos[:10] = rng.normal(0, 0.05, 10)
    theta_pos[10:] = rng.normal(0, 0.02, 30)
    theta_neg = theta_pos.copy()
    theta_neg[10:] += rng.normal(0, 0.01, 30)
    for th in (theta_pos, theta_neg):  # joint 2 is first order
        th[10 + 5 + 2:10 + 10] = 0.0
    return theta_pos, theta_neg


def test_mlse_recovers_known_parameters():
    rng = np.random.default_rng(2)
    theta_pos, theta_neg = _thetas(rng)
    data = _synthetic(rng, theta_pos, theta_neg)
    fit = fit_mlse(data)
    assert np.allclose(fit.theta(+1), theta_pos, atol=1e-8)
    assert np.allclose(fit.theta(-1), theta_neg, atol=1e-8)
    assert max(relative_errors(fit, data).values()) < 1e-8
    slse = fit_slse(data)
    assert np.allclose(slse.theta(+1), theta_pos, atol=1e-8)


def test_fits_weigh_partly_turned_branches_by_the_recorded_state():
    """Where a pose was sampled with its cable partly turned (state h, the PID settling back), the torque
    is the blend (1 + h) / 2 of the two branches; MLSE, SLSE and the regularised fit given h recover both
    branches exactly, and taking the pose for its sweep's whole branch biases them."""
    from dataclasses import replace

    from dvrk_ident_ros.gc.fitting.regularised import Settings, fit_regularised

    rng = np.random.default_rng(21)
    theta_pos, theta_neg = _thetas(rng)
    plain = _synthetic(rng, theta_pos, theta_neg)
    h = plain.direction * rng.uniform(0.2, 1.0, len(plain.q))  # turned part of the way, the sweep's way
    a = (1 + h)[:, None] / 2
    data = replace(plain, tau=a * torques(plain.q, theta_pos) + (1 - a) * torques(plain.q, theta_neg), branch=h)
    for fit in (fit_mlse(data), fit_slse(data), fit_regularised(data, None, Settings(lambdas=(0.0,)))):
        assert np.allclose(fit.theta(+1), theta_pos, atol=1e-8), fit.method
        assert np.allclose(fit.theta(-1), theta_neg, atol=1e-8), fit.method
        assert max(relative_errors(fit, data).values()) < 1e-8
    blind = fit_mlse(replace(data, branch=None))
    gap, blind_gap = theta_pos[10:] - theta_neg[10:], blind.theta(+1)[10:] - blind.theta(-1)[10:]
    assert np.linalg.norm(blind_gap) < 0.9 * np.linalg.norm(gap)  # the branches pulled together
    assert np.allclose(data.select(data.joint == 3).branch, h[data.joint == 3])
    # a direction left with too few positions of its own (a sparse grid): that joint by the sweep directions
    h6 = np.where(data.joint == 6, 1.0, h)  # joint 6's cable never turned: no pose on its negative branch
    sparse = replace(data, branch=h6)
    fit = fit_mlse(sparse)
    labelled = fit_mlse(replace(sparse, branch=np.where(data.joint == 6, data.direction, h6)))
    assert np.allclose(fit.theta(+1), labelled.theta(+1)) and np.allclose(fit.theta(-1), labelled.theta(-1))
    assert len(fit.notes) == 1 and fit.notes[0].startswith("joint 6: the recorded cable states leave a direction 0")
    assert fit_regularised(sparse, None, Settings(lambdas=(0.0,))).notes[0].startswith("joint 6")
    six = sparse.joint == 6  # predicted (and scored) as fitted: joint 6's poses by their sweep's direction
    assert fit.by_direction == (6,)
    assert np.allclose(fit.predict(sparse)[six], fit.predict(replace(sparse, branch=None))[six])
    assert not np.allclose(fit.predict(sparse)[~six], fit.predict(replace(sparse, branch=None))[~six])


def test_held_out_scoring_of_weighted_poses():
    """With recorded states, a fixed file is scored on the same blend a fit predicts, and the controller's
    at-rest torque (the guard) is the mean of the two directions whatever the state."""
    from dataclasses import replace

    from dvrk_ident_ros.gc.validation.validation import FixedFile, at_rest

    rng = np.random.default_rng(22)
    theta_pos, theta_neg = _thetas(rng)
    plain = _synthetic(rng, theta_pos, theta_neg)
    data = replace(plain, branch=plain.direction * rng.uniform(0.2, 1.0, len(plain.q)))
    fit = fit_mlse(replace(data, tau=fit_mlse(plain).predict(data)))  # exact: theta_pos, theta_neg
    assert np.allclose(FixedFile(theta_pos, theta_neg).predict(data), fit.predict(data), atol=1e-9)
    mean = 0.5 * (torques(data.q, theta_pos) + torques(data.q, theta_neg))
    assert np.allclose(at_rest(fit, data), mean, atol=1e-9)
    assert np.allclose(at_rest(FixedFile(theta_pos, theta_neg), data), mean, atol=1e-9)


def test_gc_file_round_trip_reproduces_predictions(tmp_path):
    """The 40-parameter model evaluated from the written JSON reproduces the fit's predictions to 1e-9."""
    rng = np.random.default_rng(3)
    theta_pos, theta_neg = _thetas(rng)
    data = _synthetic(rng, theta_pos, theta_neg, noise=0.01)
    fit = fit_mlse(data)
    params = GcParameters("MTML", "123", fit.theta(+1), fit.theta(-1), np.ones(7), -np.ones(7))
    back = load_gc(params.save(tmp_path / "gc-MTML-123.json"))
    pred = np.where(data.direction[:, None] > 0, torques(data.q, back.theta_pos), torques(data.q, back.theta_neg))
    assert np.max(np.abs(pred - fit.predict(data))) < 1e-9
    raw = json.loads((tmp_path / "gc-MTML-123.json").read_text())
    assert raw["version"] == "2.0"
    assert set(raw["GC_controller"]) >= {"gc_dynamic_params_pos", "gc_dynamic_params_neg", "safe_upper_torque_limit",
                                         "safe_lower_torque_limit", "db_vel_vec", "sat_vec_vec",
                                         "fric_comp_ratio_vec"}


def test_law_blend_uses_signed_velocity_and_clamps():
    rng = np.random.default_rng(4)
    theta_pos, theta_neg = _thetas(rng)
    params = GcParameters("MTMR", "1", theta_pos, theta_neg, np.full(7, 10.0), np.full(7, -10.0))
    law = CompensationLaw(params)
    q = rng.uniform(-1, 1, 7)
    tp, tn = torques(q[None], theta_pos)[0], torques(q[None], theta_neg)[0]
    still = list(law.compute(q, [0.0] * 7))
    assert np.allclose(still, 0.5 * (tp + tn))
    fast_pos = list(law.compute(q, [1.0] * 7))
    r = params.ratio
    assert np.allclose(fast_pos, (0.5 + 0.5 * r) * tp + (0.5 - 0.5 * r) * tn)
    fast_neg = list(law.compute(q, [-1.0] * 7))
    assert np.allclose(fast_neg, (0.5 - 0.5 * r) * tp + (0.5 + 0.5 * r) * tn)
    assert all(a < 0.5 for a in law.alpha[:6])  # the signed velocity, not |qdot|
    tight = GcParameters("MTMR", "1", theta_pos, theta_neg, np.full(7, 1e-3), np.full(7, -1e-3))
    clamped = CompensationLaw(tight)
    out = clamped.compute(q, [0.0] * 7)
    assert all(abs(x) <= 1e-3 + 1e-15 for x in out) and any(clamped.saturated)


def _travel_run(law, start, end, steps, speed):
    """Move every joint from ``start`` to ``end`` in ``steps`` samples at ``speed`` (rad/s, signed per the
    motion); returns the blend weights of each sample."""
    out = []
    for x in np.linspace(start, end, steps):
        law.compute(x, np.sign(end - start) * speed)
        out.append(list(law.alpha))
    return np.array(out)


def test_travel_blend_holds_the_branch_each_joint_arrived_on():
    """At rest the travel blend gives the torques of the direction each joint last travelled (the branch a
    pose-grid sweep measured), the mean before any travel, and turns continuously over its width."""
    rng = np.random.default_rng(12)
    theta_pos, theta_neg = _thetas(rng)
    params = GcParameters("MTMR", "1", theta_pos, theta_neg, np.full(7, 10.0), np.full(7, -10.0))
    law = CompensationLaw(params, blend="travel", blend_travel=0.02)
    q = rng.uniform(-0.5, 0.5, 7)
    tp, tn = torques(q[None], theta_pos)[0], torques(q[None], theta_neg)[0]
    law.compute(q - 0.2, [0.0] * 7)
    assert np.allclose(law.alpha, 0.5)  # no travel yet: the console's mean
    alphas = _travel_run(law, q - 0.2, q, 201, 0.5)  # 0.2 rad up, 1 mrad a sample
    assert np.allclose(law.compute(q, [0.0] * 7), tp, atol=1e-5)  # at rest: the positive branch (1 - e^-9.9)
    assert np.allclose(law.compute(q, [0.3] * 7), tp, atol=1e-5)  # no travel, whatever the velocity: held
    # continuous: the weight moves at most 1 mrad / width a sample (the console's jumps with the velocity)
    assert np.abs(np.diff(alphas, axis=0)).max() <= 0.001 / 0.02 + 1e-12
    assert alphas[:2].max() == 0.5 < alphas[2].min()  # the play: 1.25 counts (1 mrad a sample) turn nothing
    law.compute(q + 0.2, [0.0] * 7)  # a jump of 0.2 rad (a lost sample) is travel too: still up
    assert np.allclose(law.alpha, 1.0, atol=1e-5)
    _travel_run(law, q + 0.2, q, 201, 0.5)
    assert np.allclose(law.compute(q, [0.0] * 7), tn, atol=1e-5)
    # the velocity blend (the console's) at rest after the same travel: the mean
    console = CompensationLaw(params)
    _travel_run(console, q - 0.2, q, 201, 0.5)
    assert np.allclose(console.compute(q, [0.0] * 7), 0.5 * (tp + tn))


def _dahl_check_law(width: float) -> CompensationLaw:
    rng = np.random.default_rng(13)
    theta_pos, theta_neg = _thetas(rng)
    theta_neg[:10] = theta_pos[:10]
    params = GcParameters("MTMR", "1", theta_pos, theta_neg, np.full(7, 10.0), np.full(7, -10.0))
    return CompensationLaw(params, blend="travel", blend_travel=width)


def test_travel_blend_state_follows_the_dahl_model_of_the_simulator():
    """The law's direction state follows the simulator's Dahl hysteresis (sim/hysteresis.py, an independent
    implementation) through fast and slow motion and reversals, within the lag of its play after a reversal
    (2 e = w / 4 of travel: 2 (1 - e^(-1/4)) of the state), and closely once a joint travels on beyond it."""
    from dvrk_ident_ros.sim.hysteresis import DahlHysteresis

    width = 0.03
    law = _dahl_check_law(width)
    dahl = DahlHysteresis(np.ones((7, 1)), width)
    x = np.zeros(7)
    law.compute(x, [0.0] * 7)
    worst, last = 0.0, np.zeros(7)
    for k in range(3000):  # back and forth, fast (4 mrad a sample) and slow (4 urad: 4 mrad/s at 1 kHz)
        dq = 0.004 * np.sin(0.01 * k + np.arange(7)) * (1.0 if (k // 500) % 2 == 0 else 1e-3)
        x = x + dq
        law.compute(x, dq / 0.001)
        dahl.update(dq)
        state = 2 * np.array(law.alpha) - 1
        worst = max(worst, float(np.abs(state - dahl.z).max()))
        last = np.abs(state - dahl.z)
    assert worst <= 2 * (1 - np.exp(-0.25)) + 0.01  # the simulator's Dahl is Euler-stepped
    assert worst > 0.05  # the lag is there (the bound is not vacuous)
    law2, dahl2 = _dahl_check_law(width), DahlHysteresis(np.ones((7, 1)), width)
    x = np.zeros(7)
    law2.compute(x, [0.0] * 7)
    for _ in range(200):  # one way, 1 mrad a sample: past the play, the state is Dahl's, lag e
        x = x + 0.001
        law2.compute(x, [1.0] * 7)
        dahl2.update(np.full(7, 0.001))
    assert np.allclose(2 * np.array(law2.alpha) - 1, dahl2.z, atol=1e-3)
    assert last.max() < worst


def test_travel_blend_counts_a_slow_approach_and_ignores_encoder_jitter():
    """A joint creeping in below the velocity dead band still turns the cable (the PID settling, a short
    move of one joint), also while the node only observes; a joint at rest whose encoder toggles one count
    (the MTM's: 0.03 mrad on joints 1-3, 3 mrad on the wrist, 6 mrad on the roll, above w / 4) does not."""
    law = _dahl_check_law(0.02)
    count = np.array([2.48e-5, 3.15e-5, 2.63e-5, 1.49e-4, 2.96e-3, 2.96e-3, 5.92e-3])  # config/sim/mtm.yaml
    x = np.zeros(7)
    law.compute(x, [0.0] * 7)
    for k in range(8000):  # 80 mrad up at 10 mrad/s, quantised to the count, sampled at 1 kHz
        x = x + 1e-5
        if k < 4000:  # the first half before the node's hand-over: observed, not commanded
            law.observe(count * np.round(x / count))
        else:
            law.compute(count * np.round(x / count), [0.01] * 7)
    held = list(law.alpha)
    assert min(held) > 0.95  # turned to the positive branch, below every joint's dead band
    top = count * np.round(x / count)
    for k in range(2000):  # at rest, the last bit toggling
        law.compute(top - count * (k % 2), [0.0] * 7)
    assert law.alpha == held


def test_an_unknown_blend_is_refused():
    params = GcParameters("MTMR", "1", np.zeros(40), np.zeros(40), np.ones(7), -np.ones(7))
    with pytest.raises(DataError, match="blend 'memory'"):
        CompensationLaw(params, blend="memory")
    with pytest.raises(DataError, match="blend_travel"):
        CompensationLaw(params, blend="travel", blend_travel=0.0)


def _v1_file(tmp_path, amplitude, theta_pos=None, theta_neg=None, version="1.0"):
    raw = {"ARM_NAME": "MTML", "SN": "1", "version": version, "GC_controller": {
        "gc_dynamic_params_pos": list(theta_pos) if theta_pos is not None else [0.0] * 40,
        "gc_dynamic_params_neg": list(theta_neg) if theta_neg is not None else [0.0] * 40,
        "safe_upper_torque_limit": [10] * 7, "safe_lower_torque_limit": [-10] * 7,
        "beta_vel_amplitude": list(amplitude)}}
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(raw))
    return path


def test_version_1_files_keep_their_beta_amplitude_and_round_trip(tmp_path):
    params = load_gc(_v1_file(tmp_path, [2, 2, 2, 2, 10, 6, 2]))
    assert params.version == "1.0" and list(params.beta_amplitude) == [2, 2, 2, 2, 10, 6, 2]
    raw = params.to_json()  # written back as 1.0: saving must not change how the file compensates
    assert raw["version"] == "1.0" and raw["GC_controller"]["beta_vel_amplitude"] == [2, 2, 2, 2, 10, 6, 2]
    assert not {"db_vel_vec", "sat_vec_vec", "fric_comp_ratio_vec"} & set(raw["GC_controller"])
    back = load_gc(params.save(tmp_path / "again.json"))
    assert back.version == "1.0" and np.array_equal(back.beta_amplitude, params.beta_amplitude)
    assert load_gc(_v1_file(tmp_path, [2] * 7, version="1")).beta_amplitude is not None  # as the console: int(1)
    fresh = GcParameters("MTML", "1", np.zeros(40), np.zeros(40), np.ones(7), -np.ones(7))
    assert fresh.to_json()["version"] == "2.0" and fresh.beta_amplitude is None


def test_version_1_blend_is_the_consoles_sine_of_the_velocity(tmp_path):
    """beta = 0.5 + 0.5 sin(pi qdot / (2 A)) inside +-A (robGravityCompensationMTM::ComputeBetaVel), 1 and 0
    beyond; no dead band and no ratio: the whole way from one direction's torques to the other's."""
    rng = np.random.default_rng(11)
    theta_pos, theta_neg = _thetas(rng)
    amplitude = np.array([2.0, 2.0, 2.0, 2.0, 10.0, 6.0, 2.0])
    law = CompensationLaw(load_gc(_v1_file(tmp_path, amplitude, theta_pos, theta_neg)))
    q = rng.uniform(-0.8, 0.8, 7)
    tp, tn = torques(q[None], theta_pos)[0], torques(q[None], theta_neg)[0]
    for fraction in (-1.5, -1.0, -0.7, -0.3, -0.01, 0.0, 0.004, 0.25, 0.5, 0.9, 1.0, 3.0):
        qd = fraction * amplitude
        beta = np.where(qd >= amplitude, 1.0, np.where(qd <= -amplitude, 0.0,
                                                       0.5 + 0.5 * np.sin(np.pi * qd / (2 * amplitude))))
        out = np.array(law.compute(q, qd))
        assert np.allclose(law.alpha, beta, atol=1e-15), (fraction, law.alpha, beta)
        assert np.allclose(out, beta * tp + (1 - beta) * tn, atol=1e-12), fraction
    # a small speed already leaves 0.5 (no dead band), unlike a 2.0 file with the same parameters
    law.compute(q, np.full(7, 0.005))
    assert all(a > 0.5 for a in law.alpha)
    v2 = CompensationLaw(GcParameters("MTML", "1", theta_pos, theta_neg, np.full(7, 10.0), np.full(7, -10.0)))
    v2.compute(q, np.full(7, 0.005))  # inside every default dead band
    assert all(a == 0.5 for a in v2.alpha)


@pytest.mark.parametrize(("amplitude", "message"), [
    ([2] * 6, "beta_vel_amplitude: expected 7 finite numbers"),
    ([2, 2, 0, 2, 2, 2, 2], "expected 7 positive numbers"),
])
def test_version_1_files_without_a_usable_amplitude_are_refused(tmp_path, amplitude, message):
    with pytest.raises(DataError, match=message):
        load_gc(_v1_file(tmp_path, amplitude))


def _law_with_positive_lower_limits(arm: str) -> CompensationLaw:
    """Torques that clamp on both sides, and lower limits above zero on joints 2 and 3 (as the CUHK file's
    0.25638 and 0.08811 N m): at scale 0 a clamp after the scale would command those limits."""
    rng = np.random.default_rng(12)
    theta_pos, theta_neg = _thetas(rng)
    upper = np.array([0.09488, 0.72934, 0.55215, 0.12682, 0.05482, 0.03737, 0.0])
    lower = np.array([-0.06909, 0.25638, 0.08811, -0.14571, -0.05005, -0.03639, 0.0])
    return CompensationLaw(GcParameters(arm, "1", 5 * theta_pos, 5 * theta_neg, upper, lower))


@pytest.mark.parametrize("arm", ["MTML", "MTMR"])
def test_law_at_scale_zero_commands_exactly_zero(arm):
    law = _law_with_positive_lower_limits(arm)
    rng = np.random.default_rng(13)
    saturated = 0
    for _ in range(200):
        q, qd = rng.uniform(-1.0, 1.0, 7), rng.uniform(-0.5, 0.5, 7)
        full = np.array(law.compute(q, qd, 1.0))
        saturated += sum(law.saturated)
        assert np.all(full <= law._upper) and np.all(full >= law._lower)
        assert all(x == 0.0 for x in law.compute(q, qd, 0.0)), list(law.total)
        half = np.array(law.compute(q, qd, 0.5))
        assert np.allclose(half, 0.5 * full, rtol=0, atol=1e-15)  # the clamped torques, scaled
    assert saturated > 0, "the test's torques should reach the limits"


def test_law_at_scale_zero_with_the_cuhk_version_1_file(shared_dir):
    path = shared_dir / "data" / "cuhk-mtm-gc" / "MTML-41878" / "gc-MTML-41878.json"
    params = load_gc(path)
    assert params.lower_limit[1] > 0 and params.lower_limit[2] > 0  # the file's positive lower limits
    law = CompensationLaw(params)
    rng = np.random.default_rng(14)
    for _ in range(100):
        q, qd = rng.uniform(-0.5, 0.5, 7), rng.uniform(-3.0, 3.0, 7)
        assert law.compute(q, qd, 1.0)[1] >= params.lower_limit[1]
        assert all(x == 0.0 for x in law.compute(q, qd, 0.0))


@pytest.mark.parametrize("family", ["mtm", "psm"])
def test_model_law_at_scale_zero_commands_exactly_zero(family):
    from dvrk_ident_ros.gc.runtime.model_law import ModelCompensation
    from dvrk_ident_ros.sim.config import load_sim_config

    config = load_sim_config(family)
    dof = config.model.dof
    limit = np.full(dof, 0.05)  # tight: most torques clamp
    law = ModelCompensation(config.model, config.delta, limit)
    rng = np.random.default_rng(15)
    for _ in range(20):
        q = rng.uniform(-0.5, 0.5, dof)
        full = np.array(law.compute(q, np.zeros(dof), 1.0))
        assert any(law.saturated) and np.all(np.abs(full) <= limit)
        assert all(x == 0.0 for x in law.compute(q, np.zeros(dof), 0.0))
        assert np.allclose(law.compute(q, np.zeros(dof), 0.25), 0.25 * full, rtol=0, atol=1e-15)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r.update(ARM_NAME="PSM1"), "not an MTM"),
        (lambda r: r["GC_controller"].pop("gc_dynamic_params_neg"), "gc_dynamic_params_neg: missing field"),
        (lambda r: r["GC_controller"].update(gc_dynamic_params_pos=[float("nan")] * 40), "finite"),
        (lambda r: r.update(version="3.0"), "unknown gc file version"),
    ],
)
def test_bad_gc_files(tmp_path, edit, message):
    raw = GcParameters("MTML", "1", np.zeros(40), np.zeros(40), np.ones(7), -np.ones(7)).to_json()
    edit(raw)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(DataError, match=message):
        load_gc(path)


def test_missing_joint_sweep_and_nan_samples():
    rng = np.random.default_rng(5)
    data = _synthetic(rng, *_thetas(rng))
    with pytest.raises(DataError, match=r"no sweep of joint\(s\) \[4\]"):
        fit_mlse(data.select(data.joint != 4))
    samples = np.array([[1.0, 1.1, np.nan, 0.9, 50.0]])
    assert np.isfinite(robust_mean(samples, 1.0)[0])
    assert np.isnan(robust_mean(np.full((1, 3), np.nan), 0.3)[0])


def test_gc_cli_unknown_arm(tmp_path, capsys):
    rng = np.random.default_rng(6)
    data = _synthetic(rng, *_thetas(rng))
    path = tmp_path / "poses.npz"
    np.savez(path, q=data.q, tau=data.tau, joint=data.joint, direction=data.direction)
    assert cli.main(["gc", "fit", "--data", str(path), "--arm", "PSM1", "--out", str(tmp_path / "x.json")]) == 2
    assert "unknown arm" in capsys.readouterr().err
    assert cli.main(["gc", "fit", "--data", str(path), "--arm", "MTML", "--serial", "7",
                     "--out", str(tmp_path / "gc.json")]) == 0
    saved = load_gc(tmp_path / "gc.json")
    assert saved.arm == "MTML"
    # the fit's own residual on its poses, recorded for the fit check (the synthetic data's noise, per joint)
    from dvrk_ident_ros.gc.fitting.fits import FITS
    from dvrk_ident_ros.gc.fitting.loaders import load_poses

    poses = load_poses(path)
    fit = FITS["mlse"](poses, None)
    residual = np.sqrt(np.mean((poses.tau - fit.predict(poses)) ** 2, axis=0))
    assert saved.fit_residual == pytest.approx(residual) and np.all(residual[:6] > 0)
    # the range each joint 1-6 was measured over (the fit check's), written and said
    low, high = np.degrees(poses.q[:, :6].min(0)), np.degrees(poses.q[:, :6].max(0))
    assert saved.position_lower_deg[:6] == pytest.approx(low, abs=1e-3)
    assert saved.position_upper_deg[:6] == pytest.approx(high, abs=1e-3)
    said = capsys.readouterr().out
    ranges = " ".join(f"{a:.0f}..{b:.0f}" for a, b in zip(low, high, strict=True))
    assert f"joints 1-6 measured over (deg) {ranges}" in said, said


def test_regressor_shapes():
    R = regressor(np.zeros((3, 7)))
    assert R.shape == (3, 7, 40) and np.all(R[:, 6] == 0)


def _spec_gravity_columns(q: np.ndarray, g: float = 9.81) -> np.ndarray:
    """R_g (N x 7 x 10) typed in from reference/gc-json.md ("The model the 40 parameters belong to"):
    the independent reference for the columns generated from the core's kinematics."""
    q = np.atleast_2d(q)
    s2, c2 = np.sin(q[:, 1]), np.cos(q[:, 1])
    s23, c23 = np.sin(q[:, 1] + q[:, 2]), np.cos(q[:, 1] + q[:, 2])
    s4, c4 = np.sin(q[:, 3]), np.cos(q[:, 3])
    s5, c5 = np.sin(q[:, 4]), np.cos(q[:, 4])
    s6, c6 = np.sin(q[:, 5]), np.cos(q[:, 5])
    R = np.zeros((q.shape[0], 7, 10))
    R[:, 1, 0], R[:, 1, 1] = g * s2, g * c2
    shared = [g * c23, -g * s23, g * c23 * c4, -g * c23 * s4, -g * (c23 * c4 * s5 + s23 * c5),
              g * (c23 * c4 * c5 - s23 * s5), g * (c23 * s4 * s6 + s23 * s5 * c6 - c23 * c4 * c5 * c6),
              g * (c23 * s4 * c6 - s23 * s5 * s6 + c23 * c4 * c5 * s6)]
    for k, col in enumerate(shared):
        R[:, 1, 2 + k] = R[:, 2, 2 + k] = col
    row4 = [-g * s23 * s4, -g * s23 * c4, g * s23 * s4 * s5, -g * s23 * s4 * c5, g * s23 * (c4 * s6 + s4 * c5 * c6),
            g * s23 * (c4 * c6 - s4 * c5 * s6)]
    for k, col in enumerate(row4):
        R[:, 3, 4 + k] = col
    row5 = [-g * (c23 * s5 + s23 * c4 * c5), g * (c23 * c5 - s23 * c4 * s5), g * (s23 * c4 * s5 * c6 - c23 * c5 * c6),
            g * (c23 * c5 * s6 - s23 * c4 * s5 * s6)]
    for k, col in enumerate(row5):
        R[:, 4, 6 + k] = col
    R[:, 5, 8] = g * (s23 * s4 * c6 + c23 * s5 * s6 + s23 * c4 * c5 * s6)
    R[:, 5, 9] = g * (c23 * s5 * c6 - s23 * s4 * s6 + s23 * c4 * c5 * c6)
    return R


def _random_dvrk_poses(seed: int = 7, n: int = 200) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-np.pi, np.pi, (n, 7))


def test_generated_gravity_columns_equal_the_spec():
    """Vectorised and scalar generated columns = the gc-json.md formulas (1e-12 relative, 200 poses)."""
    q = _random_dvrk_poses()
    spec = _spec_gravity_columns(q)
    R = gravity_regressor(q)
    assert R.shape == (200, 7, 10)
    assert np.abs(R - spec).max() <= 1e-12 * np.abs(spec).max()
    assert np.allclose(gravity_regressor(q, g=2 * 9.81), 2 * spec, rtol=1e-12, atol=0)  # linear in g
    out = [1.0] * 7
    for j in range(10):  # every column alone through the scalar path
        e = [0.0] * 40
        e[j] = 1.0
        for k in range(q.shape[0]):
            gravity_torques(q[k].tolist(), e, out)
            assert np.abs(np.array(out) - spec[k, :, j]).max() <= 1e-12 * max(np.abs(spec[k, :, j]).max(), 1.0)
    theta = np.random.default_rng(8).normal(size=40)
    for k in range(q.shape[0]):
        gravity_torques(q[k].tolist(), theta.tolist(), out, 3.7)
        ref = _spec_gravity_columns(q[k], 3.7)[0] @ theta[:10]
        assert np.abs(np.array(out) - ref).max() <= 1e-12 * max(np.abs(ref).max(), 1.0)


def test_generated_gravity_columns_equal_the_cores_first_moments():
    """Each generated column is the core's gravity column of the table's standard parameter (1e-12)."""
    from dvrk_ident_ros.gc.model.derivation import core_gravity_dvrk
    from dvrk_ident_ros.gc.model.symbolic_gravity import GC_COLUMNS

    model = load_model("mtm")
    q = _random_dvrk_poses(9)
    Y = core_gravity_dvrk(model, q)
    R = gravity_regressor(q)
    assert len(GC_COLUMNS) == 10
    for j, (name, sign) in enumerate(GC_COLUMNS):
        core = sign * Y[:, :, model.parameter_names.index(name)]
        assert np.abs(R[:, :, j] - core).max() <= 1e-12 * np.abs(core).max(), name


def test_symbolic_gravity_columns_and_cache(tmp_path):
    """The sympy columns are compact (q3 only through q2 + q3) and a cold generation is cached and reused."""
    import sympy

    from dvrk_ident_ros.gc.model import symbolic_gravity

    M = symbolic_gravity.gravity_columns()
    q = sympy.symbols("q1:8", real=True)
    assert M.shape == (7, 10) and M[1, 0] == sympy.sin(q[1]) and M[2, 2] == sympy.cos(q[1] + q[2])
    assert all(e == 0 for e in M[0, :]) and all(e == 0 for e in M[6, :])
    pose = _random_dvrk_poses(10, 1)[0]
    numeric = np.array(M.subs(dict(zip(q, pose, strict=True))).evalf(), dtype=float)
    assert np.allclose(9.81 * numeric, _spec_gravity_columns(pose)[0], rtol=0, atol=1e-12)
    module = symbolic_gravity.load_generated(cache_dir=tmp_path)
    cached = list(tmp_path.glob("mtm_gc_gravity_*.py"))
    assert len(cached) == 1
    assert "sympy" not in cached[0].read_text()  # the generated code needs no sympy
    again = symbolic_gravity.load_generated(cache_dir=tmp_path)
    assert again.__file__ == module.__file__
    np.testing.assert_allclose(again.gravity_regressor(pose[None], 9.81), _spec_gravity_columns(pose), atol=1e-12)
