"""The arm as a kinematic tree for simulator formats (URDF, MJCF), from a description and standard parameters.

Every moving frame of the description's opened tree (docs/identification.md, "The dynamic model") becomes a link
whose joint value is the frame's joint coordinate without its constant offset (the offset goes into the link's fixed
origin: modified DH, T = RotX(alpha) TransX(a) RotZ(theta0) TransZ(d0) * joint). A frame coordinate is
written in the dVRK joints (q^d = A q^m, the description's ``dvrk_from_motor``) as sum_j w_j q^d_j; one
tree joint per non-zero w_j, all about the frame's z axis, so that each tree joint is w_j times one dVRK
joint: a mimic joint (URDF) or a joint equality (MJCF). The first tree joint equal to q^d_j itself carries
that dVRK joint's name (what /<ARM>/measured_js reports).

Inertial values come from the standard parameters [L(6) l(3) m] of each link (Wang 2019 eqs. 6-7): mass
m, centre of mass c = l / m and the inertia about it by the parallel-axis theorem, I_c = L - m (|c|^2 1 - c c^T).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import sympy

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.model.arm_model import ArmModel
from dvrk_ident_ros.model.description import Frame, LinearCoordinate
from dvrk_ident_ros.model.physical import inertia_matrix, pseudo_inertia

#: A coefficient of a frame coordinate on a dVRK joint below this (relative to the largest) is zero.
_ZERO = 1e-9
#: A link is refused unless its pseudo-inertia's smallest eigenvalue exceeds this fraction of its largest.
DEFINITE = 1e-9
ROOT = "base"


@dataclass(frozen=True)
class TreeJoint:
    """One joint about the z axis of its link's origin; value = multiplier * q^d[dvrk_index]."""

    name: str
    kind: str  # "revolute" or "prismatic"
    dvrk_index: int
    multiplier: float
    master: bool  # the joint whose value is the dVRK joint itself


@dataclass(frozen=True)
class Inertial:
    mass: float
    com: np.ndarray  # link frame, m
    inertia: np.ndarray  # 3 x 3 about the centre of mass, link axes


@dataclass(frozen=True)
class Element:
    """Friction, motor inertia or a linear spring acting on a linear coordinate of the joints.

    ``terms`` gives the coordinate as sum coefficient * tree joint value; a single term with coefficient 1
    is the joint itself (joint attributes), otherwise a fixed tendon (MJCF) or nothing (URDF)."""

    owner: str  # frame or drive of the description
    terms: tuple[tuple[str, float], ...]
    damping: float = 0.0  # Fv
    friction: float = 0.0  # Fc
    armature: float = 0.0  # Im
    stiffness: float = 0.0  # K times the deflection's slope
    spring_reference: float = 0.0  # coordinate value where the spring is relaxed

    @property
    def on_joint(self) -> str | None:
        if len(self.terms) == 1 and abs(self.terms[0][1] - 1.0) < 1e-12:
            return self.terms[0][0]
        return None


@dataclass(frozen=True)
class TreeLink:
    name: str
    frame: str
    parent: str  # link name, ROOT for the base
    origin: np.ndarray  # 4 x 4: parent link frame -> this link's frame at zero joint values
    joints: tuple[TreeJoint, ...]  # in series, all about the origin's z axis
    inertial: Inertial | None


@dataclass
class ArmTree:
    arm: str
    dvrk_joint_names: tuple[str, ...]
    gravity: np.ndarray
    links: list[TreeLink]
    elements: list[Element]
    #: per dVRK joint: (lower, upper, max speed) in rad, m; None where the description gives none
    limits: list[tuple[float, float, float] | None]
    #: what the formats cannot hold (offset friction, nonlinear springs, known torques): one line each
    omitted: list[str] = field(default_factory=list)

    def joints(self) -> list[TreeJoint]:
        return [j for link in self.links for j in link.joints]

    def masters(self) -> dict[int, TreeJoint]:
        return {j.dvrk_index: j for j in self.joints() if j.master}

    def joint_values(self, q_dvrk: np.ndarray) -> dict[str, float]:
        """Every tree joint's value at the dVRK joint positions ``q_dvrk``."""
        return {j.name: j.multiplier * float(q_dvrk[j.dvrk_index]) for j in self.joints()}


def safe_name(frame: str) -> str:
    """A frame name as an XML-friendly identifier: primes become p (3'' -> 3pp)."""
    return "".join("p" if ch == "'" else ch if ch.isalnum() or ch == "_" else "_" for ch in frame)


def link_name(frame: str) -> str:
    return f"link_{safe_name(frame)}"


def dvrk_weights(coordinate: LinearCoordinate, A_inv: np.ndarray) -> np.ndarray:
    """w with coordinate = w . q^d (+ offset); tiny entries set to zero."""
    w = coordinate.coefficients @ A_inv
    w[np.abs(w) < _ZERO * max(float(np.max(np.abs(w))), 1e-300)] = 0.0
    return w


