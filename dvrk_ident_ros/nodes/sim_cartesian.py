"""The simulated arm's Cartesian topics (the node ``simulated_arm``; the numbers: ``sim/cartesian.py``), as the
dVRK console publishes them for its own Python client (dvrk_python's ``dvrk.arm``), with each state sample and
only while someone subscribes: ``measured_cp``, ``setpoint_cp``, ``local/measured_cp``, ``local/setpoint_cp``
(geometry_msgs/PoseStamped, frame ``<ARM>_base``), ``measured_cv`` (TwistStamped), ``body/measured_cf`` and
``spatial/measured_cf`` (WrenchStamped), ``body/jacobian`` and ``spatial/jacobian`` (std_msgs/Float64MultiArray,
6 x N row-major, the cisst bridge's layout). Commands: ``servo_jr`` and ``move_jr`` (sensor_msgs/JointState: a
position relative to the setpoint) and ``body/servo_cf`` and ``spatial/servo_cf`` (WrenchStamped: J^T w in effort
mode). Stamp 0 while the data is invalid (a PSM without its tool: no Cartesian data either)."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from geometry_msgs.msg import Pose, PoseStamped, Quaternion, TwistStamped, WrenchStamped
from rclpy.node import Node
from std_msgs.msg import Bool, Float64MultiArray, MultiArrayDimension

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.sim.cartesian import ArmCartesian, CartesianState, OrientationLock

POSES = ("measured_cp", "setpoint_cp", "local/measured_cp", "local/setpoint_cp")
WRENCHES = ("body/measured_cf", "spatial/measured_cf")
JACOBIANS = ("body/jacobian", "spatial/jacobian")


def _quaternion(R: np.ndarray) -> tuple[float, float, float, float]:
    """(x, y, z, w) of a rotation matrix (Shepperd's method), normalised."""
    trace = float(np.trace(R))
    if trace > 0.0:
        s = 2.0 * np.sqrt(trace + 1.0)
        q = ((R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, 0.25 * s)
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        v = [0.0, 0.0, 0.0]
        v[i], v[j], v[k] = 0.25 * s, (R[j, i] + R[i, j]) / s, (R[k, i] + R[i, k]) / s
        q = (v[0], v[1], v[2], (R[k, j] - R[j, k]) / s)
    norm = float(np.linalg.norm(q))
    x, y, z, w = (float(c) / norm for c in q)
    return x, y, z, w


def pose_message(pose: np.ndarray, stamp, frame: str) -> PoseStamped:
    msg = PoseStamped()
    if stamp is not None:
        msg.header.stamp = stamp
    msg.header.frame_id = frame
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(v) for v in pose[:3, 3])
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = _quaternion(pose[:3, :3])
    return msg


def jacobian_message(jacobian: np.ndarray) -> Float64MultiArray:
    """6 x N, row-major, dims labelled as the cisst bridge labels them."""
    rows, cols = jacobian.shape
    msg = Float64MultiArray()
    msg.layout.dim = [MultiArrayDimension(label="rows", size=rows, stride=1),
                      MultiArrayDimension(label="cols", size=cols, stride=rows)]
    msg.data = [float(v) for v in jacobian.ravel()]
    return msg


def crtk_services():
    """``crtk_msgs.srv`` (QueryForwardKinematics, QueryInverseKinematics), or None where absent."""
    try:
        from crtk_msgs import srv
    except ImportError:
        return None
    return srv if hasattr(srv, "QueryForwardKinematics") else None


def wrench_of(msg: WrenchStamped) -> np.ndarray:
    f, t = msg.wrench.force, msg.wrench.torque
    return np.array([f.x, f.y, f.z, t.x, t.y, t.z], dtype=float)


class CartesianTopics:
    """Publishers and command subscriptions of one simulated arm's Cartesian side."""

    def __init__(self, node: Node, arm: str, kinematics: ArmCartesian, state_qos):
        self.node, self.arm, self.joints = node, arm, kinematics.joints
        self.kinematics = kinematics
        self.frame = f"{arm}_base"
        topics = [*(t for t in POSES), "measured_cv", *WRENCHES, *JACOBIANS]
        types = {**dict.fromkeys(POSES, PoseStamped), "measured_cv": TwistStamped,
                 **dict.fromkeys(WRENCHES, WrenchStamped), **dict.fromkeys(JACOBIANS, Float64MultiArray)}
        self.publishers = {t: node.create_publisher(types[t], f"/{arm}/{t}", state_qos) for t in topics}
        self.published = dict.fromkeys(topics, 0)
        self.absolute = False  # body/set_cf_orientation_absolute: body wrenches in the base frame's orientation

    def publish(self, position: np.ndarray, setpoint: np.ndarray, velocity: np.ndarray, effort: np.ndarray,
                stamp) -> None:
        """Every Cartesian topic someone subscribes to, from one state sample (dVRK joint space, the kinematic
        joints first), stamped ``stamp`` (0 while the data is invalid: the caller's). Each publisher's
        subscriptions are counted once per sample, and nothing is computed when no one subscribes."""
        wanted = {topic for topic, publisher in self.publishers.items() if publisher.get_subscription_count()}
        if not wanted:
            return
        n = self.joints
        measured = self.kinematics.state(position[:n])
        messages: dict[str, Callable[[], object]] = {
            "measured_cp": lambda: pose_message(measured.pose, stamp, self.frame),
            "local/measured_cp": lambda: pose_message(measured.pose, stamp, self.frame),
            "measured_cv": lambda: self._twist(measured, velocity[:n], stamp),
            "body/measured_cf": lambda: self._wrench(self._body(measured, effort[:n]), stamp),
            "spatial/measured_cf": lambda: self._wrench(measured.spatial_wrench(effort[:n]), stamp),
            "body/jacobian": lambda: jacobian_message(measured.body_jacobian),
            "spatial/jacobian": lambda: jacobian_message(measured.spatial_jacobian),
        }
        if wanted & {"setpoint_cp", "local/setpoint_cp"}:
            target = self.kinematics.poses(np.asarray(setpoint[:n], dtype=float)[None])[0]
            messages["setpoint_cp"] = messages["local/setpoint_cp"] = lambda: pose_message(target, stamp, self.frame)
        for topic in wanted:
            self.publishers[topic].publish(messages[topic]())
            self.published[topic] += 1

    def _body(self, state: CartesianState, effort: np.ndarray) -> np.ndarray:
        wrench = state.body_wrench(effort)
        if self.absolute:
            R = state.pose[:3, :3]
            wrench = np.concatenate([R @ wrench[:3], R @ wrench[3:]])
        return wrench

    def state(self, position: np.ndarray) -> CartesianState:
        return self.kinematics.state(np.asarray(position, dtype=float)[:self.joints])

    def _twist(self, state: CartesianState, velocity: np.ndarray, stamp) -> TwistStamped:
        twist = state.twist(np.asarray(velocity, dtype=float))
        msg = TwistStamped()
        msg.header.stamp, msg.header.frame_id = stamp, self.frame
        (msg.twist.linear.x, msg.twist.linear.y, msg.twist.linear.z,
         msg.twist.angular.x, msg.twist.angular.y, msg.twist.angular.z) = (float(v) for v in twist)
        return msg

    @staticmethod
    def _wrench(wrench: np.ndarray, stamp) -> WrenchStamped:
        msg = WrenchStamped()
        msg.header.stamp = stamp
        (msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z,
         msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z) = (float(v) for v in wrench)
        return msg


def pose_of(msg) -> np.ndarray:
    """A geometry_msgs Pose (or PoseStamped) as a 4x4 matrix; DataError for a non-finite or zero quaternion."""
    pose = getattr(msg, "pose", msg)
    p, o = pose.position, pose.orientation
    values = np.array([p.x, p.y, p.z, o.x, o.y, o.z, o.w], dtype=float)
    norm = float(np.linalg.norm(values[3:]))
    if not np.all(np.isfinite(values)) or norm < 1e-9:
        raise DataError(f"pose {values.tolist()}: expected a finite position and a non-zero quaternion")
    x, y, z, w = values[3:] / norm
    T = np.eye(4)
    T[:3, :3] = [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                 [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                 [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]
    T[:3, 3] = values[:3]
    return T


class CartesianCommands:
    """The Cartesian commands of one simulated arm, on its core (``sim``, a SimulatedArm; the caller holds the
    node's lock): ``servo_cp`` (one inverse kinematics per message, seeded with the measured joints, then the
    joints' setpoint, held until the next), ``move_cp`` (the inverse kinematics at the goal, then the arm's own
    joint move), ``body/servo_cf`` and ``spatial/servo_cf`` (effort mode, J^T w; a body wrench in the base
    frame's orientation once ``body/set_cf_orientation_absolute`` is true), and the kinematics services."""

    def __init__(self, sim, topics: CartesianTopics, jaw_effort: Callable[[], float], event_qos=None):
        self.sim, self.topics, self.jaw_effort = sim, topics, jaw_effort
        self.kinematics = topics.kinematics
        self.joints = topics.joints
        self.lock: OrientationLock | None = None
        self._locked_pub = None
        if event_qos is not None:  # an MTM: its wrist (platform, pitch, yaw, roll) can be locked
            wrist = np.zeros(sim.dof, dtype=bool)
            wrist[3:7] = True
            self.lock = OrientationLock(self.kinematics, wrist, sim.config.move_speed)
            self._locked_pub = topics.node.create_publisher(Bool, f"/{topics.arm}/orientation_locked", event_qos)

    def lock_orientation(self, msg: Quaternion) -> None:
        """The MTM's ``lock_orientation``: the orientation (in the ``measured_cp`` frame) its wrist holds while the
        arm is in Cartesian effort mode; no readiness asked, as the console's."""
        if self.lock is None:
            raise DataError("lock_orientation: only an MTM's wrist locks")
        pose = Pose()
        pose.orientation = msg
        self.lock.lock(pose_of(pose)[:3, :3])
        wrist = np.zeros(self.sim.dof, dtype=bool)
        wrist[np.flatnonzero(self.lock.wrist)] = True
        self.sim.lock_joints(wrist)
        self._locked(True)

    def unlock_orientation(self, msg=None) -> None:
        if self.lock is None:
            raise DataError("unlock_orientation: only an MTM's wrist locks")
        self.lock.unlock()
        self.sim.unlock_joints()
        self._locked(False)

    def _locked(self, on: bool) -> None:
        if self._locked_pub is not None:
            self._locked_pub.publish(Bool(data=on))

    def follow(self, dt: float) -> None:
        """One control period of the orientation lock (the caller holds the node's lock): the wrist's setpoint
        towards the locked orientation while the arm is in effort mode; a lock the arm released (a position
        command, a joint servo_jf, free) ends here."""
        lock = self.lock
        if lock is None or lock.rotation is None:
            return
        if not self.sim.locked.any():
            lock.unlock()
            self._locked(False)
            return
        if self.sim.mode != "effort" or not self.sim.ready:
            return
        n = self.joints
        goal = self.sim.q_ref.copy()
        goal[:n] = lock.goal(self.sim.q, self.sim.q_ref, dt)
        self.sim.set_locked_goal(goal)

    def _clamp(self, q: np.ndarray) -> np.ndarray:
        full = self.sim.q_ref.copy()
        full[:self.joints] = q
        return self.sim.checker.clamp_position(full)[:self.joints]

    def _solve(self, msg, what: str) -> np.ndarray:
        self.sim.require_ready(what)
        try:
            q = self.kinematics.inverse(pose_of(msg), self.sim.q[:self.joints], self._clamp)
        except DataError as exc:
            raise DataError(f"{what}: {exc}; nothing sent") from exc
        goal = self.sim.q_ref.copy()
        goal[:self.joints] = q
        return goal

    def servo_cp(self, msg: PoseStamped) -> None:
        goal = self._solve(msg, "servo_cp")
        self.sim.servo_jp(goal, np.zeros(self.sim.dof), joints=np.arange(self.joints))

    def move_cp(self, msg: PoseStamped) -> None:
        goal = self._solve(msg, "move_cp")
        self.sim.move_joints(goal, np.arange(self.joints))  # a PSM's jaw keeps its goal

    def servo_cf(self, msg: WrenchStamped, body: bool) -> None:
        what = "body/servo_cf" if body else "spatial/servo_cf"
        self.sim.require_ready(what, effort=True)
        wrench = self.sim.checker.finite(wrench_of(msg), f"{what} wrench", 6)
        state = self.kinematics.state(self.sim.q[:self.joints])
        if body and self.topics.absolute:  # given in the base frame's orientation: into the tip frame
            R = state.pose[:3, :3]
            wrench = np.concatenate([R.T @ wrench[:3], R.T @ wrench[3:]])
        effort = np.zeros(self.sim.dof)
        effort[:self.joints] = state.body_effort(wrench) if body else state.spatial_effort(wrench)
        if self.joints < self.sim.dof:
            effort[self.joints:] = self.jaw_effort()
        self.sim.servo_jf(effort, cartesian=True)

    def forward_kinematics(self, request, response):
        """The tip's pose at ``request.jp`` (all the kinematic joints), or with fewer, link N's frame (no tool
        tip), as the console answers; more joints than the arm's: "too many joints"."""
        jp = np.asarray(request.jp, dtype=float)
        if jp.size > self.joints or not np.all(np.isfinite(jp)):
            response.result = False
            response.message = "too many joints" if jp.size > self.joints else "joint positions not finite"
            return response
        try:
            pose = self.kinematics.link_pose(jp, jp.size)
        except DataError as exc:
            response.result, response.message = False, str(exc)
            return response
        response.cp = pose_message(pose, None, "").pose
        response.result, response.message = True, ""
        return response

    def inverse_kinematics(self, request, response):
        """Joint positions for ``request.cp`` searched from ``request.jp`` (the kinematic joints)."""
        seed = np.asarray(request.jp, dtype=float)
        response.jp = [float(v) for v in seed]
        if seed.size != self.joints or not np.all(np.isfinite(seed)):
            response.result = False
            response.message = f"incorrect number of joints: {seed.size}, expected {self.joints}"
            return response
        try:
            q = self.kinematics.inverse(pose_of(request.cp), seed, self._clamp)
        except DataError as exc:
            response.result, response.message = False, f"inverse kinematics failed: {exc}"
            return response
        response.jp = [float(v) for v in q]
        response.result, response.message = True, ""
        return response
