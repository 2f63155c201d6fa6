"""The drift test of Lin 2019 section VI-B on the simulated arms, shortened: pose-grid collection as the
player plays it, and the compensation alone holding the arm. The MTM's MLSE drift against the exact-torque
floor is bench/bench_drift.py's (>= 100 poses; a shortened test of it took 85 s, over the suite's budget)."""
from __future__ import annotations

import numpy as np
import pytest

from dvrk_ident_ros.excitation.playback import GridPlayback
from dvrk_ident_ros.sim.arm import SimulatedArm
from dvrk_ident_ros.sim.config import load_sim_config
from dvrk_ident_ros.sim.experiments import (
    collect_pose_grid,
    collection_time,
    drift_test,
    random_poses,
)


class Zero:
    def observe(self, q):
        pass

    def compute(self, q, qd, scale=1.0):
        return np.zeros(len(q))


def _small_grid() -> dict:
    """Joint 6 swept up and down at two wrist-pitch values, 7 poses each way."""
    q = np.zeros((7, 7))
    q[:, 5] = np.radians(np.linspace(-30, 30, 7))
    sweeps = []
    for aux in (0.0, 0.5):
        p = q.copy()
        p[:, 4] = aux
        sweeps += [{"estimated_joint": 6, "auxiliary_joint": 5, "auxiliary_value": aux, "direction": "positive",
                    "poses": p.tolist()},
                   {"estimated_joint": 6, "auxiliary_joint": 5, "auxiliary_value": aux, "direction": "negative",
                    "poses": p[::-1].tolist()}]
    return {"arm": "MTML", "settle_time": 0.5, "samples_per_pose": 10, "sweeps": sweeps}


@pytest.mark.slow
def test_collection_leaves_out_each_sweeps_first_pose_and_takes_the_time_estimated():
    arm = SimulatedArm(load_sim_config("mtm"), "MTML", seed=1)
    playback = GridPlayback(_small_grid(), arm.checker)
    t0 = arm.time
    data = collect_pose_grid(arm, playback, trim=(1, 0))
    played = arm.time - t0
    assert len(data.q) == 4 * 6
    for k in range(4):  # the kept poses of each sweep are its 2nd to 7th
        poses = np.array(_small_grid()["sweeps"][k]["poses"])
        assert np.allclose(data.q[data.sweep == k][:, 5], poses[1:, 5], atol=0.02)
    estimate = collection_time(arm, playback)
    print(f"28 poses played in {played:.1f} s simulated, estimated {estimate:.1f} s")
    assert abs(estimate - played) < 0.15 * played
    first_pair = {**_small_grid(), "sweeps": _small_grid()["sweeps"][:2]}  # the up and down sweeps of one value
    full = collect_pose_grid(SimulatedArm(load_sim_config("mtm"), "MTML", seed=1),
                             GridPlayback(first_pair, arm.checker), trim=(0, 0))
    # the first pose of a negative sweep is where the positive sweep ended: the joint's hysteresis is in the
    # positive state, so its holding torque is the positive sweep's last one, not the negative sweep's
    first_neg, last_pos = full.tau[full.sweep == 1][0, 5], full.tau[full.sweep == 0][-1, 5]
    second_neg = full.tau[full.sweep == 1][1, 5]
    print(f"joint 6 holding torque: end of positive sweep {last_pos:.4f}, first negative {first_neg:.4f}, "
          f"second negative {second_neg:.4f} N m")
    assert abs(first_neg - last_pos) < 0.5 * abs(second_neg - last_pos)
    # the direction state over the recorded motion says so (gc/model/travel.py): the fit weighs that pose by it
    branch = full.branch[full.sweep == 1]
    print(f"joint 6 direction state: first negative pose {branch[0]:+.2f}, second {branch[1]:+.2f}")
    assert branch[0] > 0.5 and branch[1] < -0.9
    assert np.allclose(full.with_travel(0.02).branch, full.branch)


@pytest.mark.slow
def test_the_psm_model_compensation_holds_the_simulated_psm():
    """The true model's compensation (gravity, springs, counterweight) holds the simulated PSM; without it the
    arm moves (bench/bench_drift.py: the identified model's)."""
    from dvrk_ident_ros.gc.runtime.model_law import ModelCompensation

    config = load_sim_config("psm")
    arm = SimulatedArm(config, "PSM1", seed=1)
    law = ModelCompensation(config.model, config.delta, np.array(config.spec.compensation_torque_limit))
    goals = random_poses(arm, 2, np.random.default_rng(4), fraction=0.8)
    held = drift_test(arm, law, goals, settle=0.5)
    fallen = drift_test(arm, Zero(), goals[:1], hold_time=0.5, settle=0.5)
    print(f"true model: {held.summary()}; no compensation: {fallen.summary()}")
    assert held.position_mm.max() < 0.5 and held.rotation_deg.max() < 0.5
    assert fallen.position_mm.mean() > 5.0


@pytest.mark.slow
@pytest.mark.parametrize("where", ["hold", "approach"])
def test_a_pose_where_the_arm_faults_is_counted_and_the_test_goes_on(where):
    """The second of three poses faults the arm: its compensation pushes the insertion down hard (the position hold
    after the drift then trips the PID's tracking check: the pose's drift counts, the fault is that pose's), or a
    fault comes while the arm approaches it (the pose is not held: NaN, left out of the statistics). The arm is
    enabled and homed again, as a person at the console does, and the other poses are held as before."""
    from dvrk_ident_ros.gc.runtime.model_law import ModelCompensation

    config = load_sim_config("psm")
    arm = SimulatedArm(config, "PSM1", seed=1)
    law = ModelCompensation(config.model, config.delta, np.array(config.spec.compensation_torque_limit))

    class FaultOnSecondPose:
        pose = 0  # the pose being approached or held, from 1 (until a fault)
        holding = injected = False

        def observe(self, q):
            if self.holding or self.pose == 0:
                self.pose, self.holding = self.pose + 1, False
            if where == "approach" and self.pose == 2 and not self.injected:
                self.injected = True
                arm.inject_fault("injected by the test")
            law.observe(q)

        def compute(self, q, qd, scale):
            self.holding = True
            tau = np.array(law.compute(q, qd, scale), dtype=float)
            if where == "hold" and self.pose == 2:
                tau[2] -= 10.0  # N on the insertion: the arm falls fast
            return tau

    goals = random_poses(arm, 3, np.random.default_rng(4), fraction=0.8)
    result = drift_test(arm, FaultOnSecondPose(), goals, hold_time=0.3)
    print(result.summary(), result.position_mm)
    assert result.faults == (1,) and arm.ready and len(result.position_mm) == 3
    assert result.position_mm[[0, 2]].max() < 0.5  # held before the fault and after the arm was homed again
    if where == "hold":
        assert result.position_mm[1] > 100.0 and "(0 not held)" in result.summary()
    else:
        assert np.isnan(result.position_mm[1]) and "the arm faulted at 1 of them (1 not held)" in result.summary()