def frame_origin(frame: Frame) -> np.ndarray:
    """The fixed part of the frame's modified-DH transform (joint coordinates at zero)."""
    zero = {}
    for symbol in frame.theta.free_symbols | frame.d.free_symbols:
        zero[symbol] = 0
    alpha = float(frame.alpha)
    theta = float(sympy.sympify(frame.theta).subs(zero))
    d = float(sympy.sympify(frame.d).subs(zero))
    ca, sa, ct, st = np.cos(alpha), np.sin(alpha), np.cos(theta), np.sin(theta)
    T = np.eye(4)
    T[:3, :3] = [[ct, -st, 0.0], [ca * st, ca * ct, -sa], [sa * st, sa * ct, ca]]
    T[:3, 3] = [frame.a, -sa * d, ca * d]
    return T


def link_inertial(block: np.ndarray) -> Inertial:
    """Mass, centre of mass and inertia about it from [L(6) l(3) m] (parallel-axis theorem)."""
    mass = float(block[9])
    com = np.asarray(block[6:9], dtype=float) / mass
    L = inertia_matrix(block)
    return Inertial(mass, com, L - mass * (np.dot(com, com) * np.eye(3) - np.outer(com, com)))


def check_consistent(model: ArmModel, delta: np.ndarray) -> None:
    """Refuse parameters a simulator cannot take: every link's pseudo-inertia positive definite."""
    bad = []
    for name, start in model.layout.inertial_blocks.items():
        eig = np.linalg.eigvalsh(pseudo_inertia(delta[start:start + 10]))
        if not eig[0] > DEFINITE * max(eig[-1], 0.0):
            bad.append(f"{name} (smallest pseudo-inertia eigenvalue {eig[0]:.3g}, largest {eig[-1]:.3g})")
    if bad:
        raise DataError("the parameters are not physically consistent, a simulator cannot take them: link "
                        + ", ".join(bad) + " (Wang 2019 eq. 25: each link's 4x4 pseudo-inertia must be "
                        "positive definite; identify with --method sdp)")


def build_tree(model: ArmModel, delta: np.ndarray, variant: str | None = None) -> ArmTree:
    """The export tree of ``model`` with standard parameters ``delta`` (checked physically consistent)."""
    delta = np.asarray(delta, dtype=float)
    check_consistent(model, delta)
    d = model.description
    A_inv = model.A_inv
    links: list[TreeLink] = []
    frame_terms: dict[str, tuple[tuple[str, float], ...]] = {}
    has_master: set[int] = set()
    placed: dict[str, tuple[str, np.ndarray, np.ndarray | None]] = {}  # frame -> parent link, origin, weights
    for frame in d.frames:
        joints: list[TreeJoint] = []
        parent = ROOT if frame.parent == "base" else link_name(frame.parent)
        origin = frame_origin(frame)
        w = dvrk_weights(frame.joint, A_inv) if frame.joint is not None else None
        own = w is not None
        if w is not None and np.count_nonzero(w) > 1:
            parent, origin, w = _on_sibling(d.frames, frame, placed, parent, origin, w)
            own = parent == (ROOT if frame.parent == "base" else link_name(frame.parent))
        placed[frame.name] = (parent, origin, w)
        if w is not None:
            for j in (int(k) for k in np.flatnonzero(w)):
                master = abs(w[j] - 1.0) < 1e-12 and j not in has_master
                has_master.update([j] if master else [])
                name = d.dvrk_joint_names[j] if master else f"{d.dvrk_joint_names[j]}_{safe_name(frame.name)}"
                joints.append(TreeJoint(name, frame.joint_type, int(j), float(w[j]), master))
            if own:  # the joints add up to the frame's own coordinate (friction, springs act on it)
                frame_terms[frame.name] = tuple((jt.name, 1.0) for jt in joints)
        start = model.layout.inertial_blocks.get(frame.name)
        inertial = link_inertial(delta[start:start + 10]) if start is not None else None
        links.append(TreeLink(link_name(frame.name), frame.name, parent, origin, tuple(joints), inertial))
    tree = ArmTree(d.arm, d.dvrk_joint_names, np.asarray(d.gravity, dtype=float), links, [],
                   _dvrk_limits(model, variant))
    tree.elements = _elements(model, delta, tree, frame_terms)
    return tree


def _on_sibling(frames, frame: Frame, placed, parent: str, origin: np.ndarray, w: np.ndarray
               ) -> tuple[str, np.ndarray, np.ndarray]:
    """A frame moved by several dVRK joints, re-attached to an earlier sibling turning about the same axis
    when that leaves fewer joints between them (the MTM's parallelogram back link on the shoulder link: it
    then follows the elbow pitch alone, as in the dVRK's own URDF; the PSM's second jaw on the first)."""
    best = (parent, origin, w)
    for other in frames:
        if other is frame or other.name not in placed or other.parent != frame.parent or \
                other.joint_type != frame.joint_type:
            continue
        other_parent, other_origin, other_w = placed[other.name]
        if other_parent != parent or other_w is None:
            continue
        relative = np.linalg.inv(other_origin) @ origin
        same_axis = np.allclose(relative[:3, 2], [0, 0, 1], atol=1e-12) and \
            np.allclose(relative[2, :3], [0, 0, 1], atol=1e-12) and np.allclose(relative[:2, 3], 0, atol=1e-12)
        rest = w - other_w
        rest[np.abs(rest) < _ZERO * max(float(np.max(np.abs(w))), 1e-300)] = 0.0
        if same_axis and np.count_nonzero(rest) < np.count_nonzero(best[2]):
            best = (link_name(other.name), relative, rest)
    return best


