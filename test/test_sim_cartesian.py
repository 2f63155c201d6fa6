"""The simulated arm's Cartesian side (dvrk_ident_ros/sim/cartesian.py; the node's topics: nodes/sim_cartesian.py):
its Jacobians against the geometric Jacobian built from the frames' axes (an independent construction), its
twist against the tip's motion, its wrenches against the efforts they stand for, and the node's topics against
the arm's joint states."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dvrk_ident_ros.model.arm_model import load_model
from dvrk_ident_ros.sim.cartesian import ArmCartesian, arm_cartesian


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


@pytest.mark.parametrize(("name", "joints", "jaw", "q"), [
    ("psm", 6, 6, [0.3, -0.2, 0.12, 0.4, 0.2, -0.3]),
    ("mtm", 7, None, [0.2, 0.1, 0.3, 0.5, -0.4, 0.2, 0.6]),
    ("ecm_classic", 4, None, [0.3, 0.2, 0.1, 0.4]),
])
def test_the_inverse_kinematics_finds_a_pose_s_joints(name: str, joints: int, jaw, q):
    """From a seed 0.05 rad (m) away on every joint: the tip at the target to 1e-9 (the redundant MTM may take
    other joints); a pose the ECM's 4 joints cannot make is refused with the error left."""
    from dvrk_ident_ros.errors import DataError
    from dvrk_ident_ros.sim.cartesian import rotation_vector

    arm = ArmCartesian(load_model(name), joints, jaw)
    q = np.array(q)
    target = arm.poses(q[None])[0]
    solution = arm.inverse(target, q + 0.05)
    assert arm.poses(solution[None])[0] == pytest.approx(target, abs=1e-9)
    if joints == 6:
        assert solution == pytest.approx(q, abs=1e-8)  # the PSM's 6 joints: the one solution near the seed
    if joints == 4:
        twisted = target.copy()
        angle = 0.3
        twisted[:3, :3] = target[:3, :3] @ np.array([[1, 0, 0], [0, np.cos(angle), -np.sin(angle)],
                                                     [0, np.sin(angle), np.cos(angle)]])
        with pytest.raises(DataError, match="no joint positions within the limits reach the pose"):
            arm.inverse(twisted, q)
    for vector in (np.array([0.0, 0.0, 1e-9]), np.array([0.3, -0.2, 0.5]), np.array([1.0, 2.0, -2.0]) / 3 * 3.14159):
        angle = np.linalg.norm(vector)
        axis = vector / angle
        K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
        R = np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K
        assert rotation_vector(R) == pytest.approx(vector, abs=1e-6)


