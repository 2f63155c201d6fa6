"""An independent reference for checking the generated model (slow, per sample).

It shares nothing with the symbolic derivation but the description: forward
kinematics by 4x4 products, link velocities from the geometric Jacobian of
the chain of ancestors, the Lagrangian L = K - P (barycentric form of K), and
Lagrange's equation evaluated exactly:

    tau = M qdd + Mdot qd - 1/2 [qd^T dM/dq_i qd]_i + dP/dq

with M(q) obtained from the quadratic form K by polarisation and every
derivative with respect to q taken by complex-step differentiation (exact to
machine precision, no step-size trade-off).
"""
from __future__ import annotations

import numpy as np
import sympy

from dvrk_ident_ros.model.description import ArmDescription
from dvrk_ident_ros.model.parameters import parameter_layout

_STEP = 1e-30


class LagrangianReference:
    def __init__(self, description: ArmDescription):
        self.d = description
        self.layout = parameter_layout(description)
        self.n = description.dof
        motors = description.motor_symbols
        self._springs = {
            f.name: sympy.lambdify(motors, f.spring_deflection, "numpy")
            for f in description.frames if f.spring_deflection is not None
        }

    # -- kinematics -------------------------------------------------------
    def poses(self, q: np.ndarray) -> dict[str, np.ndarray]:
        T = {"base": np.eye(4, dtype=q.dtype)}
        for f in self.d.frames:
            theta = float(sympy.sympify(f.theta).subs(dict.fromkeys(self.d.motor_symbols, 0)))
            dist = float(sympy.sympify(f.d).subs(dict.fromkeys(self.d.motor_symbols, 0)))
            if f.joint_type == "revolute":
                theta = f.joint_coordinate.coefficients @ q + f.joint_coordinate.offset
            elif f.joint_type == "prismatic":
                dist = f.joint_coordinate.coefficients @ q + f.joint_coordinate.offset
            alpha = float(f.alpha)
            ca, sa, ct, st = np.cos(alpha), np.sin(alpha), np.cos(theta), np.sin(theta)
            local = np.array([[ct, -st, 0, f.a], [ca * st, ca * ct, -sa, -sa * dist],
                              [sa * st, sa * ct, ca, ca * dist], [0, 0, 0, 1]], dtype=q.dtype)
            T[f.name] = T[f.parent] @ local
        return T

    def _chain(self, name: str) -> list:
        chain = []
        while name != "base":
            f = self.d.frame(name)
            chain.append(f)
            name = f.parent
        return chain

    def _velocities(self, q: np.ndarray, qd: np.ndarray, T: dict[str, np.ndarray], name: str):
        """Angular and origin velocity of frame ``name``, in that frame."""
        o_k = T[name][:3, 3]
        w = np.zeros(3, dtype=np.result_type(q, qd))
        v = np.zeros(3, dtype=w.dtype)
        for f in self._chain(name):
            if f.joint is None:
                continue
            rate = f.joint.coefficients @ qd
            z = T[f.name][:3, 2]
            if f.joint_type == "revolute":
                w = w + z * rate
                v = v + np.cross(z, o_k - T[f.name][:3, 3]) * rate
            else:
                v = v + z * rate
        R = T[name][:3, :3]
        return R.T @ w, R.T @ v

    # -- energies ---------------------------------------------------------
    def kinetic(self, q: np.ndarray, qd: np.ndarray, delta: np.ndarray) -> complex:
        T = self.poses(q)
        total = 0.0
        for f in self.d.frames:
            if not f.inertia:
                continue
            i = self.layout.inertial_blocks[f.name]
            xx, xy, xz, yy, yz, zz, lx, ly, lz, m = delta[i:i + 10]
            L = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
            l_vec = np.array([lx, ly, lz])
            w, v = self._velocities(q, qd, T, f.name)
            total = total + 0.5 * m * (v @ v) + v @ np.cross(w, l_vec) + 0.5 * (w @ L @ w)
        return total

    def potential(self, q: np.ndarray, delta: np.ndarray) -> complex:
        T = self.poses(q)
        g = self.d.gravity
        total = 0.0
        for f in self.d.frames:
            if not f.inertia:
                continue
            i = self.layout.inertial_blocks[f.name]
            l_vec, m = delta[i + 6:i + 9], delta[i + 9]
            total = total - g @ (m * T[f.name][:3, 3] + T[f.name][:3, :3] @ l_vec)
        return total

    def mass_matrix(self, q: np.ndarray, delta: np.ndarray) -> np.ndarray:
        n = self.n
        eye = np.eye(n)
        diag = [self.kinetic(q, eye[i], delta) for i in range(n)]
        M = np.zeros((n, n), dtype=np.result_type(q, float))
        for i in range(n):
            M[i, i] = 2 * diag[i]
            for j in range(i + 1, n):
                M[i, j] = M[j, i] = self.kinetic(q, eye[i] + eye[j], delta) - diag[i] - diag[j]
        return M

    def _d_dq(self, fun, q: np.ndarray) -> list:
        return [np.imag(fun(q + 1j * _STEP * e)) / _STEP for e in np.eye(self.n)]

    def rigid_torques(self, q, qd, qdd, delta) -> np.ndarray:
        """Lagrange's equation on L = K - P (link inertia only)."""
        M = self.mass_matrix(q, delta)
        dM = self._d_dq(lambda x: self.mass_matrix(x, delta), q)
        dP = np.array(self._d_dq(lambda x: self.potential(x, delta), q))
        Mdot = sum(dM[k] * qd[k] for k in range(self.n))
        quad = np.array([qd @ dM[i] @ qd for i in range(self.n)])
        return M @ qdd + Mdot @ qd - 0.5 * quad + dP

    def gravity_torques(self, q, delta) -> np.ndarray:
        return np.array(self._d_dq(lambda x: self.potential(x, delta), q))

    def transmission_torques(self, q, qd, qdd, delta) -> np.ndarray:
        """Friction, motor inertia and springs (eqs. 11-14, 17-20)."""
        tau = np.zeros(self.n)
        names = self.layout.names
        value = dict(zip(names, delta, strict=True))
        elements = [(f.name, f.joint) for f in self.d.frames if f.joint is not None]
        elements += [(dr.name, dr.coordinate) for dr in self.d.drives]
        for owner, coord in elements:
            c_d, c_dd = coord.coefficients @ qd, coord.coefficients @ qdd
            t = 0.0
            if f"Fv{owner}" in value:
                t += value[f"Fv{owner}"] * c_d + value[f"Fc{owner}"] * np.sign(c_d) + value[f"Fo{owner}"]
            if f"Im{owner}" in value:
                t += value[f"Im{owner}"] * c_dd
            if owner in self._springs and f"K{owner}" in value:
                t += value[f"K{owner}"] * self._springs[owner](*q)
            tau += coord.coefficients * t
        return tau

    def torques(self, q, qd, qdd, delta) -> np.ndarray:
        return self.rigid_torques(q, qd, qdd, delta) + self.transmission_torques(q, qd, qdd, delta)
