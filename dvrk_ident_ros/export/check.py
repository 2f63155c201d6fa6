"""Cross-checks of exported files against the package's own model (tests and benches; needs the test
dependencies pinocchio and mujoco, imported here only).

- :func:`pinocchio_torques`: RNEA on the URDF loaded with its mimic joints (pinocchio's generalized
  coordinates are then the dVRK joints), projected on the motors, tau^m = A^T tau^d.
- :func:`mujoco_torques`: ``mj_inverse`` on the MJCF at the tree state of the coupled motion (joint
  equalities, Coulomb friction and joint limits off: the first two vanish there, the third is not in the
  model), projected through the constant Jacobian J = d(tree joints)/d(q^m): tau^m = J^T qfrc_inverse.
- :func:`mujoco_rollout`: the MJCF simulated from rest with no control.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dvrk_ident_ros.export.tree import ArmTree
from dvrk_ident_ros.model.arm_model import ArmModel

#: Parameter kinds the URDF does not hold (RNEA is rigid-body dynamics only).
NOT_RIGID = ("Fv", "Fc", "Fo", "Im", "K")


def rigid_parameters(model: ArmModel, delta: np.ndarray) -> np.ndarray:
    """delta with friction, motor inertia and springs set to zero."""
    out = np.array(delta, dtype=float)
    for kind in NOT_RIGID:
        out[model.layout.of_kind(kind)] = 0.0
    return out


def exportable_parameters(model: ArmModel, tree: ArmTree, delta: np.ndarray) -> np.ndarray:
    """delta with what the MJCF does not hold set to zero: Coulomb and offset friction (MuJoCo's
    frictionloss is a dry-friction constraint, not the smooth law), springs that are not linear."""
    out = np.array(delta, dtype=float)
    for kind in ("Fc", "Fo"):
        out[model.layout.of_kind(kind)] = 0.0
    kept = {e.owner for e in tree.elements if e.stiffness}
    for i in model.layout.of_kind("K"):
        if model.layout.owners[i] not in kept:
            out[i] = 0.0
    return out


def tree_jacobian(model: ArmModel, tree: ArmTree, names: list[str]) -> np.ndarray:
    """J (len(names) x n): the named tree joints' rates per motor rate."""
    joints = {j.name: j for j in tree.joints()}
    return np.array([joints[n].multiplier * model.A[joints[n].dvrk_index] for n in names])


