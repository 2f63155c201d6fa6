"""The Cartesian side of a simulated arm, from the package's own kinematics (ROS-free), as the dVRK console
computes it (sawIntuitiveResearchKit mtsIntuitiveResearchKitArm::get_robot_data, cisst robManipulator's
Jacobians):

- the tip: the description's last frame with the jaw (if any) closed, in the arm's base frame (``local``; the
  simulated arm has no base frame of its own, so ``measured_cp`` is ``local/measured_cp``). No tool-tip offset
  beyond the description's frames;
- Jacobians over the kinematic joints (the arm's joints without the jaw), 6 x N, linear rows first. Body:
  (R^T p_dot, R^T omega) of the tip; spatial: Ad(T) times the body Jacobian (the velocity of the point at
  the base origin, and omega, in the base frame);
- ``measured_cv``: the body twist rotated into the base frame (the tip point's velocity and omega);
- ``measured_cf``: pinv(J^T) tau over the kinematic joints, body (force at the tip, in the tip frame) and
  spatial (about the base origin, in the base frame); a ``servo_cf`` wrench is tau = J^T w.

The Jacobians come from central differences of the forward kinematics in dVRK joint space (the description's
couplings and parallelograms included), step ``STEP``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

STEP = 1e-6  # rad (m): the central differences' step


def _hat(v: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def _vee(m: np.ndarray) -> np.ndarray:
    return np.array([m[2, 1] - m[1, 2], m[0, 2] - m[2, 0], m[1, 0] - m[0, 1]]) / 2.0


@dataclass(frozen=True)
class CartesianState:
    """The tip at one pose: its 4x4 pose in the base frame and the 6 x N Jacobians (linear rows first)."""

    pose: np.ndarray
    body_jacobian: np.ndarray
    spatial_jacobian: np.ndarray

    def twist(self, qd: np.ndarray) -> np.ndarray:
        """``measured_cv``: the tip point's velocity and omega, in the base frame (linear first)."""
        body = self.body_jacobian @ qd
        R = self.pose[:3, :3]
        return np.concatenate([R @ body[:3], R @ body[3:]])

    def body_wrench(self, effort: np.ndarray) -> np.ndarray:
        """pinv(J_b^T) tau: the force at the tip and the torque about it, in the tip frame."""
        return np.linalg.pinv(self.body_jacobian.T) @ effort

    def spatial_wrench(self, effort: np.ndarray) -> np.ndarray:
        """pinv(J_s^T) tau: the force and the torque about the base origin, in the base frame."""
        return np.linalg.pinv(self.spatial_jacobian.T) @ effort

    def body_effort(self, wrench: np.ndarray) -> np.ndarray:
        """J_b^T w: the joint efforts of a body wrench (``body/servo_cf``)."""
        return self.body_jacobian.T @ np.asarray(wrench, dtype=float)

    def spatial_effort(self, wrench: np.ndarray) -> np.ndarray:
        """J_s^T w: the joint efforts of a spatial wrench (``spatial/servo_cf``)."""
        return self.spatial_jacobian.T @ np.asarray(wrench, dtype=float)


class ArmCartesian:
    """The Cartesian side of one arm model: ``joints`` kinematic joints (dVRK order), the jaw (``jaw``, an index
    of the model's dVRK joints, or None) held closed."""

    def __init__(self, model, joints: int, jaw: int | None = None):
        self.model = model
        self.joints = int(joints)
        self.jaw = jaw

    def _full(self, q: np.ndarray) -> np.ndarray:
        """Kinematic joints (B x N) -> the model's dVRK joints, the rest (the jaw) 0."""
        out = np.zeros((q.shape[0], self.model.dof))
        out[:, :self.joints] = q[:, :self.joints]
        return out

    def poses(self, q: np.ndarray) -> np.ndarray:
        """The tip's 4x4 poses (B x 4 x 4) at kinematic joint positions ``q`` (B x N)."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        return self.model.forward_kinematics(self.model.motor_from_dvrk(self._full(q)))[:, -1]

    def state(self, q: np.ndarray) -> CartesianState:
        """Pose and Jacobians at ``q`` (N kinematic joints), one batched kinematics call."""
        q = np.asarray(q, dtype=float)[:self.joints]
        n = self.joints
        batch = np.repeat(q[None], 2 * n + 1, axis=0)
        batch[1:n + 1] += STEP * np.eye(n)
        batch[n + 1:] -= STEP * np.eye(n)
        T = self.poses(batch)
        pose = T[0]
        R, p = pose[:3, :3], pose[:3, 3]
        body = np.zeros((6, n))
        for j in range(n):
            dT = (T[1 + j] - T[1 + n + j]) / (2.0 * STEP)
            body[:3, j] = R.T @ dT[:3, 3]
            body[3:, j] = _vee(R.T @ dT[:3, :3])
        adjoint = np.zeros((6, 6))
        adjoint[:3, :3], adjoint[:3, 3:], adjoint[3:, 3:] = R, _hat(p) @ R, R
        return CartesianState(pose, body, adjoint @ body)
