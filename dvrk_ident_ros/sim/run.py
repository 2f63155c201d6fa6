"""Offline runs of the simulated arm (no ROS): a servo tracking a trajectory, recorded
like the dVRK publishes it (positions quantised, the servo's effort plus noise),
in motor coordinates as the identification expects."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dvrk_ident_ros.data.dataset import Dataset
from dvrk_ident_ros.excitation.fourier import FourierTrajectory
from dvrk_ident_ros.sim.noise import NoiseLevels, noisy_effort, quantize
from dvrk_ident_ros.sim.physics import ArmPhysics, ArmState
from dvrk_ident_ros.sim.servo import PidServo


def simulate_tracking(physics: ArmPhysics, servo: PidServo, trajectory: FourierTrajectory, duration: float, *,
                      physics_rate: float = 1500.0, record_every: int = 5, noise: NoiseLevels | None = None,
                      rng: np.random.Generator | None = None,
                      feedforward: Callable[[np.ndarray], np.ndarray] | None = None) -> Dataset:
    """Track ``trajectory`` (motor coordinates) with the servo (dVRK joint space) for ``duration`` s; with
    ``feedforward`` (dVRK positions -> efforts: the console's own gravity compensation) added to the PID's."""
    model = physics.model
    rng = rng or np.random.default_rng()
    dt = 1.0 / physics_rate
    steps = round(duration * physics_rate)
    t_all = np.arange(steps + 1) * dt
    q_ref, qd_ref, _ = trajectory.evaluate(t_all)
    q_ref_d, qd_ref_d = model.dvrk_from_motor(q_ref), model.dvrk_from_motor(qd_ref)
    state = ArmState(q_ref[0].copy(), qd_ref[0].copy())
    servo.reset()
    t_rec, q_rec, qd_rec, tau_rec = [], [], [], []
    for k in range(steps):
        q_d, qd_d = model.dvrk_from_motor(state.q), model.dvrk_from_motor(state.qd)
        effort_d = servo.command(q_d, qd_d, q_ref_d[k], qd_ref_d[k], dt,
                                 None if feedforward is None else feedforward(q_d))
        if k % record_every == 0:
            t_rec.append(state.t)
            q_rec.append(q_d)
            qd_rec.append(qd_d)
            tau_rec.append(effort_d.copy())
        state = physics.step_euler(state, model.motor_torque_from_dvrk(effort_d), dt)
    q_out, qd_out, tau_out = np.array(q_rec), np.array(qd_rec), np.array(tau_rec)
    if noise is not None:
        q_out = quantize(q_out, noise.resolution)
        tau_out = noisy_effort(tau_out, noise.effort_std, rng)
    return Dataset(t=np.array(t_rec), q=model.motor_from_dvrk(q_out), qd=model.motor_from_dvrk(qd_out),
                   tau=model.motor_torque_from_dvrk(tau_out), source="simulated arm")