def _reference_terms(tree: ArmTree, w: np.ndarray) -> tuple[tuple[str, float], ...]:
    """w . q^d as a combination of tree joints: per dVRK joint, its first tree joint."""
    first: dict[int, TreeJoint] = {}
    for joint in tree.joints():
        first.setdefault(joint.dvrk_index, joint)
    terms = []
    for j in (int(k) for k in np.flatnonzero(w)):
        if j not in first:
            raise DataError(f"{tree.arm}: dVRK joint {tree.dvrk_joint_names[j]} moves no frame")
        terms.append((first[j].name, float(w[j] / first[j].multiplier)))
    return tuple(terms)


def _elements(model: ArmModel, delta: np.ndarray, tree: ArmTree,
              frame_terms: dict[str, tuple[tuple[str, float], ...]]) -> list[Element]:
    d = model.description
    layout = model.layout

    def value(name: str) -> float:
        return float(delta[layout.index(name)]) if name in layout.names else 0.0

    out = []
    owners = [(f.name, f.joint, f.spring_deflection, frame_terms.get(f.name)) for f in d.frames if f.joint]
    owners += [(dr.name, dr.coordinate, None, None) for dr in d.drives]
    for owner, coordinate, deflection, terms in owners:
        if terms is None:
            terms = _reference_terms(tree, dvrk_weights(coordinate, model.A_inv))
        stiffness = reference = 0.0
        if deflection is not None and value(f"K{owner}") != 0.0:
            slope = _linear_slope(deflection, coordinate, d.motor_symbols)
            if slope is None:
                tree.omitted.append(f"spring K{owner} = {value(f'K{owner}'):.6g}: its deflection is not linear "
                                    "in the joint coordinate")
            else:
                stiffness = value(f"K{owner}") * slope[0]
                reference = -slope[1] / slope[0]
        if value(f"Fo{owner}") != 0.0:
            tree.omitted.append(f"friction offset Fo{owner} = {value(f'Fo{owner}'):.6g}: a constant torque")
        element = Element(owner, terms, max(value(f"Fv{owner}"), 0.0), max(value(f"Fc{owner}"), 0.0),
                          max(value(f"Im{owner}"), 0.0), stiffness, reference)
        if any((element.damping, element.friction, element.armature, element.stiffness)):
            out.append(element)
    for known in d.known_torques:
        tree.omitted.append(f"known torque {known.name} on {known.coordinate.name} (a polynomial)")
    return out


def _linear_slope(deflection: sympy.Expr, coordinate: LinearCoordinate, motors) -> tuple[float, float] | None:
    """(s, s0) with deflection = s * (coordinate - offset) + s0, or None when it is not of that form."""
    coefficients = []
    for m in motors:
        c = sympy.diff(deflection, m)
        if c.free_symbols:
            return None
        coefficients.append(float(c))
    c = np.asarray(coefficients)
    scale = float(np.dot(c, coordinate.coefficients) / np.dot(coordinate.coefficients, coordinate.coefficients))
    residue = float(np.linalg.norm(c - scale * coordinate.coefficients))
    if residue > 1e-12 * max(float(np.linalg.norm(c)), 1e-300) or scale == 0:
        return None
    s0 = float(deflection.subs(dict.fromkeys(motors, 0)))
    return scale, s0


def _dvrk_limits(model: ArmModel, variant: str | None) -> list[tuple[float, float, float] | None]:
    """Per dVRK joint, its range and speed: a limited coordinate that is the joint itself, else the
    interval sum of limited coordinates that add up to it (an outer bound), else None."""
    d = model.description
    limits = d.limits_for(variant)
    names = [n for n in limits if n in d.limited_coordinates]
    W = np.array([dvrk_weights(d.limited_coordinates[n], model.A_inv) for n in names]).reshape(len(names), -1)
    out: list[tuple[float, float, float] | None] = []
    for j in range(d.dof):
        target = np.eye(d.dof)[j]
        exact = [n for n, w in zip(names, W, strict=True) if np.allclose(w, target, atol=1e-12)]
        if exact:
            out.append(limits[exact[0]])
            continue
        if not names:
            out.append(None)
            continue
        x, *_ = np.linalg.lstsq(W.T, target, rcond=None)
        x[np.abs(x) < 1e-12] = 0.0
        if np.linalg.norm(W.T @ x - target) > 1e-9:
            out.append(None)
            continue
        lo = sum(min(c * limits[n][0], c * limits[n][1]) for c, n in zip(x, names, strict=True))
        hi = sum(max(c * limits[n][0], c * limits[n][1]) for c, n in zip(x, names, strict=True))
        speed = sum(abs(c) * limits[n][2] for c, n in zip(x, names, strict=True))
        out.append((float(lo), float(hi), float(speed)))
    return out
