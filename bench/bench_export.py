"""Exported URDF / MJCF against the package's model: worst torque differences, free-fall match."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from dvrk_ident_ros.environment import find_share_directory


def run() -> bool:
    try:
        from dvrk_ident_ros.export import standard_parameters, to_mjcf, to_urdf, tree_from_file
        from dvrk_ident_ros.export.check import (
            exportable_parameters,
            mujoco_rollout,
            mujoco_torques,
            package_rollout,
            pinocchio_torques,
            rigid_parameters,
        )
    except ImportError as exc:
        print(f"  {exc}: install the test dependencies (pinocchio, mujoco)")
        return False
    from dvrk_ident_ros.model.arm_model import load_model

    ok = True
    config = find_share_directory() / "config" / "sim"
    for arm in ("mtm", "psm"):
        tree, result = tree_from_file(config / f"{arm}_true.json")
        model = load_model(arm)
        delta = standard_parameters(result, model)
        rng = np.random.default_rng(7)
        box = np.array([lim[:2] for lim in tree.limits])
        q = model.motor_from_dvrk(rng.uniform(box[:, 0], box[:, 1], (200, model.dof)))
        qd, qdd = rng.normal(0, 1.5, q.shape), rng.normal(0, 3, q.shape)
        urdf, mjcf = to_urdf(tree), to_mjcf(tree)
        rigid = model.regressor(q, qd, qdd) @ rigid_parameters(model, delta)
        full = model.regressor(q, qd, qdd) @ exportable_parameters(model, tree, delta)
        e_pin = np.max(np.abs(pinocchio_torques(urdf, model, q, qd, qdd) - rigid))
        e_mj = np.max(np.abs(mujoco_torques(mjcf, model, tree, q, qd, qdd) - full))
        print(f"  {arm.upper()}: worst |tau| difference over 200 random states (largest |tau| "
              f"{np.max(np.abs(full)):.2f}): pinocchio RNEA (URDF) {e_pin:.1e}, MuJoCo mj_inverse (MJCF) {e_mj:.1e}")
        q0 = model.motor_from_dvrk(box.mean(axis=1))
        ours = package_rollout(model, exportable_parameters(model, tree, delta), q0, 1.0, 0.01)
        as_exported, violation = mujoco_rollout(mjcf, model, tree, q0, 1.0, 0.01, frictionloss=False)
        fine, _ = mujoco_rollout(mjcf, model, tree, q0, 1.0, 0.01, frictionloss=False, integrator="rk4",
                                 timestep=1e-4)
        d1, d2 = np.max(np.abs(as_exported - ours)), np.max(np.abs(fine - ours))
        print(f"  {arm.upper()}: 1 s free fall from rest (joints travel up to {np.max(np.ptp(ours, axis=0)):.2f}): "
              f"worst joint difference {d1:.1e} as exported (implicitfast, 0.5 ms; equality violation "
              f"{np.max(violation):.1e}), {d2:.1e} with RK4 at 0.1 ms")
        coulomb = exportable_parameters(model, tree, delta)
        fc = model.layout.of_kind("Fc")
        coulomb[fc] = delta[fc]
        smooth = package_rollout(model, coulomb, q0, 1.0, 0.01)
        dry, _ = mujoco_rollout(mjcf, model, tree, q0, 1.0, 0.01)
        print(f"  {arm.upper()}: with Coulomb friction too (MuJoCo frictionloss, dry; the simulator's smooth "
              f"tanh law, 0.02 rad/s): worst joint difference {np.max(np.abs(dry - smooth)):.1e} "
              f"(joints travel up to {np.max(np.ptp(smooth, axis=0)):.2f})")
        ok &= e_pin < 1e-10 and e_mj < 1e-6 and d1 < 1e-2 and d2 < 1e-3
    return bool(ok) and _wpi_inertials()


WPI = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "wpi-identification"


def _wpi_inertials() -> bool:
    """The plausible inertials export writes for SDP fits of the WPI recordings: links on a bound."""
    from dvrk_ident_ros.data.loaders import load_dataset
    from dvrk_ident_ros.identify.pipeline import identify
    from dvrk_ident_ros.model.arm_model import load_model

    if not WPI.is_dir():
        print(f"  {WPI} absent: the WPI figures need ../shared")
        return True
    ok = True
    for arm in ("psm", "mtm"):
        result = identify(load_model(arm), [load_dataset(WPI / arm / "one_results.csv")])
        exact = {k: v["active_bounds"] for k, v in result.plausibility["links"].items() if v["active_bounds"]}
        relaxed = result.plausibility["relaxed"]
        active = {k: v["active_bounds"] for k, v in relaxed["links"].items() if v["active_bounds"]}
        masses = " ".join(f"{v['mass']:.3g}" for v in relaxed["links"].values())
        errors = " ".join(f"{100 * a:.1f}->{100 * b:.1f}" for a, b in zip(relaxed["fit_errors"], relaxed["errors"],
                                                                           strict=True))
        print(f"  WPI {arm.upper()}: exact stage on a bound: {exact or 'none'}")
        print(f"  WPI {arm.upper()}: exported (relaxed, residual +{100 * relaxed['residual_increase']:.2g} %, limit "
              f"{100 * relaxed['limit']:.2g} %): masses {masses} kg; on a bound: {active or 'none'}; "
              f"training error %: {errors}")
        ok &= not any(b for v in active.values() for b in v if not b.startswith("com"))
    return bool(ok)
