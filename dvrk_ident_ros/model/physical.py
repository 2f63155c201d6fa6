"""Physical consistency of barycentric link parameters (Wang 2019 eq. 25; Wensing 2018).

A link's parameters [L(6) l(3) m] are physically consistent (a non-negative
mass density can realise them) iff its 4x4 pseudo-inertia

    J = [[tr(L)/2 I - L, l], [l^T, m]]

is positive semidefinite; this is eq. 25, which also implies positive mass,
positive-definite rotational inertia and the triangle inequalities.
"""
from __future__ import annotations

import numpy as np

from dvrk_ident_ros.model.parameters import ParameterLayout


def inertia_matrix(delta_L: np.ndarray) -> np.ndarray:
    xx, xy, xz, yy, yz, zz = delta_L[:6]
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


def pseudo_inertia(delta_L: np.ndarray) -> np.ndarray:
    """The 4x4 pseudo-inertia of one link's 10 barycentric parameters."""
    L = inertia_matrix(delta_L)
    J = np.zeros((4, 4))
    J[:3, :3] = 0.5 * np.trace(L) * np.eye(3) - L
    J[:3, 3] = J[3, :3] = delta_L[6:9]
    J[3, 3] = delta_L[9]
    return J


def min_pseudo_inertia_eigenvalues(layout: ParameterLayout, delta: np.ndarray) -> dict[str, float]:
    """Smallest eigenvalue of every link's pseudo-inertia (>= 0 when consistent)."""
    return {name: float(np.linalg.eigvalsh(pseudo_inertia(delta[i:i + 10]))[0])
            for name, i in layout.inertial_blocks.items()}


def barycentric_from_physical(mass: float, com: np.ndarray, inertia_at_com: np.ndarray) -> np.ndarray:
    """[L(6) l(3) m] from mass, centre of mass and inertia about it (parallel axis, eq. 6)."""
    c = np.asarray(com, dtype=float)
    L = inertia_at_com + mass * (np.dot(c, c) * np.eye(3) - np.outer(c, c))
    return np.array([L[0, 0], L[0, 1], L[0, 2], L[1, 1], L[1, 2], L[2, 2], *(mass * c), mass])


def random_physical_parameters(layout: ParameterLayout, rng: np.random.Generator,
                               scale: float = 1.0) -> np.ndarray:
    """Random standard parameters that are strictly physically consistent (for tests, simulation seeds)."""
    delta = np.zeros(len(layout))
    for i, kind in enumerate(layout.kinds):
        if kind in ("Fv", "Fc", "Im", "K"):
            delta[i] = rng.uniform(0.01, 0.1) * scale
        elif kind == "Fo":
            delta[i] = rng.uniform(-0.05, 0.05) * scale
    for start in layout.inertial_blocks.values():
        mass = rng.uniform(0.2, 2.0) * scale
        com = rng.uniform(-0.1, 0.1, 3)
        # second moments of a random mass distribution: J = R diag(s) R^T, I = tr(J) 1 - J
        rot, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        second = rot @ np.diag(rng.uniform(1e-4, 1e-2, 3) * mass) @ rot.T
        inertia = np.trace(second) * np.eye(3) - second
        delta[start:start + 10] = barycentric_from_physical(mass, com, inertia)
    return delta