@pytest.mark.ros
def test_the_simulated_psm_answers_kinematics_and_moves_to_a_pose(ros_env, rclpy_context, nodes_env, tmp_path: Path):
    """forward_kinematics / inverse_kinematics (crtk_msgs services) answer as the kinematics do; move_cp moves
    the arm to the joints whose tip is the goal; a pose out of reach is refused with the reason, nothing sent."""
    from crtk_msgs.srv import QueryForwardKinematics, QueryInverseKinematics
    from geometry_msgs.msg import PoseStamped
    from helpers.ros_probe import Probe
    from sensor_msgs.msg import JointState

    from dvrk_ident_ros.jobs.launcher import NodeProcess
    from dvrk_ident_ros.nodes.sim_cartesian import pose_message

    probe = Probe(rclpy_context, "kinematics_probe")
    setpoints = probe.collect(JointState, "/PSM1/setpoint_js")
    arm = arm_cartesian("PSM1")
    goal = np.array([0.2, -0.1, 0.14, 0.3, 0.1, -0.2])
    try:
        with NodeProcess("simulated_arm", {"arm": "PSM1", "initial_state": "HOMED", "noise": False},
                         log_dir=tmp_path / "logs", env=nodes_env, name="sim") as sim:
            fk = probe.node.create_client(QueryForwardKinematics, "/PSM1/forward_kinematics")
            ik = probe.node.create_client(QueryInverseKinematics, "/PSM1/inverse_kinematics")
            assert fk.wait_for_service(timeout_sec=20.0) and ik.wait_for_service(timeout_sec=5.0)

            def call(client, request):
                future = client.call_async(request)
                assert probe.spin_until(future.done, 10.0)
                return future.result()

            answer = call(fk, QueryForwardKinematics.Request(jp=goal.tolist()))
            assert answer.result
            p = answer.cp.position
            assert [p.x, p.y, p.z] == pytest.approx(arm.poses(goal[None])[0][:3, 3], abs=1e-9)
            too_many = call(fk, QueryForwardKinematics.Request(jp=[0.1] * 7))
            assert not too_many.result and too_many.message == "too many joints"
            link = call(fk, QueryForwardKinematics.Request(jp=goal[:3].tolist()))  # link 3: no tool tip
            assert link.result
            assert [link.cp.position.x, link.cp.position.y, link.cp.position.z] == pytest.approx(
                arm.link_pose(goal, 3)[:3, 3], abs=1e-9)
            # by hand: the shaft from the remote centre; 1e-6 since the files' offsets are 1.5708, not pi/2
            assert link.cp.position.z == pytest.approx(-(goal[2] - 0.4318) * np.cos(goal[1]) * np.cos(goal[0]),
                                                       abs=1e-6)
            request = QueryInverseKinematics.Request(jp=(goal + 0.05).tolist())
            request.cp = answer.cp
            solved = call(ik, request)
            assert solved.result and np.asarray(solved.jp) == pytest.approx(goal, abs=1e-7)
            mover = probe.node.create_publisher(PoseStamped, "/PSM1/move_cp", 10)
            assert probe.spin_until(lambda: mover.get_subscription_count() > 0, 10.0)
            mover.publish(pose_message(arm.poses(goal[None])[0], None, "PSM1_base"))
            # the move's setpoint ends at the goal (the measured joints sag: the PSM's PID has no integral term)
            assert probe.spin_until(lambda: bool(setpoints) and np.max(np.abs(
                np.asarray(setpoints[-1][1].position)[:6] - goal)) < 1e-6, 20.0), sim.tail(10)
            far = arm.poses(goal[None])[0]
            far[:3, 3] += [0.0, 0.0, 5.0]  # 5 m away
            mover.publish(pose_message(far, None, "PSM1_base"))
            assert probe.spin_until(lambda: "move_cp: inverse kinematics: no joint positions" in sim.tail(20), 10.0)
    finally:
        probe.close()


@pytest.mark.ros
def test_the_simulated_psm_publishes_its_cartesian_side(ros_env, rclpy_context, nodes_env, tmp_path: Path):
    """measured_cp, body/jacobian and body/measured_cf of a ready simulated PSM1 agree with the Cartesian core
    at its measured_js; spatial/servo_cf puts it in effort mode with J_s^T w (its setpoint_js efforts)."""
    from geometry_msgs.msg import PoseStamped, WrenchStamped
    from helpers.ros_probe import Probe
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from dvrk_ident_ros.jobs.launcher import NodeProcess

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
            arm = arm_cartesian("PSM1")
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

            def applied() -> bool:  # the pose it came at: the last sample's, give or take the PID's settling
                return any(np.allclose(np.asarray(m.effort)[:6], tau, atol=1e-2) for _, m in setpoints[count:])

            assert probe.spin_until(applied, 10.0), (tau.tolist(), list(setpoints[-1][1].effort), sim.tail(10))
    finally:
        probe.close()


