"""Issue 7 (part): real-time factor of the simulated arm's physics, and identification
on recordings of the simulator recovering the simulator's own parameters."""
from __future__ import annotations

import statistics
import time

import numpy as np

from dvrk_ident_ros.excitation.files import load_trajectory
from dvrk_ident_ros.identify.pipeline import identify
from dvrk_ident_ros.identify.synthetic import plausible_parameters
from dvrk_ident_ros.model.arm_model import load_model
from dvrk_ident_ros.model.description import config_directory
from dvrk_ident_ros.sim.noise import NoiseLevels
from dvrk_ident_ros.sim.physics import ArmPhysics, ArmState
from dvrk_ident_ros.sim.run import simulate_tracking
from dvrk_ident_ros.sim.servo import PidGains, PidServo

GAINS = {
    "psm": (np.array([300, 300, 3000, 10, 10, 10, 10.0]), np.array([15, 15, 150, 0.2, 0.2, 0.2, 0.2])),
    "mtm": (np.array([100, 150, 150, 20, 10, 6, 2.0]), np.array([10, 15, 15, 2, 1, 0.6, 0.2])),
}
NOISE = {  # estimated from the real recordings (sim.noise.estimate_levels)
    "psm": NoiseLevels(np.array([7.7e-6, 7.7e-6, 1.3e-6, 2.1e-4, 1.3e-4, 6.7e-5, 6.7e-5]),
                       np.array([0.011, 0.0091, 0.0666, 0.0006, 0.0006, 0.0008, 0.0008])),
}


def run() -> bool:
    ok = True
    for arm in ("mtm", "psm"):
        model = load_model(arm)
        physics = ArmPhysics(model, plausible_parameters(model, np.random.default_rng(1)))
        state = ArmState(np.full(7, 0.1) + np.array([0, 0, 0.1, 0, 0, 0, 0.3]), np.zeros(7))
        runs = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(750):
                state = physics.step_euler(state, physics.bias(state.q, np.zeros(7)), 1 / 1500)
            runs.append((time.perf_counter() - start) / 750)
        step = statistics.median(runs)
        rtf = 1.0 / (step * 1500)
        ok &= rtf >= 1.0
        print(f"  {arm.upper()} physics at 1.5 kHz (compiled model, semi-implicit Euler): {step * 1e6:.0f} us per step,"
              f" real-time factor {rtf:.1f} (median of 5; at least 1, aim 5)")
    model = load_model("psm")
    truth = plausible_parameters(model, np.random.default_rng(2))
    physics = ArmPhysics(model, truth)
    kp, kd = GAINS["psm"]
    servo = PidServo(PidGains(kp, kd, np.zeros(7), np.full(7, 100.0)), 7)
    traj, _ = load_trajectory(config_directory() / "trajectories" / "psm_fourier.yaml", arm="psm")
    start = time.perf_counter()
    data = simulate_tracking(physics, servo, traj, 3 * traj.period, record_every=5, noise=NOISE["psm"],
                             rng=np.random.default_rng(3))
    sim_time = time.perf_counter() - start
    result = identify(model, [data], "sdp")
    base_truth = model.base.from_standard(truth)
    scale = np.maximum(np.abs(base_truth), 1e-3 * np.abs(base_truth).max())
    err = np.abs(result.base - base_truth) / scale
    print(f"  PSM: {3 * traj.period:.1f} s of tracking simulated in {sim_time:.1f} s, recorded at 300 Hz with the "
          "real recordings' quantisation and effort noise; SDP " + result.solver["status"])
    print(f"  base parameters recovered: within 1 %: {int(np.sum(err < 0.01))}/{len(err)}, within 5 %: "
          f"{int(np.sum(err < 0.05))}, within 20 %: {int(np.sum(err < 0.2))}; "
          f"median error {100 * np.median(err):.2f} %")
    worst = np.argsort(err)[-3:][::-1]
    for i in worst:
        print(f"    worst: {model.base_parameter_names[i][:70]:<70} {100 * err[i]:7.1f} %")
    fit = " ".join(f"{100 * e:.1f}" for e in result.errors["training"])
    print(f"  torque fit on the simulated recording (%): {fit}")
    return bool(ok)
