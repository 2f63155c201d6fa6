"""Issue 7 (part): real-time factor of the simulated arm's physics, and identification
on recordings of the simulator recovering the simulator's own parameters."""
from __future__ import annotations

import statistics
import time

import numpy as np

from dvrk_ident_ros.excitation.files import load_trajectory
from dvrk_ident_ros.identify.compare import relative_parameter_errors
from dvrk_ident_ros.identify.pipeline import identify
from dvrk_ident_ros.sim.arm import SimulatedArm
from dvrk_ident_ros.sim.config import load_sim_config
from dvrk_ident_ros.sim.physics import ArmPhysics
from dvrk_ident_ros.sim.run import simulate_tracking
from dvrk_ident_ros.sim.servo import PidServo


def run() -> bool:
    ok = True
    for arm, scale in (("MTML", 0.5), ("PSM1", 1.0)):  # a move of 0.3 rad (joint 3: 0.02) times scale per joint
        config = load_sim_config(arm)
        # two identical arms make the same moves by turns: one integrates in C, the other with ArmPhysics' NumPy step
        arms = {kind: SimulatedArm(config, config.spec.variant(arm), seed=1) for kind in ("C", "NumPy")}
        arms["NumPy"].physics._euler = None
        goal = config.home + np.where(np.arange(len(config.home)) == 2, 0.02, 0.3) * scale
        runs: dict[str, list[float]] = {"C": [], "NumPy": []}
        for k in range(5):  # PID + built-in compensation + hysteresis + physics, while moving
            for kind, sim in arms.items():
                sim.move_jp(goal if k % 2 == 0 else config.home)
                start = time.perf_counter()
                for _ in range(750):
                    sim.step()
                runs[kind].append((time.perf_counter() - start) / 750)
        gap = float(np.max(np.abs(arms["C"].q - arms["NumPy"].q)))
        step, baseline = statistics.median(runs["C"]), statistics.median(runs["NumPy"])
        rtf = 1.0 / (step * 1500)
        ok &= rtf >= 1.0
        print(f"  {config.spec.family} simulated arm at 1.5 kHz (servo, compiled model, semi-implicit Euler), moving: "
              f"{step * 1e6:.0f} us per step, real-time factor {rtf:.1f}; the same with the NumPy integration step: "
              f"{baseline * 1e6:.0f} us (medians of 5 runs of 750 steps each, alternated; at least 1, aim 5); the two "
              f"arms {gap:.1e} rad (m) apart after 3750 steps")
    for family in ("psm", "mtm"):
        ok &= _closed_loop(family)
    return bool(ok)


def _closed_loop(family: str) -> bool:
    """Identification on a simulated recording recovers the simulator's own parameters (config/sim)."""
    config = load_sim_config(family)
    model = config.model
    physics = ArmPhysics(model, config.delta, coulomb_velocity=config.coulomb_velocity)
    servo = PidServo(config.gains, model.dof)
    traj, meta = load_trajectory(config.spec.trajectory, arm=config.family)
    duration = int(meta.get("periods") or 3) * traj.period
    start = time.perf_counter()
    data = simulate_tracking(physics, servo, traj, duration, record_every=5, noise=config.noise,
                             rng=np.random.default_rng(3))
    sim_time = time.perf_counter() - start
    result = identify(model, [data], "sdp")
    base_truth = model.base.from_standard(config.delta)
    err = relative_parameter_errors(model.base_parameter_names, result.base, base_truth)
    print(f"  {family.upper()}: {duration:.1f} s of tracking ({traj.period:.1f} s periods) simulated in "
          f"{sim_time:.1f} s "
          "with the true parameters of config/sim, recorded at 300 Hz with the real recordings' quantisation and "
          f"effort noise; SDP {result.solver['status']}")
    print(f"  base parameters recovered: within 1 %: {int(np.sum(err < 0.01))}/{len(err)}, within 5 %: "
          f"{int(np.sum(err < 0.05))}, within 20 %: {int(np.sum(err < 0.2))}; "
          f"median error {100 * np.median(err):.2f} % (relative; near-zero values against their kind's largest)")
    print(f"    {'base parameter':<60} {'true':>11} {'identified':>11} {'error %':>8}")
    for i in np.argsort(err)[::-1]:
        print(f"    {model.base_parameter_names[i][:60]:<60} {base_truth[i]:11.4g} {result.base[i]:11.4g} "
              f"{100 * err[i]:8.1f}")
    fit = " ".join(f"{100 * e:.1f}" for e in result.errors["training"])
    print(f"  torque fit on the simulated recording (%): {fit}")
    return result.solver["status"] == "optimal"