#: what dvrk_python 2.4's arm classes declare (crtk ral: publishers RELIABLE, TRANSIENT_LOCAL when latched;
#: subscribers RELIABLE, VOLATILE, depth 10): (topic, type, the client publishes it, latched)
CLIENT_TOPICS = [
    ("operating_state", "crtk_msgs.msg.OperatingState", False, False),
    ("state_command", "crtk_msgs.msg.StringStamped", True, True),
    ("measured_js", "sensor_msgs.msg.JointState", False, False),
    ("setpoint_js", "sensor_msgs.msg.JointState", False, False),
    ("measured_cp", "geometry_msgs.msg.PoseStamped", False, False),
    ("setpoint_cp", "geometry_msgs.msg.PoseStamped", False, False),
    ("local/measured_cp", "geometry_msgs.msg.PoseStamped", False, False),
    ("local/setpoint_cp", "geometry_msgs.msg.PoseStamped", False, False),
    ("measured_cv", "geometry_msgs.msg.TwistStamped", False, False),
    ("body/measured_cf", "geometry_msgs.msg.WrenchStamped", False, False),
    ("spatial/measured_cf", "geometry_msgs.msg.WrenchStamped", False, False),
    ("body/jacobian", "std_msgs.msg.Float64MultiArray", False, False),
    ("spatial/jacobian", "std_msgs.msg.Float64MultiArray", False, False),
    ("hold", "std_msgs.msg.Empty", True, False),
    ("free", "std_msgs.msg.Empty", True, False),
    ("servo_jp", "sensor_msgs.msg.JointState", True, False),
    ("servo_jr", "sensor_msgs.msg.JointState", True, False),
    ("servo_cp", "geometry_msgs.msg.PoseStamped", True, False),
    ("servo_jf", "sensor_msgs.msg.JointState", True, False),
    ("move_jp", "sensor_msgs.msg.JointState", True, False),
    ("move_jr", "sensor_msgs.msg.JointState", True, False),
    ("move_cp", "geometry_msgs.msg.PoseStamped", True, False),
    ("body/servo_cf", "geometry_msgs.msg.WrenchStamped", True, False),
    ("spatial/servo_cf", "geometry_msgs.msg.WrenchStamped", True, False),
    ("body/set_cf_orientation_absolute", "std_msgs.msg.Bool", True, True),
    ("use_gravity_compensation", "std_msgs.msg.Bool", True, True),
    ("trajectory_j/set_ratio", "std_msgs.msg.Float64", True, True),
    ("trajectory_j/ratio", "std_msgs.msg.Float64", False, False),
]
MTM_TOPICS = [("lock_orientation", "geometry_msgs.msg.Quaternion", True, True),
              ("unlock_orientation", "std_msgs.msg.Empty", True, True),
              ("servo_ci", "crtk_msgs.msg.CartesianImpedance", True, False),
              ("gripper/measured_js", "sensor_msgs.msg.JointState", False, False)]
PSM_TOPICS = [("emulate_tool_present", "std_msgs.msg.Bool", True, True),
              ("jaw/measured_js", "sensor_msgs.msg.JointState", False, False),
              ("jaw/setpoint_js", "sensor_msgs.msg.JointState", False, False),
              ("jaw/servo_jp", "sensor_msgs.msg.JointState", True, False),
              ("jaw/move_jp", "sensor_msgs.msg.JointState", True, False),
              ("jaw/servo_jf", "sensor_msgs.msg.JointState", True, False)]


@pytest.mark.ros
@pytest.mark.parametrize(("arm", "extra"), [("MTML", MTM_TOPICS), ("PSM1", PSM_TOPICS), ("ECM", [])])
def test_every_topic_the_dvrk_client_declares_connects(arm: str, extra, ros_env, rclpy_context, nodes_env,
                                                       tmp_path: Path):
    """check_connections() as dvrk_python's ral does it: every publisher of the client has a matched
    subscriber and every subscriber a matched publisher, with the client's types and QoS, within 5 s; and the
    kinematics services answer."""
    import importlib

    from helpers.ros_probe import Probe
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

    from dvrk_ident_ros.jobs.launcher import NodeProcess

    def kind(path: str):
        module, name = path.rsplit(".", 1)
        return getattr(importlib.import_module(module), name)

    probe = Probe(rclpy_context, "client_probe")
    endpoints = []
    for topic, type_path, publishes, latched in CLIENT_TOPICS + extra:
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1 if latched else 10,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE)
        name = f"/{arm}/{topic}"
        if publishes:
            endpoints.append((topic, probe.node.create_publisher(kind(type_path), name, qos)))
        else:
            endpoints.append((topic, probe.node.create_subscription(kind(type_path), name, lambda msg: None, qos)))

    def unconnected() -> list[str]:
        return [topic for topic, e in endpoints
                if (e.get_subscription_count() if hasattr(e, "get_subscription_count") else e.get_publisher_count())
                == 0]

    try:
        with NodeProcess("simulated_arm", {"arm": arm, "initial_state": "HOMED"}, log_dir=tmp_path / "logs",
                         env=nodes_env, name="sim") as sim:
            assert probe.spin_until(lambda: "simulated " in sim.tail(5), 30.0)
            start = probe.node.get_clock().now()
            assert probe.spin_until(lambda: not unconnected(), 5.0), (unconnected(), sim.tail(10))
            print(f"{arm}: {len(endpoints)} topics connected in "
                  f"{(probe.node.get_clock().now() - start).nanoseconds * 1e-9:.2f} s")
            services = [name for name, _ in probe.node.get_service_names_and_types()]
            for service in ("forward_kinematics", "local/forward_kinematics", "inverse_kinematics"):
                assert f"/{arm}/{service}" in services, services
    finally:
        probe.close()