def pinocchio_torques(urdf: str, model: ArmModel, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
    """Motor torques (N x n) of pinocchio's RNEA on the URDF (mimic joints on) at motor states."""
    import pinocchio

    pin_model = pinocchio.buildModelFromXML(urdf, mimic=True)
    pin_model.gravity.linear = np.asarray(model.description.gravity, dtype=float)
    data = pin_model.createData()
    names = model.description.dvrk_joint_names
    iq = [pin_model.joints[pin_model.getJointId(n)].idx_q for n in names]
    iv = [pin_model.joints[pin_model.getJointId(n)].idx_v for n in names]
    out = np.empty(np.shape(q))
    for k in range(len(q)):
        x = np.zeros(pin_model.nq)
        v, a = np.zeros(pin_model.nv), np.zeros(pin_model.nv)
        x[iq], v[iv], a[iv] = model.A @ q[k], model.A @ qd[k], model.A @ qdd[k]
        tau = pinocchio.rnea(pin_model, data, x, v, a)
        out[k] = model.A.T @ tau[iv]
    return out


@dataclass
class MujocoArm:
    """An MJCF loaded in MuJoCo, with the map from motor states to its joints."""

    model: Any  # mujoco.MjModel (mujoco is imported where used: a test and bench dependency)
    names: list[str]
    qpos: np.ndarray  # address of each named joint in qpos
    dof: np.ndarray  # and in qvel
    J: np.ndarray  # tree joint rates per motor rate

    @classmethod
    def load(cls, mjcf: str, arm: ArmModel, tree: ArmTree) -> MujocoArm:
        import mujoco

        m = mujoco.MjModel.from_xml_string(mjcf)
        names = [m.joint(i).name for i in range(m.njnt)]
        return cls(m, names, np.array([m.jnt_qposadr[i] for i in range(m.njnt)]),
                   np.array([m.jnt_dofadr[i] for i in range(m.njnt)]), tree_jacobian(arm, tree, names))

    def set_state(self, data, q: np.ndarray, qd: np.ndarray) -> None:
        data.qpos[self.qpos] = self.J @ q
        data.qvel[self.dof] = self.J @ qd


def mujoco_torques(mjcf: str, model: ArmModel, tree: ArmTree, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray
                   ) -> np.ndarray:
    """Motor torques (N x n) of ``mj_inverse`` on the MJCF at motor states."""
    import mujoco

    arm = MujocoArm.load(mjcf, model, tree)
    m = arm.model
    m.opt.disableflags |= (mujoco.mjtDisableBit.mjDSBL_EQUALITY | mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS
                           | mujoco.mjtDisableBit.mjDSBL_LIMIT | mujoco.mjtDisableBit.mjDSBL_CONTACT)
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4  # the implicit integrators' inverse adds h D qacc
    data = mujoco.MjData(m)
    out = np.empty(np.shape(q))
    for k in range(len(q)):
        arm.set_state(data, q[k], qd[k])
        data.qacc[arm.dof] = arm.J @ qdd[k]
        mujoco.mj_inverse(m, data)
        out[k] = arm.J.T @ data.qfrc_inverse[arm.dof]
    return out


def mujoco_rollout(mjcf: str, model: ArmModel, tree: ArmTree, q0: np.ndarray, seconds: float, every: float,
                   *, limits: bool = False, frictionloss: bool = True, integrator: str | None = None,
                   timestep: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """dVRK joint positions (samples x n) every ``every`` s of the MJCF simulated from rest at motor
    position ``q0`` with no control, read on each dVRK joint's first tree joint; and the largest joint
    equality violation seen (per sample)."""
    import mujoco

    arm = MujocoArm.load(mjcf, model, tree)
    m = arm.model
    if not limits:
        m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_LIMIT
    if not frictionloss:
        m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS
    if integrator is not None:
        m.opt.integrator = getattr(mujoco.mjtIntegrator, f"mjINT_{integrator.upper()}")
    if timestep is not None:
        m.opt.timestep = timestep
    data = mujoco.MjData(m)
    arm.set_state(data, q0, np.zeros_like(q0))
    mujoco.mj_forward(m, data)
    joints = {j.name: j for j in tree.joints()}
    reference: dict[int, tuple[int, float]] = {}
    for i, name in enumerate(arm.names):
        reference.setdefault(joints[name].dvrk_index, (i, joints[name].multiplier))
    steps = round(every / m.opt.timestep)
    samples, violation = [], []
    for _ in range(round(seconds / every) + 1):
        samples.append([data.qpos[arm.qpos[reference[j][0]]] / reference[j][1] for j in range(model.dof)])
        q_dvrk = np.array(samples[-1])
        expected = np.array([joints[n].multiplier * q_dvrk[joints[n].dvrk_index] for n in arm.names])
        violation.append(float(np.max(np.abs(data.qpos[arm.qpos] - expected))))
        mujoco.mj_step(m, data, nstep=steps)
    return np.array(samples), np.array(violation)


def package_rollout(model: ArmModel, delta: np.ndarray, q0: np.ndarray, seconds: float, every: float,
                    dt: float = 1e-3) -> np.ndarray:
    """dVRK joint positions every ``every`` s of the package's simulator physics (dvrk_ident_ros/sim, RK4 at
    ``dt``) from rest at ``q0``; the motors hold the known torques (the cable), which no format holds."""
    from dvrk_ident_ros.sim.physics import ArmPhysics, ArmState

    physics = ArmPhysics(model, delta)

    def hold(t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        return physics.known_torques(q)

    state, out = ArmState(np.array(q0, dtype=float), np.zeros(model.dof)), [model.dvrk_from_motor(q0)]
    per_sample = round(every / dt)
    for step in range(round(seconds / dt)):
        state = physics.step(state, hold, dt)
        if step % per_sample == per_sample - 1:
            out.append(model.dvrk_from_motor(state.q))
    return np.array(out)
