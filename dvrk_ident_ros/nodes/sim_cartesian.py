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
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from rclpy.node import Node
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from dvrk_ident_ros.sim.cartesian import ArmCartesian, CartesianState

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
    msg.header.stamp, msg.header.frame_id = stamp, frame
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


def wrench_of(msg: WrenchStamped) -> np.ndarray:
    f, t = msg.wrench.force, msg.wrench.torque
    return np.array([f.x, f.y, f.z, t.x, t.y, t.z], dtype=float)


class CartesianTopics:
    """Publishers and command subscriptions of one simulated arm's Cartesian side."""

    def __init__(self, node: Node, arm: str, model, joints: int, jaw: int | None, state_qos):
        self.node, self.arm, self.joints = node, arm, joints
        self.kinematics = ArmCartesian(model, joints, jaw)
        self.frame = f"{arm}_base"
        topics = [*(t for t in POSES), "measured_cv", *WRENCHES, *JACOBIANS]
        types = {**dict.fromkeys(POSES, PoseStamped), "measured_cv": TwistStamped,
                 **dict.fromkeys(WRENCHES, WrenchStamped), **dict.fromkeys(JACOBIANS, Float64MultiArray)}
        self.publishers = {t: node.create_publisher(types[t], f"/{arm}/{t}", state_qos) for t in topics}
        self.published = dict.fromkeys(topics, 0)

    def wanted(self) -> bool:
        return any(p.get_subscription_count() for p in self.publishers.values())

    def publish(self, position: np.ndarray, setpoint: np.ndarray, velocity: np.ndarray, effort: np.ndarray,
                stamp, valid: bool) -> None:
        """Every Cartesian topic someone subscribes to, from one state sample (dVRK joint space, the kinematic
        joints first); ``valid`` false: the last values are not computed, stamp 0 (the caller's)."""
        if not self.wanted():
            return
        n = self.joints
        measured = self.kinematics.state(position[:n])
        poses = {"measured_cp": measured.pose, "local/measured_cp": measured.pose}
        if self._subscribed("setpoint_cp") or self._subscribed("local/setpoint_cp"):
            target = self.kinematics.poses(np.asarray(setpoint[:n], dtype=float)[None])[0]
            poses.update({"setpoint_cp": target, "local/setpoint_cp": target})
        for topic, pose in poses.items():
            if self._subscribed(topic):
                self.publishers[topic].publish(pose_message(pose, stamp, self.frame))
                self.published[topic] += 1
        self._send("measured_cv", lambda: self._twist(measured, velocity[:n], stamp))
        self._send("body/measured_cf", lambda: self._wrench(measured.body_wrench(effort[:n]), stamp))
        self._send("spatial/measured_cf", lambda: self._wrench(measured.spatial_wrench(effort[:n]), stamp))
        self._send("body/jacobian", lambda: jacobian_message(measured.body_jacobian))
        self._send("spatial/jacobian", lambda: jacobian_message(measured.spatial_jacobian))

    def state(self, position: np.ndarray) -> CartesianState:
        return self.kinematics.state(np.asarray(position, dtype=float)[:self.joints])

    def _subscribed(self, topic: str) -> bool:
        return self.publishers[topic].get_subscription_count() > 0

    def _send(self, topic: str, build: Callable[[], object]) -> None:
        if self._subscribed(topic):
            self.publishers[topic].publish(build())
            self.published[topic] += 1

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
