"""MTM gravity compensation: model, MLSE, files, the compensation law."""
from __future__ import annotations

import json

import numpy as np
import pytest

from dvrk_ident_ros import cli
from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.gc.data import PoseData, robust_mean
from dvrk_ident_ros.gc.derivation import format_in_core, gc_gravity_from_standard
from dvrk_ident_ros.gc.law import CompensationLaw
from dvrk_ident_ros.gc.mlse import fit_mlse, fit_slse, new_gravity_columns, relative_errors
from dvrk_ident_ros.gc.params import GcParameters, load_gc
from dvrk_ident_ros.gc.regressor import gravity_regressor, gravity_torques, regressor, torques
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


def test_version_1_files_are_read_with_defaults(tmp_path):
    raw = {"ARM_NAME": "MTML", "SN": "1", "GC_controller": {
        "gc_dynamic_params_pos": [0.0] * 40, "gc_dynamic_params_neg": [0.0] * 40,
        "safe_upper_torque_limit": [1] * 7, "safe_lower_torque_limit": [-1] * 7, "beta_vel_amplitude": [2] * 7}}
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(raw))
    params = load_gc(path)
    assert params.version == "1.0" and len(params.deadband) == 7


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
    assert load_gc(tmp_path / "gc.json").arm == "MTML"


def test_regressor_shapes():
    R = regressor(np.zeros((3, 7)))
    assert R.shape == (3, 7, 40) and np.all(R[:, 6] == 0)
