"""The simulated arm's Cartesian side (dvrk_ident_ros/sim/cartesian.py; the node's topics: nodes/sim_cartesian.py):
its Jacobians against the geometric Jacobian built from the frames' axes (an independent construction), its
twist against the tip's motion, its wrenches against the efforts they stand for, and the node's topics against
the arm's joint states."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dvrk_ident_ros.model.arm_model import load_model
from dvrk_ident_ros.sim.cartesian import ArmCartesian


def _geometric_jacobian(model, q: np.ndarray) -> np.ndarray:
    """The tip point's velocity and omega per joint, in the base frame, from each joint frame's z axis and origin
    (the classic construction; the ECM Classic's joints drive one frame each, frames 1-4)."""
    T = model.forward_kinematics(model.motor_from_dvrk(q[None]))[0]
    tip = T[-1, :3, 3]
    columns = []
    for frame, prismatic in zip(T, (False, False, True, False), strict=True):
        z, origin = frame[:3, 2], frame[:3, 3]
        linear, angular = (z, np.zeros(3)) if prismatic else (np.cross(z, tip - origin), z)
        columns.append(np.concatenate([linear, angular]))
    return np.array(columns).T


def test_the_jacobians_are_the_geometric_jacobian_in_their_frames():
    model = load_model("ecm_classic")
    arm = ArmCartesian(model, 4)
    rng = np.random.default_rng(5)
    for _ in range(5):
        q = np.array([rng.uniform(-1.4, 1.4), rng.uniform(-0.7, 1.0), rng.uniform(0.01, 0.24),
                      rng.uniform(-1.4, 1.4)])
        state = arm.state(q)
        R, p = state.pose[:3, :3], state.pose[:3, 3]
        geometric = _geometric_jacobian(model, q)
        tip = np.vstack([R @ state.body_jacobian[:3], R @ state.body_jacobian[3:]])
        assert tip == pytest.approx(geometric, abs=1e-7)
        # spatial: the velocity of the point at the base origin (p_dot + p x omega) and omega
        spatial = np.vstack([geometric[:3] + np.cross(p, geometric[3:].T).T, geometric[3:]])
        assert state.spatial_jacobian == pytest.approx(spatial, abs=1e-7)


def test_the_twist_is_the_tip_s_motion_and_a_wrench_its_efforts():
    """measured_cv: the tip point's velocity (the position's derivative along a motion) and omega; a body or
    spatial wrench from J^T w comes back from the efforts (the PSM's 6 kinematic joints: J square), and its
    power equals the joints' (w . twist = tau . qd)."""
    model = load_model("psm")
    arm = ArmCartesian(model, 6, jaw=6)
    q = np.array([0.3, -0.2, 0.12, 0.4, 0.2, -0.3])
    qd = np.array([0.2, -0.1, 0.02, 0.5, -0.4, 0.3])
    state = arm.state(q)
    dt = 1e-6
    ahead, behind = arm.poses(np.array([q + qd * dt, q - qd * dt]))
    twist = state.twist(qd)
    assert twist[:3] == pytest.approx((ahead[:3, 3] - behind[:3, 3]) / (2 * dt), abs=1e-6)
    assert arm.poses(q[None])[0] == pytest.approx(arm.poses(np.append(q, 0.8)[None])[0])  # the jaw held closed
    wrench = np.array([1.0, -2.0, 0.5, 0.05, 0.02, -0.01])
    assert state.body_wrench(state.body_effort(wrench)) == pytest.approx(wrench, abs=1e-9)
    assert state.spatial_wrench(state.spatial_effort(wrench)) == pytest.approx(wrench, abs=1e-9)
    tau = state.body_effort(wrench)
    assert float(wrench @ (state.body_jacobian @ qd)) == pytest.approx(float(tau @ qd), rel=1e-12)


@pytest.mark.ros
def test_the_simulated_psm_publishes_its_cartesian_side(ros_env, rclpy_context, nodes_env, tmp_path: Path):
    """measured_cp, body/jacobian and body/measured_cf of a ready simulated PSM1 agree with the Cartesian core
    at its measured_js; spatial/servo_cf puts it in effort mode with J_s^T w (its setpoint_js efforts)."""
    from geometry_msgs.msg import PoseStamped, WrenchStamped
    from helpers.ros_probe import Probe
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from dvrk_ident_ros.app.launcher import NodeProcess

    probe = Probe(rclpy_context, "cartesian_probe")
    poses = probe.collect(PoseStamped, "/PSM1/measured_cp")
    jacobians = probe.collect(Float64MultiArray, "/PSM1/body/jacobian")
    wrenches = probe.collect(WrenchStamped, "/PSM1/body/measured_cf")
    states = probe.collect(JointState, "/PSM1/measured_js")
    setpoints = probe.collect(JointState, "/PSM1/setpoint_js")
    try:
        with NodeProcess("simulated_arm", {"arm": "PSM1", "initial_state": "HOMED", "noise": False},
                         log_dir=tmp_path / "logs", env=nodes_env, name="sim") as sim:
            assert probe.spin_until(lambda: min(len(poses), len(jacobians), len(wrenches), len(states)) > 5, 30.0,
                                    sim.process), sim.tail(20)
            arm = ArmCartesian(load_model("psm"), 6, jaw=6)
            pose = poses[-1][1]
            state_msg = next(m for _, m in reversed(states) if m.header.stamp == pose.header.stamp)
            expected = arm.state(np.asarray(state_msg.position))
            p = pose.pose.position
            assert pose.header.frame_id == "PSM1_base"
            assert [p.x, p.y, p.z] == pytest.approx(expected.pose[:3, 3], abs=1e-9)
            jacobian = jacobians[-1][1]
            J = np.asarray(jacobian.data).reshape(jacobian.layout.dim[0].size, jacobian.layout.dim[1].size)
            assert J.shape == (6, 6)
            assert np.max(np.abs(J - expected.body_jacobian)) < 1e-3  # the arm at rest: about the same pose
            wrench = np.array([0.0, 0.0, -1.0, 0.0, 0.0, 0.0])
            publisher = probe.node.create_publisher(WrenchStamped, "/PSM1/spatial/servo_cf", 10)
            assert probe.spin_until(lambda: publisher.get_subscription_count() > 0, 10.0)
            msg = WrenchStamped()
            msg.wrench.force.z = -1.0
            at_rest = np.asarray(states[-1][1].position)  # held by the PID: the pose the command is computed at
            count = len(setpoints)
            tau = arm.state(at_rest).spatial_effort(wrench)
            publisher.publish(msg)  # one command: effort mode with J_s^T w at the pose it came at, held as it is

            def applied() -> bool:
                return any(np.allclose(np.asarray(m.effort)[:6], tau, atol=1e-3) for _, m in setpoints[count:])

            assert probe.spin_until(applied, 10.0), (tau, setpoints[-1][1].effort, sim.tail(10))
    finally:
        probe.close()
