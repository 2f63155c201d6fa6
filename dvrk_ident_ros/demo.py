"""``dvrk-ident demo``: the main job, as far as the package has grown.

1. The dynamic models of the MTM and PSM: generated (or loaded from cache),
   base parameters, the regressor checked against the independent Lagrangian.
2. Identification: a PSM recording simulated by the model along the shipped
   excitation trajectory (torque noise at the level of the real recordings),
   the physically consistent SDP, errors on a second simulated recording.
3. Gravity compensation: torques at the poses of the shipped MTML grid from the
   MTM model's gravity plus cable-like polynomial disturbances, MLSE, a gc file,
   the compensation law's speed.

The ROS 2 nodes (simulated arm, player, recorder, /identify, gravity
compensation) are added to this demo as they land.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from dvrk_ident_ros.model.arm_model import load_model
from dvrk_ident_ros.model.physical import random_physical_parameters
from dvrk_ident_ros.model.reference import LagrangianReference

REAL_NOISE = {"psm": np.array([0.011, 0.0091, 0.0666, 0.0006, 0.0006, 0.0008, 0.0008])}  # N m (N), above 20 Hz


def _model_stage(arm: str, rng: np.random.Generator) -> None:
    model = load_model(arm)
    source = "cache" if model.build.cache_used else "generated"
    print(f"[{arm.upper()}] model {source} in {model.build.seconds:.2f} s: "
          f"{len(model.parameter_names)} standard -> {model.base.count} base parameters")
    combined = [t for t in model.base_parameter_names if " + " in t or " - " in t]
    for text in combined[:2]:
        print(f"      e.g. {text[:100]}{'...' if len(text) > 100 else ''}")
    ref = LagrangianReference(model.description)
    delta = random_physical_parameters(model.layout, rng)
    worst = 0.0
    for _ in range(3):
        q, qd, qdd = rng.uniform(-1, 1, model.dof), rng.normal(0, 1, model.dof), rng.normal(0, 2, model.dof)
        ours = model.torques(q, qd, qdd, delta)[0] - model.known_torques(q)[0]
        theirs = ref.torques(q, qd, qdd, delta)
        worst = max(worst, float(np.linalg.norm(ours - theirs) / np.linalg.norm(theirs)))
    q = rng.uniform(-1, 1, (6000, model.dof))
    model.regressor(q, q, q)  # warm-up: the first call pays for page faults
    start = time.perf_counter()
    model.regressor(q, q, q)
    elapsed = time.perf_counter() - start
    print(f"      regressor vs independent Lagrangian: worst relative error {worst:.1e}; "
          f"6000 samples in {elapsed * 1e3:.1f} ms")


def _identification_stage(out: Path, rng: np.random.Generator) -> None:
    from dvrk_ident_ros.excitation.files import load_trajectory
    from dvrk_ident_ros.identify.pipeline import filtered_torques, identify, predict
    from dvrk_ident_ros.identify.problem import relative_errors
    from dvrk_ident_ros.identify.report import plot_torques, write_text_report
    from dvrk_ident_ros.identify.synthetic import plausible_parameters, synthetic_recording
    from dvrk_ident_ros.model.description import config_directory

    model = load_model("psm")
    traj, meta = load_trajectory(config_directory() / "trajectories" / "psm_fourier.yaml", arm="psm")
    truth = plausible_parameters(model, rng)
    duration = meta.get("periods", 3) * traj.period
    train, _ = synthetic_recording(model, truth, traj, duration=duration, noise=REAL_NOISE["psm"], rng=rng)
    test, _ = synthetic_recording(model, truth, traj, duration=duration, noise=REAL_NOISE["psm"], rng=rng)
    start = time.perf_counter()
    result = identify(model, [train], "sdp")
    elapsed = time.perf_counter() - start
    params = result.save(out / "psm_params.json")
    write_text_report(result, out / "psm_params_report.txt")
    tau, pred = filtered_torques(result, test), predict(result, test, model)
    plot_torques(test.t, tau, pred, out / "psm_params_torques.png", "simulated PSM: second recording")
    errors = relative_errors(tau[200:-200], pred[200:-200])
    base_truth = model.base.from_standard(truth)
    scale = np.maximum(np.abs(base_truth), 1e-3 * np.abs(base_truth).max())
    within = int(np.sum(np.abs(result.base - base_truth) / scale < 0.05))
    print(f"[PSM] identification (SDP) on a {duration:.0f} s simulated recording in {elapsed:.2f} s, solver "
          f"{result.solver['status']}, smallest pseudo-inertia eigenvalue "
          f"{result.solver['min_pseudo_inertia_eigenvalue']:.1e}")
    print("      relative error on a second recording (%): " + " ".join(f"{100 * e:.1f}" for e in errors))
    print(f"      base parameters within 5 % of the truth: {within}/{len(base_truth)}; written {params}")


def _gc_stage(out: Path, rng: np.random.Generator) -> None:
    from dvrk_ident_ros.excitation.files import load_grid
    from dvrk_ident_ros.gc.data import PoseData
    from dvrk_ident_ros.gc.derivation import gc_gravity_from_standard
    from dvrk_ident_ros.gc.law import CompensationLaw
    from dvrk_ident_ros.gc.mlse import fit_mlse, relative_errors
    from dvrk_ident_ros.gc.params import GcParameters
    from dvrk_ident_ros.gc.regressor import torques
    from dvrk_ident_ros.identify.synthetic import plausible_parameters
    from dvrk_ident_ros.model.description import config_directory

    model = load_model("mtm")
    delta = plausible_parameters(model, rng)
    gravity, _ = gc_gravity_from_standard(model, delta)
    grid = load_grid(config_directory() / "grids" / "mtml_gc_grid.yaml", arm="MTML")
    theta_pos = np.concatenate([gravity, rng.normal(0, 0.01, 30)])
    theta_neg = theta_pos.copy()
    theta_neg[10:] += rng.normal(0, 0.005, 30)
    q, joint, direction, aux, sweep = [], [], [], [], []
    for k, s in enumerate(grid["sweeps"]):
        poses = np.asarray(s["poses"])
        q.append(poses)
        joint += [s["estimated_joint"]] * len(poses)
        direction += [1 if s["direction"] == "positive" else -1] * len(poses)
        aux += [s["auxiliary_value"] or 0.0] * len(poses)
        sweep += [k] * len(poses)
    q = np.vstack(q)
    d = np.array(direction)
    tau = np.where(d[:, None] > 0, torques(q, theta_pos), torques(q, theta_neg)) + rng.normal(0, 0.002, (len(q), 7))
    data = PoseData(q, tau, np.array(joint), d, np.array(aux), np.array(sweep), "simulated MTML grid")
    fit = fit_mlse(data)
    errors = relative_errors(fit, data)
    params = GcParameters("MTML", "demo", fit.theta(+1), fit.theta(-1), np.append(tau[:, :6].max(0), 0),
                          np.append(tau[:, :6].min(0), 0))
    path = params.save(out / "gc-MTML-demo.json")
    law = CompensationLaw(params)
    start = time.perf_counter()
    for _ in range(20000):
        law.compute(q[0], [0.0] * 7)
    per_call = (time.perf_counter() - start) / 20000 * 1e6
    print(f"[MTML] MLSE on {len(q)} poses of the shipped grid ({len(grid['sweeps'])} sweeps): relative error (%) "
          + " ".join(f"{100 * errors[(i, 'both')]:.1f}" for i in range(1, 7)))
    print(f"      gravity parameters recovered to {np.max(np.abs(fit.gravity - gravity)):.1e}; gc file {path}; "
          f"compensation law {per_call:.1f} us per call")


def run_demo(args: argparse.Namespace) -> int:
    rng = np.random.default_rng(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    print("dvrk_ident demo")
    for arm in ("mtm", "psm"):
        _model_stage(arm, rng)
    _identification_stage(out, rng)
    _gc_stage(out, rng)
    print(f"done in {time.perf_counter() - start:.0f} s; outputs in {out}/")
    return 0


def add_demo_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the main job on simulated arms and print a summary")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", default="demo-output", help="directory for the parameter files, report and plots")
    p.set_defaults(handler=run_demo)
