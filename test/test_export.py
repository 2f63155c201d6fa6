"""Exported URDF / MJCF against the package's own model (dvrk_ident_ros/export; README "Export")."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import REPO_ROOT

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.export import build_tree, standard_parameters, to_mjcf, to_urdf, tree_from_file
from dvrk_ident_ros.identify.results import IdentificationResult
from dvrk_ident_ros.model.arm_model import load_model

pinocchio = pytest.importorskip("pinocchio")
mujoco = pytest.importorskip("mujoco")

from dvrk_ident_ros.export.check import (  # noqa: E402
    exportable_parameters,
    mujoco_rollout,
    mujoco_torques,
    package_rollout,
    pinocchio_torques,
    rigid_parameters,
)

ARMS = ("mtm", "psm")


def _arm(arm: str):
    path = REPO_ROOT / "config" / "sim" / f"{arm}_true.json"
    tree, result = tree_from_file(path)
    model = load_model(arm)
    return tree, model, standard_parameters(result, model)


def _states(model, tree, seed: int, n: int = 40):
    rng = np.random.default_rng(seed)
    box = np.array([lim[:2] for lim in tree.limits])
    q = model.motor_from_dvrk(rng.uniform(box[:, 0], box[:, 1], (n, model.dof)))
    return q, rng.normal(0, 1.5, q.shape), rng.normal(0, 3, q.shape)


@pytest.mark.parametrize("arm", ARMS)
def test_pinocchio_rnea_on_the_urdf_is_the_model(arm):
    tree, model, delta = _arm(arm)
    q, qd, qdd = _states(model, tree, 1)
    ours = model.regressor(q, qd, qdd) @ rigid_parameters(model, delta)
    theirs = pinocchio_torques(to_urdf(tree), model, q, qd, qdd)
    assert np.max(np.abs(theirs - ours)) < 1e-12 * max(1.0, np.max(np.abs(ours)))


@pytest.mark.parametrize("arm", ARMS)
def test_mujoco_inverse_on_the_mjcf_is_the_model(arm):
    """Viscous friction, motor inertia (armature, tendon armature) and linear springs included; the
    1e-9 kg MuJoCo needs on the PSM's inertia-less wrist links is the only difference (PSM: 5e-8 N)."""
    tree, model, delta = _arm(arm)
    q, qd, qdd = _states(model, tree, 2)
    ours = model.regressor(q, qd, qdd) @ exportable_parameters(model, tree, delta)
    theirs = mujoco_torques(to_mjcf(tree), model, tree, q, qd, qdd)
    assert np.max(np.abs(theirs - ours)) < 1e-6


@pytest.mark.parametrize("arm", ARMS)
def test_mujoco_falls_like_the_package_simulator(arm):
    """From rest mid-range, no control, 1 s: friction limited to the viscous part on both sides (MuJoCo's
    frictionloss is dry friction, the simulator's a smooth law), joint stops off (the simulator has none),
    the cable polynomial held by the simulator's motors (the MJCF cannot hold it). Measured: MTM 2.7e-3 rad,
    PSM 8.7e-4 rad as exported (implicitfast, 0.5 ms); 1.4e-5, 1.4e-4 with RK4 at 0.1 ms."""
    tree, model, delta = _arm(arm)
    box = np.array([lim[:2] for lim in tree.limits])
    q0 = model.motor_from_dvrk(box.mean(axis=1))
    ours = package_rollout(model, exportable_parameters(model, tree, delta), q0, 1.0, 0.01)
    assert np.max(np.ptp(ours, axis=0)) > 0.3  # it does fall
    mjcf = to_mjcf(tree)
    theirs, violation = mujoco_rollout(mjcf, model, tree, q0, 1.0, 0.01, frictionloss=False)
    assert np.max(np.abs(theirs - ours)) < 1e-2 and np.max(violation) < 1e-4
    fine, _ = mujoco_rollout(mjcf, model, tree, q0, 1.0, 0.01, frictionloss=False, integrator="rk4",
                             timestep=1e-4)
    assert np.max(np.abs(fine - ours)) < 1e-3


@pytest.mark.parametrize("arm", ARMS)
def test_files_load_without_warnings(arm, tmp_path, capfd):
    tree, model, _ = _arm(arm)
    urdf = to_urdf(tree)
    pin_model = pinocchio.buildModelFromXML(urdf, mimic=True)
    assert pin_model.nq == model.dof  # the mimic joints follow the dVRK joints
    assert all(pin_model.existJointName(name) for name in model.description.dvrk_joint_names)
    m = mujoco.MjModel.from_xml_string(to_mjcf(tree))
    data = mujoco.MjData(m)
    mujoco.mj_step(m, data, nstep=100)
    out, err = capfd.readouterr()
    assert "WARNING" not in out + err and not any(w.number for w in data.warning)