def test_the_mtm_s_locked_wrist_keeps_its_orientation_while_the_arm_is_pushed():
    """lock_orientation as the console does it: in Cartesian effort mode the wrist (platform, pitch, yaw, roll)
    follows the locked orientation in position mode while the arm's first three joints take J^T w. A body
    force moves the tip by more than a centimetre; the tip's orientation stays within 0.01 rad of the locked one, where
    without the lock it turns by more. A position command releases the lock."""
    from dvrk_ident_ros.sim.arm import EFFORT, POSITION, SimulatedArm
    from dvrk_ident_ros.sim.cartesian import OrientationLock, rotation_vector
    from dvrk_ident_ros.sim.config import load_sim_config

    def pushed(locked: bool) -> tuple[float, float, SimulatedArm]:
        arm = SimulatedArm(load_sim_config("mtm"), "MTML", noise=False)
        kinematics = arm_cartesian("MTML", arm.model)
        arm.advance(arm.move_jp([0.1, 0.1, 0.2, 0.0, -0.5, 0.2, 0.3]) + 0.5)
        start = kinematics.poses(arm.q[None])[0]
        wrist = np.zeros(arm.dof, dtype=bool)
        wrist[3:7] = True
        lock = OrientationLock(kinematics, wrist, arm.config.move_speed)
        arm.use_gravity_compensation(True)
        force = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
        arm.servo_jf(np.zeros(arm.dof), cartesian=True)
        if locked:
            lock.lock(start[:3, :3])
            arm.lock_joints(wrist)
        period = 0.01
        for k in range(100):
            state = kinematics.state(arm.q)
            world = np.array([0.3, 0.2, 0.15]) if k < 30 else np.zeros(3)  # N at the tip, base frame
            force[:3] = state.pose[:3, :3].T @ world
            arm.servo_jf(state.body_effort(force), cartesian=True)
            if locked:
                goal = arm.q_ref.copy()
                goal[:7] = lock.goal(arm.q, arm.q_ref, period)
                arm.set_locked_goal(goal)
            arm.advance(period)
        end = kinematics.poses(arm.q[None])[0]
        moved = float(np.linalg.norm(end[:3, 3] - start[:3, 3]))
        turned = float(np.linalg.norm(rotation_vector(end[:3, :3] @ start[:3, :3].T)))
        return moved, turned, arm

    moved, turned, arm = pushed(True)
    free_moved, free_turned, _ = pushed(False)
    print(f"locked: tip moved {1e3 * moved:.1f} mm, turned {turned:.4f} rad; free: {1e3 * free_moved:.1f} mm, "
          f"{free_turned:.4f} rad")
    assert moved > 0.01 and free_moved > 0.01
    assert turned < 0.01 < free_turned
    assert arm.mode == EFFORT and arm.locked[3:7].all() and not arm.locked[:3].any()
    setpoint, _ = arm.setpoint()
    assert setpoint[:3] == pytest.approx(arm.q[:3]) and setpoint[3:7] == pytest.approx(arm.q_ref[3:7])
    arm.hold()
    assert arm.mode == POSITION and not arm.locked.any()


