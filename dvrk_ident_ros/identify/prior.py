"""The geometric prior of the plausible parameters (ROS-free): each link as rods along its frames' offsets and
a sphere, its mass in the middle of its bounds (identify/plausible.py measures a fit's distance from it), and
the divergence of a link's pseudo-inertia from the prior's (the log-det divergence, Lee, Wensing and Park 2020)."""
from __future__ import annotations

import numpy as np

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.model.arm_model import ArmModel
from dvrk_ident_ros.model.physical import barycentric_from_physical, pseudo_inertia

LINK_RADIUS = 0.1  # m: the prior's rods and spheres: broad (with 2-5 cm every COM offset the data need cost mass)
DEFAULT_MASS = (0.05, 2.0)  # kg: the mass range assumed for a link without bounds
#: The prior's centre of mass stays this fraction of each COM range away from its bounds.
PRIOR_COM_MARGIN = 0.25


def _representative_pose(model: ArmModel) -> np.ndarray:
    """Motor coordinates at the middle of every limited coordinate's range (least squares)."""
    limits = model.description.limits_for()
    coords = model.description.limited_coordinates
    names = [n for n in limits if n in coords]
    if not names:
        return np.zeros(model.dof)
    C = np.array([coords[n].coefficients for n in names])
    mid = np.array([0.5 * (limits[n][0] + limits[n][1]) - coords[n].offset for n in names])
    return np.linalg.lstsq(C, mid, rcond=None)[0]


def _rods(model: ArmModel) -> dict[str, list[np.ndarray]]:
    """Per inertial frame, the vectors (link frame) from its origin to its child frames' origins."""
    frames = model.description.frames
    poses = model.forward_kinematics(_representative_pose(model)[None, :])[0]
    index = {f.name: i for i, f in enumerate(frames)}
    out: dict[str, list[np.ndarray]] = {}
    for link in model.layout.inertial_blocks:
        T = poses[index[link]]
        ends = [T[:3, :3].T @ (poses[index[f.name]][:3, 3] - T[:3, 3]) for f in frames if f.parent == link]
        out[link] = [e for e in ends if np.linalg.norm(e) > 1e-6]
    return out


def _rod_body(mass: float, rods: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(centre of mass, inertia about it) of uniform rods of radius LINK_RADIUS sharing one end at the
    origin, mass shared by length; a sphere of that radius at the origin without rods."""
    r = LINK_RADIUS
    if not rods:
        return np.zeros(3), 0.4 * mass * r * r * np.eye(3)
    lengths = np.array([np.linalg.norm(v) for v in rods])
    masses = mass * lengths / lengths.sum()
    mids = np.array(rods) / 2.0
    com = masses @ mids / mass
    inertia = np.zeros((3, 3))
    for m, v, length, c in zip(masses, rods, lengths, mids, strict=True):
        u = v / length
        along, across = 0.5 * m * r * r, m * (3 * r * r + length * length) / 12.0
        d = c - com
        inertia += across * np.eye(3) + (along - across) * np.outer(u, u) + m * (d @ d * np.eye(3) - np.outer(d, d))
    return com, inertia


def geometric_prior(model: ArmModel) -> np.ndarray:
    """Standard parameters of a CAD-like guess (inertial blocks only, the rest zero).

    Mass: the geometric mean of the description's mass bounds; shape: uniform rods
    (:data:`LINK_RADIUS`) from the link's origin to its child frames' origins at the
    middle of the joint ranges, a sphere for a link with no offset child; the centre
    of mass is clipped into the middle half of the description's COM bounds.
    """
    delta = np.zeros(len(model.layout))
    links = (model.description.bounds or {}).get("links") or {}
    rods = _rods(model)
    for link, start in model.layout.inertial_blocks.items():
        spec = links.get(link) or {}
        lo, hi = (float(x) for x in spec.get("mass", DEFAULT_MASS))
        mass = float(np.sqrt(max(lo, 1e-6) * hi))
        com, inertia = _rod_body(mass, rods[link])
        box = spec.get("com")
        if box:  # into the middle half of the box: a prior on a bound draws the answer onto it
            lo3, hi3 = np.array([b[0] for b in box], dtype=float), np.array([b[1] for b in box], dtype=float)
            margin = PRIOR_COM_MARGIN * (hi3 - lo3)
            com = np.clip(com, lo3 + margin, hi3 - margin)
        delta[start:start + 10] = barycentric_from_physical(mass, com, inertia)
    return delta


def prior_from_standard(model: ArmModel, standard: dict[str, float]) -> np.ndarray:
    """A prior from a parameter file's standard parameters (CAD, an earlier fit); every link must be
    strictly physically consistent (the divergence needs J0 > 0)."""
    missing = [n for n in model.parameter_names if n not in standard]
    if missing:
        raise DataError(f"prior: no value for {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
    return np.array([float(standard[n]) for n in model.parameter_names])


def prior_blocks(model: ArmModel, prior: np.ndarray) -> dict[str, np.ndarray]:
    blocks = {}
    for link, start in model.layout.inertial_blocks.items():
        J0 = pseudo_inertia(prior[start:start + 10])
        if np.linalg.eigvalsh(J0)[0] <= 0:
            raise DataError(f"prior: link {link} is not strictly physically consistent (its pseudo-inertia "
                            "must be positive definite for the log-det divergence)")
        blocks[link] = J0
    return blocks


_UPPER = np.triu_indices(4)


def symmetric_basis() -> np.ndarray:
    """The 10 symmetric 4x4 matrices E_p with X = sum_p x_p E_p (x: X's upper triangle)."""
    basis = np.zeros((10, 4, 4))
    for p, (i, j) in enumerate(zip(*_UPPER, strict=True)):
        basis[p, i, j] = basis[p, j, i] = 1.0
    return basis


def _parameters_of(J: np.ndarray) -> np.ndarray:
    """[L(6) l(3) m] of pseudo-inertias J (... x 4 x 4): Sigma = J[:3, :3], L = tr(Sigma) I - Sigma."""
    sigma = J[..., :3, :3]
    L = np.trace(sigma, axis1=-2, axis2=-1)[..., None, None] * np.eye(3) - sigma
    iu = np.triu_indices(3)
    return np.concatenate([L[..., iu[0], iu[1]], J[..., :3, 3], J[..., 3:, 3]], axis=-1)


def whitening(J0: np.ndarray) -> np.ndarray:
    """B (10 x 10) with delta = B x for J = C X C^T, J0 = C C^T (Cholesky): X = I is the prior, and
    the divergence is tr(X) - log det X - 4, well scaled whatever the link's size."""
    C = np.linalg.cholesky(J0)
    return _parameters_of(np.einsum("ij,pjk,lk->pil", C, symmetric_basis(), C)).T


def divergences(model: ArmModel, delta: np.ndarray, prior: np.ndarray) -> dict[str, float]:
    """Per link, the log-det divergence d(J || J0) = tr(J0^-1 J) - log det(J0^-1 J) - 4 (>= 0; inf if
    J is singular)."""
    out = {}
    for link, start in model.layout.inertial_blocks.items():
        J, J0 = pseudo_inertia(delta[start:start + 10]), pseudo_inertia(prior[start:start + 10])
        M = np.linalg.solve(J0, J)
        sign, logdet = np.linalg.slogdet(M)
        out[link] = float(np.trace(M) - logdet - 4.0) if sign > 0 else float("inf")
    return out