def test_inconsistent_or_base_only_parameters_are_refused(tmp_path):
    _, model, delta = _arm("mtm")
    bad = delta.copy()
    bad[model.layout.index("m4")] = -0.1
    with pytest.raises(DataError, match=r"not physically consistent.*link 4"):
        build_tree(model, bad)
    result = IdentificationResult.load(REPO_ROOT / "config" / "sim" / "mtm_true.json")
    result.standard, result.method = None, "wls"
    with pytest.raises(DataError, match="base parameters only"):
        standard_parameters(result, model)


def test_urdf_mimics_and_mjcf_equalities_follow_the_couplings():
    tree, _, _ = _arm("mtm")
    urdf, mjcf = to_urdf(tree), to_mjcf(tree)
    assert '<mimic joint="elbow_pitch" multiplier="-1.0"' in urdf  # the parallelogram's bottom link
    assert 'joint1="elbow_pitch_3p" joint2="elbow_pitch" polycoef="0.0 1.0 0.0 0.0 0.0"' in mjcf
    assert 'name="tendon_M4"' in mjcf  # motor 4 = wrist platform + 0.6697 elbow pitch


@pytest.fixture(scope="module")
def wpi_fits(tmp_path_factory) -> dict:
    """The SDP fits of the shared WPI recordings, once per module: arm -> parameter file."""
    from conftest import SHARED

    from dvrk_ident_ros.data.loaders import load_dataset
    from dvrk_ident_ros.identify.pipeline import identify

    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent: the real dVRK recordings ship separately from the package")
    out = tmp_path_factory.mktemp("wpi")
    fits = {}
    for arm in ARMS:
        data = load_dataset(SHARED / "data" / "wpi-identification" / arm / "one_results.csv")
        fits[arm] = identify(load_model(arm), [data]).save(out / f"{arm}.json")
    return fits


@pytest.mark.parametrize("arm", ARMS)
def test_wpi_fits_export_and_load_without_warnings(arm, wpi_fits, tmp_path, capfd):
    from dvrk_ident_ros.app.cli import main

    params = wpi_fits[arm]
    for kind, suffix in (("urdf", "urdf"), ("mjcf", "xml")):
        assert main(["export", kind, "--params", str(params), "--out", str(tmp_path / f"{arm}.{suffix}")]) == 0
    capfd.readouterr()
    pin_model = pinocchio.buildModelFromUrdf(str(tmp_path / f"{arm}.urdf"), mimic=True)
    m = mujoco.MjModel.from_xml_path(str(tmp_path / f"{arm}.xml"))
    data = mujoco.MjData(m)
    mujoco.mj_step(m, data, nstep=2000)  # 1 s, joint limits on
    out, err = capfd.readouterr()
    assert pin_model.nq == 7 and "WARNING" not in out + err and not any(w.number for w in data.warning)


@pytest.mark.parametrize("arm", ARMS)
def test_wpi_fits_export_no_link_mass_or_inertia_on_a_bound(arm, wpi_fits):
    """The exact stage inherits the bounds the fitted base parameters force (PSM links at 5 kg, singular
    pseudo-inertias); the relaxed one (within the fit's 95 % region), which export writes, has none. The
    MTM's centre-of-mass boxes are not masses or inertias: links 3 and 3'' keep a y coordinate on them
    (reported by the export)."""
    from dvrk_ident_ros.export import relaxed_entry

    result = IdentificationResult.load(wpi_fits[arm])
    exact = result.plausibility["links"]
    assert any(v["active_bounds"] for v in exact.values())  # what the relaxed stage is for
    relaxed = relaxed_entry(result)
    assert relaxed and relaxed["residual_increase"] <= relaxed["limit"] * (1 + 1e-4)
    on_bounds = {k: [b for b in v["active_bounds"] if not b.startswith("com")] for k, v in relaxed["links"].items()}
    assert not any(on_bounds.values()), on_bounds
    model = load_model(arm)
    exported = standard_parameters(result, model)
    assert np.allclose(exported, [relaxed["standard"][n] for n in model.parameter_names])
    assert not np.allclose(exported, standard_parameters(result, model, inertials="exact"))
