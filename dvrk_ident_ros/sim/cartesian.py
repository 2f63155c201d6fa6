"""The Cartesian side of a simulated arm, from the package's own kinematics (ROS-free), as the dVRK console
computes it (sawIntuitiveResearchKit mtsIntuitiveResearchKitArm::get_robot_data, cisst robManipulator's
Jacobians):

- the tip: the console's own DH chain and tool-tip offset (model/console_kinematics.py) where the arm has one,
  else the description's last frame with the jaw (if any) closed, in the arm's base frame (``local``; the
  simulated arm has no base frame of its own, so ``measured_cp`` is ``local/measured_cp``);
- Jacobians over the kinematic joints (the arm's joints without the jaw), 6 x N, linear rows first. Body:
  (R^T p_dot, R^T omega) of the tip; spatial: Ad(T) times the body Jacobian (the velocity of the point at
  the base origin, and omega, in the base frame);
- ``measured_cv``: the body twist rotated into the base frame (the tip point's velocity and omega);
- ``measured_cf``: pinv(J^T) tau over the kinematic joints, body (force at the tip, in the tip frame) and
  spatial (about the base origin, in the base frame); a ``servo_cf`` wrench is tau = J^T w.

The Jacobians come from central differences of the forward kinematics in dVRK joint space, step ``STEP``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.model.console_kinematics import ConsoleKinematics

STEP = 1e-6  # rad (m): the central differences' step
IK_TOLERANCE = 1e-9  # m and rad: the pose error a solution leaves at most
IK_ITERATIONS = 200
IK_DAMPING = 1e-6  # damped least squares' lambda^2 (cisst's robManipulator uses 1e-3 on its own scaling)


def _hat(v: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def _vee(m: np.ndarray) -> np.ndarray:
    return np.array([m[2, 1] - m[1, 2], m[0, 2] - m[2, 0], m[1, 0] - m[0, 1]]) / 2.0


def rotation_vector(R: np.ndarray) -> np.ndarray:
    """The axis times the angle of a rotation matrix (its logarithm), robust near 0 and pi."""
    cos = float(np.clip((np.trace(R) - 1.0) / 2.0, -1.0, 1.0))
    angle = float(np.arccos(cos))
    if angle < 1e-7:
        return _vee(R)
    if np.pi - angle < 1e-5:  # near pi: the axis from the symmetric part
        axis = np.sqrt(np.maximum((np.diag(R) + 1.0) / 2.0, 0.0))
        k = int(np.argmax(axis))
        axis[[i for i in range(3) if i != k]] *= np.sign(R[k, [i for i in range(3) if i != k]] + 1e-300)
        return angle * axis / np.linalg.norm(axis)
    return angle / np.sin(angle) * _vee(R)


def pose_error(target: np.ndarray, pose: np.ndarray) -> np.ndarray:
    """(target position - position, the rotation from pose to target as a vector), both in the base frame."""
    return np.concatenate([target[:3, 3] - pose[:3, 3], rotation_vector(target[:3, :3] @ pose[:3, :3].T)])


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
    of the model's dVRK joints, or None) held closed. With ``chain`` (the console's own DH chain and tool tip,
    model/console_kinematics.py) the tip is the console's; without, the description's last frame."""

    def __init__(self, model, joints: int, jaw: int | None = None, chain: ConsoleKinematics | None = None):
        self.model = model
        self.joints = int(joints)
        self.jaw = jaw
        if chain is not None and chain.joints != self.joints:
            raise DataError(f"{chain.source}: {chain.joints} links for an arm of {self.joints} kinematic joints")
        self.chain = chain

    def _full(self, q: np.ndarray) -> np.ndarray:
        """Kinematic joints (B x N) -> the model's dVRK joints, the rest (the jaw) 0."""
        out = np.zeros((q.shape[0], self.model.dof))
        out[:, :self.joints] = q[:, :self.joints]
        return out

    def poses(self, q: np.ndarray) -> np.ndarray:
        """The tip's 4x4 poses (B x 4 x 4) at kinematic joint positions ``q`` (B x N)."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        if self.chain is not None:
            return self.chain.forward(q[:, :self.joints])
        return self.model.forward_kinematics(self.model.motor_from_dvrk(self._full(q)))[:, -1]

    def link_pose(self, q: np.ndarray, links: int) -> np.ndarray:
        """The console's ``forward_kinematics`` for ``links`` joints: link ``links``'s frame (4x4; 0: the base),
        the tool tip when every kinematic joint is given; DataError without the console's chain for fewer."""
        q = np.asarray(q, dtype=float)
        if links == self.joints:
            return self.poses(q[None, :links])[0]
        if self.chain is None:
            raise DataError(f"{links} joint positions: without the console's chain only the tip ({self.joints} joints)")
        return self.chain.forward(q[None, :links], links)[0]

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

    def inverse(self, target: np.ndarray, seed: np.ndarray,
                clamp: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
        """Kinematic joint positions whose tip is at ``target`` (4x4, base frame), searched from ``seed`` by damped
        least squares on the tip's Jacobian in the base frame (as cisst's robManipulator::InverseKinematics),
        each step kept inside the limits by ``clamp``; DataError when no solution within ``IK_TOLERANCE`` is
        found (an arm with fewer than 6 joints reaches only the poses its joints make)."""
        target = np.asarray(target, dtype=float)
        q = np.asarray(seed, dtype=float)[:self.joints].copy()
        error = np.full(6, np.inf)
        for _ in range(IK_ITERATIONS):
            state = self.state(q)
            error = pose_error(target, state.pose)
            if np.max(np.abs(error)) < IK_TOLERANCE:
                return q
            R = state.pose[:3, :3]
            J = np.vstack([R @ state.body_jacobian[:3], R @ state.body_jacobian[3:]])
            q = q + J.T @ np.linalg.solve(J @ J.T + IK_DAMPING * np.eye(6), error)
            if clamp is not None:
                q = clamp(q)
        raise DataError(f"inverse kinematics: no joint positions within the limits reach the pose (left "
                        f"{1e3 * np.linalg.norm(error[:3]):.3g} mm, {np.degrees(np.linalg.norm(error[3:])):.3g} deg "
                        f"after {IK_ITERATIONS} steps)")


class OrientationLock:
    """The MTM's ``lock_orientation`` (sawIntuitiveResearchKit mtsIntuitiveResearchKitMTM): while the arm is in
    Cartesian effort mode, its wrist joints (``wrist``, a bool mask of the kinematic joints) follow the
    inverse kinematics of the locked orientation at the tip's current position, in position mode; the other
    joints keep their efforts (J^T w). Here each :meth:`goal` takes damped least-squares steps on the wrist's
    rotation rows alone (the tip's position is the arm's, not the wrist's to reach), and the setpoint moves
    towards the solution at most ``speed`` (rad/s per joint), as the console's joint trajectory does."""

    ITERATIONS = 5

    def __init__(self, kinematics: ArmCartesian, wrist: np.ndarray, speed: np.ndarray):
        self.kinematics = kinematics
        self.wrist = np.asarray(wrist, dtype=bool)[:kinematics.joints]
        self.speed = np.asarray(speed, dtype=float)[:kinematics.joints]
        self.rotation: np.ndarray | None = None  # the locked orientation, base frame

    def lock(self, rotation: np.ndarray) -> None:
        R = np.asarray(rotation, dtype=float)
        if R.shape != (3, 3) or not np.all(np.isfinite(R)) or not np.allclose(R @ R.T, np.eye(3), atol=1e-6):
            raise DataError("lock_orientation: expected a rotation (a finite unit quaternion)")
        self.rotation = R.copy()

    def unlock(self) -> None:
        self.rotation = None

    def goal(self, q: np.ndarray, setpoint: np.ndarray, dt: float) -> np.ndarray:
        """The wrist's next setpoint (kinematic joints; the others as in ``setpoint``) from the measured joints
        ``q``, ``dt`` s after the last."""
        if self.rotation is None:
            raise DataError("orientation lock: no orientation locked")
        n = self.kinematics.joints
        solution = np.asarray(q, dtype=float)[:n].copy()
        columns = np.flatnonzero(self.wrist)
        for _ in range(self.ITERATIONS):
            state = self.kinematics.state(solution)
            R = state.pose[:3, :3]
            error = rotation_vector(self.rotation @ R.T)
            if np.max(np.abs(error)) < IK_TOLERANCE:
                break
            J = R @ state.body_jacobian[3:, columns]
            solution[columns] += J.T @ np.linalg.solve(J @ J.T + IK_DAMPING * np.eye(3), error)
        goal = np.asarray(setpoint, dtype=float)[:n].copy()
        step = np.clip(solution - goal, -self.speed * dt, self.speed * dt)
        goal[columns] += step[columns]
        return goal


def arm_cartesian(name: str, model=None) -> ArmCartesian:
    """The Cartesian side of the registry's arm or family ``name`` (its kinematic joints, its jaw closed), on the
    console's own chain where the arm has one (``console_kinematics``)."""
    from dvrk_ident_ros.arm.registry import arm_spec
    from dvrk_ident_ros.model.arm_model import load_model
    from dvrk_ident_ros.model.console_kinematics import load_kinematics

    spec = arm_spec(name)
    chain = load_kinematics(spec.console_kinematics) if spec.console_kinematics is not None else None
    return ArmCartesian(model if model is not None else load_model(spec.model), spec.arm_joints, spec.jaw_index,
                        chain)
