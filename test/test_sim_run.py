"""An offline run of the simulated arm: a servo tracks a trajectory and the recording
identifies back to torques that fit."""
from __future__ import annotations

import numpy as np
import pytest

from dvrk_ident_ros.excitation.fourier import rest_to_rest
from dvrk_ident_ros.identify.synthetic import plausible_parameters
from dvrk_ident_ros.model.arm_model import load_model
from dvrk_ident_ros.sim.physics import ArmPhysics
from dvrk_ident_ros.sim.run import simulate_tracking
from dvrk_ident_ros.sim.servo import PidGains, PidServo

pytestmark = pytest.mark.slow


def test_tracking_run_records_motor_space_data():
    model = load_model("psm")
    physics = ArmPhysics(model, plausible_parameters(model, np.random.default_rng(0)))
    servo = PidServo(PidGains(np.array([300, 300, 3000, 10, 10, 10, 10.0]),
                              np.array([15, 15, 150, 0.2, 0.2, 0.2, 0.2]), np.zeros(7), np.full(7, 100.0)), 7)
    rng = np.random.default_rng(1)
    traj = rest_to_rest(0.5, np.array([0, 0, 0.15, 0, 0, 0, 0.4]), rng.normal(0, 0.05, (3, 7)),
                        rng.normal(0, 0.05, (3, 7)))
    data = simulate_tracking(physics, servo, traj, 2.0, record_every=5)
    assert data.samples == 600 and abs(data.rate - 300.0) < 1e-6
    q_ref, _, _ = traj.evaluate(data.t)
    assert np.max(np.abs(data.q - q_ref)) < 0.05  # a P-D servo: it follows within 3 degrees
    assert np.all(np.isfinite(data.tau))