@pytest.mark.ros
def test_the_simulated_mtm_serves_poses_and_locks_its_wrist(ros_env, rclpy_context, nodes_env, tmp_path: Path):
    """The MTM's Cartesian commands through its topics: servo_cp (one inverse kinematics, the setpoint at the
    pose's joints), move_cp (a move whose setpoint ends at the pose), then lock_orientation in Cartesian effort
    mode: a body force moves the tip while its orientation stays locked (orientation_locked true), and
    unlock_orientation ends it (false)."""
    from geometry_msgs.msg import PoseStamped, Quaternion, WrenchStamped
    from helpers.ros_probe import Probe
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Bool, Empty

    from dvrk_ident_ros.jobs.launcher import NodeProcess
    from dvrk_ident_ros.nodes.sim_cartesian import pose_message, pose_of
    from dvrk_ident_ros.sim.cartesian import rotation_vector

    probe = Probe(rclpy_context, "mtm_cartesian_probe")
    setpoints = probe.collect(JointState, "/MTML/setpoint_js")
    poses = probe.collect(PoseStamped, "/MTML/measured_cp")
    locked = probe.collect(Bool, "/MTML/orientation_locked")
    arm = arm_cartesian("MTML")

    def setpoint_at(goal: np.ndarray) -> bool:
        return bool(setpoints) and np.max(np.abs(np.asarray(setpoints[-1][1].position)[:7] - goal)) < 1e-6

    try:
        with NodeProcess("simulated_arm", {"arm": "MTML", "initial_state": "HOMED", "noise": False},
                         log_dir=tmp_path / "logs", env=nodes_env, name="sim") as sim:
            pub = {topic: probe.node.create_publisher(kind, f"/MTML/{topic}", 10) for topic, kind in (
                ("servo_cp", PoseStamped), ("move_cp", PoseStamped), ("body/servo_cf", WrenchStamped),
                ("lock_orientation", Quaternion), ("unlock_orientation", Empty))}
            assert probe.spin_until(lambda: all(p.get_subscription_count() for p in pub.values()) and bool(poses)
                                    and bool(setpoints), 20.0), sim.tail(10)
            q0 = np.asarray(setpoints[-1][1].position)[:7]
            near = q0 + np.array([0.02, -0.02, 0.02, 0.0, 0.0, 0.0, 0.0])
            pub["servo_cp"].publish(pose_message(arm.poses(near[None])[0], None, "MTML_base"))
            assert probe.spin_until(lambda: bool(setpoints) and np.linalg.norm(arm.poses(np.asarray(
                setpoints[-1][1].position)[None, :7])[0][:3, 3] - arm.poses(near[None])[0][:3, 3]) < 1e-6, 10.0), \
                sim.tail(10)
            goal = q0 + np.array([0.1, 0.1, -0.1, 0.2, -0.2, 0.2, 0.3])
            pub["move_cp"].publish(pose_message(arm.poses(goal[None])[0], None, "MTML_base"))
            assert probe.spin_until(lambda: bool(setpoints) and np.linalg.norm(arm.poses(np.asarray(
                setpoints[-1][1].position)[None, :7])[0][:3, 3] - arm.poses(goal[None])[0][:3, 3]) < 1e-6
                and not setpoint_at(near), 20.0), sim.tail(10)
            probe.spin_for(0.5)
            pub["body/servo_cf"].publish(WrenchStamped())
            probe.spin_for(0.3)
            start = pose_of(poses[-1][1])
            orientation = pose_message(start, None, "").pose.orientation
            pub["lock_orientation"].publish(orientation)
            assert probe.spin_until(lambda: bool(locked) and locked[-1][1].data, 5.0), sim.tail(10)
            push = WrenchStamped()
            push.wrench.force.x, push.wrench.force.y = 0.3, 0.2  # N at the tip, in its frame
            pub["body/servo_cf"].publish(push)
            probe.spin_for(0.25)
            pub["body/servo_cf"].publish(WrenchStamped())
            probe.spin_for(0.5)
            end = pose_of(poses[-1][1])
            moved = float(np.linalg.norm(end[:3, 3] - start[:3, 3]))
            turned = float(np.linalg.norm(rotation_vector(end[:3, :3] @ start[:3, :3].T)))
            print(f"locked MTM: tip moved {1e3 * moved:.1f} mm, turned {turned:.4f} rad")
            assert moved > 0.005 and turned < 0.01, (moved, turned, sim.tail(10))
            pub["unlock_orientation"].publish(Empty())
            assert probe.spin_until(lambda: not locked[-1][1].data, 5.0), sim.tail(10)
    finally:
        probe.close()


@pytest.mark.parametrize(("name", "joints", "jaw", "tolerance"), [
    ("psm", 6, 6, 1e-6), ("ecm_classic", 4, None, 1e-6),
    ("mtm", 7, None, 1e-3),  # the description's forearm offset h is 0.151 m, the console's 0.1506
])
def test_the_console_s_chain_puts_the_tip_where_the_description_does(name: str, joints: int, jaw, tolerance: float):
    """The console's DH chain (config/console_kinematics, from the dVRK's kinematic and tool files) and the
    package's own description are two independent constructions of one arm: at 20 random poses inside the
    limits their tip points differ by one rigid motion (the two base frames). (The Si arms' descriptions are the
    console's gravity chains, exact for statics only: their tips are not the kinematic chain's.)"""
    from dvrk_ident_ros.arm.registry import arm_spec
    from dvrk_ident_ros.model.console_kinematics import load_kinematics
    from dvrk_ident_ros.safety import CommandChecker

    model = load_model(name)
    spec = arm_spec(name)
    assert spec.console_kinematics is not None
    console = ArmCartesian(model, joints, jaw, load_kinematics(spec.console_kinematics))
    description = ArmCartesian(model, joints, jaw)
    checker = CommandChecker(model)
    rng = np.random.default_rng(7)
    lower, upper = checker.lower[:joints], checker.upper[:joints]
    q = lower + (upper - lower) * (0.1 + 0.8 * rng.random((20, joints)))
    a, b = description.poses(q)[:, :3, 3], console.poses(q)[:, :3, 3]
    ca, cb = a.mean(axis=0), b.mean(axis=0)
    u, _, vt = np.linalg.svd((a - ca).T @ (b - cb))
    R = vt.T @ np.diag([1.0, 1.0, np.linalg.det(vt.T @ u.T)]) @ u.T
    residual = np.abs((a - ca) @ R.T + cb - b).max()
    print(f"{name}: tips equal to {residual:.2e} m after one rigid motion (spread {np.ptp(b, axis=0).round(3)} m)")
    assert residual < tolerance
    assert np.ptp(b, axis=0).max() > 0.05  # the poses spread: the match is not a point's


def test_the_console_s_chain_gives_the_tip_and_its_links_as_cisst_does():
    """Hand-computed frames (cisst robManipulator, the files' numbers): the PSM's tip on the shaft at zero
    angles, insertion 0.12: z = -(0.12 - 0.4318 + 0.4162), then the wrist's 0.0091 along the tip's own z, its
    axes the tool-tip offset's; link 3 (the insertion's frame) has no tool tip; the MTM at zero; a file that is
    not a chain is refused."""
    from dvrk_ident_ros.errors import DataError
    from dvrk_ident_ros.model.console_kinematics import load_kinematics, parse_kinematics

    config = Path(__file__).resolve().parent.parent / "config" / "console_kinematics"
    psm = load_kinematics(config / "psm.yaml")
    tip = psm.forward(np.array([0.0, 0.0, 0.12, 0.0, 0.0, 0.0]))[0]
    assert tip[:3, 3] == pytest.approx([0.0, 0.0, -(0.12 - 0.4318 + 0.4162 + 0.0091)], abs=1e-4)
    insertion = psm.forward(np.array([0.0, 0.0, 0.12]), 3)[0]
    assert insertion[:3, 3] == pytest.approx([0.0, 0.0, -(0.12 - 0.4318)], abs=1e-4)
    assert psm.forward(np.zeros(6), 0)[0] == pytest.approx(np.eye(4))
    mtm = load_kinematics(config / "mtm.yaml")
    assert mtm.forward(np.zeros(7))[0][:3, 3] == pytest.approx([0.0, -0.3645, -(0.2794 - 0.1506)], abs=1e-4)
    for bad in ({"convention": "hayati", "links": [[0, 0, 0, 0, 0, "r"]]}, {"convention": "modified", "links": []},
                {"convention": "modified", "links": [[0, 0, 0, 0, "r"]]},
                {"convention": "modified", "links": [[0, 0, 0, 0, 0, "r"]], "tool_tip": [[2, 0, 0, 0]] * 4}):
        with pytest.raises(DataError):
            parse_kinematics(bad)
