"""The dVRK 2.4 console's own PSM and ECM gravity compensation (``kinematic_gc``), ROS-free.

The console (sawIntuitiveResearchKit 2.4, mtsIntuitiveResearchKitPSM.cpp / ECM.cpp) reads a "physical DH"
file: a serial modified-DH chain (Craig: T = RotX(alpha) TransX(A) RotZ(theta) TransZ(D), the joint added to
theta or D) whose links carry ``mass`` and a centre of mass ``cx cy cz`` in the link's frame. Every cycle it
maps the arm's first joints onto the chain (one actuated pitch drives three parallelogram joints), computes the
static torques that hold the chain against gravity (cisst robManipulator::CCG_MDH, zero velocity) for the
"up" vector 9.81 (0, sin p, cos p) of the arm's ``mounting_pitch`` p, and adds them to the PID's feed forward:

- PSM (7 links): chain q = (q1, 0, q2, -q2, q2, q3/2, q3/2), efforts (t0, t2 - t3 + t4, t6);
- ECM Si (6 links): chain q = (q1, 0, q2, -q2, q2, q3), efforts (t0, t2 - t3 + t4, t5, 0);
- ECM Classic (4 links): the chain is the arm's own, efforts t0..t3.

Static torques of a serial chain (the potential U = sum_j m_j up . c_j differentiated):

    t_i = sum_{j >= i} m_j (z_i x (c_j - o_i)) . up   (revolute i),   t_i = (sum_{j >= i} m_j) z_i . up   (prismatic)

with o_i, z_i the origin and z axis of link i's frame and c_j = o_j + R_j (cx, cy, cz)_j. They are linear in
each link's mass moments (m, m cx, m cy, m cz): :meth:`ConsoleChain.regressor` gives the columns, and
:func:`fit_moments` the moments that best reproduce an identified model's gravity (least squares, masses
kept positive, the directions the torques do not determine left at the template's values).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from dvrk_ident_ros.errors import DataError

#: m/s^2: the console's gravity
G = 9.81
#: kg: a link that carries mass moments in a fit keeps at least this mass (its centre of mass is m c / m)
MIN_FITTED_MASS = 0.01
#: m: a fitted link's centre of mass stays within this distance of its frame's origin. A chain link stands for
#: several bodies (the PSM's parallelogram links, its counterweight, the body that slides with the insertion on
#: the pitch axis): their combined centre of mass may lie beyond any one of them, up to about twice the longest
#: link (0.52 m)
MAX_COM_DISTANCE = 1.0


@dataclass(frozen=True)
class ChainLink:
    """One link of a physical DH chain, as the console's file gives it."""

    name: str
    alpha: float
    a: float
    theta: float
    d: float
    prismatic: bool = False
    active: bool = True
    offset: float = 0.0
    mass: float = 0.0
    com: tuple[float, float, float] = (0.0, 0.0, 0.0)  # m, in the link's frame


@dataclass(frozen=True)
class JointMap:
    """How the console maps the arm's joints onto its chain and the chain's torques back (per chain length)."""

    kind: str
    to_chain: np.ndarray  # links x arm joints read: chain q = to_chain @ q_arm
    to_arm: np.ndarray  # arm joints given x links: arm efforts = to_arm @ t
    endoscope_link: int | None = None  # the ECM: the console sets this link's mass to its endoscope's


def _map(kind: str, to_chain: list[list[float]], to_arm: list[list[float]], endoscope: int | None = None
         ) -> JointMap:
    return JointMap(kind, np.array(to_chain, dtype=float), np.array(to_arm, dtype=float), endoscope)


#: The console's maps, by the chain's number of links (mtsIntuitiveResearchKitPSM.cpp, ECM.cpp at 2.4).
JOINT_MAPS: dict[int, JointMap] = {
    7: _map("PSM", [[1, 0, 0], [0, 0, 0], [0, 1, 0], [0, -1, 0], [0, 1, 0], [0, 0, 0.5], [0, 0, 0.5]],
            [[1, 0, 0, 0, 0, 0, 0], [0, 0, 1, -1, 1, 0, 0], [0, 0, 0, 0, 0, 0, 1]]),
    6: _map("ECM Si", [[1, 0, 0], [0, 0, 0], [0, 1, 0], [0, -1, 0], [0, 1, 0], [0, 0, 1]],
            [[1, 0, 0, 0, 0, 0], [0, 0, 1, -1, 1, 0], [0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0]], endoscope=5),
    4: _map("ECM Classic", np.eye(4).tolist(), np.eye(4).tolist(), endoscope=2),
}


def up_vector(mounting_pitch: float) -> np.ndarray:
    """The console's gravity argument: the "up" acceleration 9.81 (0, sin p, cos p) in the chain's base."""
    return G * np.array([0.0, math.sin(mounting_pitch), math.cos(mounting_pitch)])


def mounting_pitch_of(gravity: np.ndarray) -> float:
    """The mounting pitch whose up vector is -``gravity`` (an arm description's gravity, base frame); a
    DataError when gravity has a component along x (no pitch gives it)."""
    up = -np.asarray(gravity, dtype=float)
    if abs(up[0]) > 1e-9 * max(1.0, float(np.linalg.norm(up))):
        raise DataError(f"gravity {np.asarray(gravity).tolist()} has an x component: the console's mounting pitch "
                        "tilts gravity about the base's x axis only")
    return math.atan2(up[1], up[2])


class ConsoleChain:
    """A physical DH chain and the console's map for its length: static torques and their regressor."""

    def __init__(self, links: tuple[ChainLink, ...] | list[ChainLink]):
        self.links = tuple(links)
        if len(self.links) not in JOINT_MAPS:
            raise DataError(f"a console gravity chain has {', '.join(map(str, sorted(JOINT_MAPS)))} links "
                            f"(PSM, ECM Si, ECM Classic), not {len(self.links)}")
        self.map = JOINT_MAPS[len(self.links)]
        self._alpha = np.array([link.alpha for link in self.links])
        self._a = np.array([link.a for link in self.links])
        self._theta = np.array([link.theta + (0.0 if link.prismatic else link.offset) for link in self.links])
        self._d = np.array([link.d + (link.offset if link.prismatic else 0.0) for link in self.links])
        self._prismatic = np.array([link.prismatic for link in self.links])
        self._mass = np.array([link.mass for link in self.links])
        self._first = np.array([link.mass * np.asarray(link.com) for link in self.links])  # m c, link frames

    @property
    def joints_read(self) -> int:
        """The arm joints the console reads (3 for the PSM and the ECM Si, 4 for the ECM Classic)."""
        return self.map.to_chain.shape[1]

    @property
    def joints_given(self) -> int:
        """The arm joints the console gives an effort (the ECM Si's roll gets 0)."""
        return self.map.to_arm.shape[0]

    @property
    def moments(self) -> np.ndarray:
        """(m, m cx, m cy, m cz) per link, flattened (4 x links)."""
        return np.concatenate([[link.mass, *(link.mass * np.asarray(link.com))] for link in self.links])

    def with_moments(self, moments: np.ndarray) -> ConsoleChain:
        """The chain with these mass moments (a massless link gets its centre of mass at its origin)."""
        x = np.asarray(moments, dtype=float).reshape(len(self.links), 4)
        links = []
        for link, (m, mx, my, mz) in zip(self.links, x, strict=True):
            com = (float(mx / m), float(my / m), float(mz / m)) if m > 0 else (0.0, 0.0, 0.0)
            links.append(replace(link, mass=float(max(m, 0.0)), com=com))
        return ConsoleChain(links)

    def frames(self, q_chain: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Base-frame rotations (N x L x 3 x 3) and origins (N x L x 3) of every link frame."""
        q = np.atleast_2d(np.asarray(q_chain, dtype=float))
        n, count = q.shape[0], len(self.links)
        theta = self._theta + np.where(self._prismatic, 0.0, q)
        d = self._d + np.where(self._prismatic, q, 0.0)
        ca, sa = np.cos(self._alpha), np.sin(self._alpha)
        ct, st = np.cos(theta), np.sin(theta)
        local = np.zeros((n, count, 3, 3))
        local[..., 0, 0], local[..., 0, 1] = ct, -st
        local[..., 1, 0], local[..., 1, 1], local[..., 1, 2] = st * ca, ct * ca, -sa
        local[..., 2, 0], local[..., 2, 1], local[..., 2, 2] = st * sa, ct * sa, ca
        shift = np.stack([np.broadcast_to(self._a, (n, count)), -sa * d, ca * d], axis=-1)
        R = np.empty((n, count, 3, 3))
        p = np.empty((n, count, 3))
        rot, origin = np.broadcast_to(np.eye(3), (n, 3, 3)), np.zeros((n, 3))
        for i in range(count):
            origin = origin + np.einsum("nij,nj->ni", rot, shift[:, i])
            rot = rot @ local[:, i]
            R[:, i], p[:, i] = rot, origin
        return R, p

    def chain_regressor(self, q_chain: np.ndarray, up: np.ndarray) -> np.ndarray:
        """Y (N x L x 4L): chain torques per mass moment (m, m cx, m cy, m cz) of each link."""
        R, p = self.frames(q_chain)
        n, count = p.shape[:2]
        Y = np.zeros((n, count, count, 4))
        z = R[..., 2]  # N x L x 3
        lever = np.cross(up, z)  # (z x r) . up = r . (up x z)
        for i in range(count):
            for j in range(i, count):
                if self._prismatic[i]:
                    Y[:, i, j, 0] = z[:, i] @ up
                else:
                    Y[:, i, j, 0] = np.einsum("nk,nk->n", lever[:, i], p[:, j] - p[:, i])
                    Y[:, i, j, 1:] = np.einsum("nkc,nk->nc", R[:, j], lever[:, i])
        return Y.reshape(n, count, 4 * count)

    def regressor(self, q_arm: np.ndarray, mounting_pitch: float) -> np.ndarray:
        """Y (N x joints_given x 4L): the efforts the console adds to the arm's first joints, per mass moment."""
        q = np.atleast_2d(np.asarray(q_arm, dtype=float))
        k = self.joints_read
        if q.shape[1] < k:
            raise DataError(f"the {self.map.kind} gravity chain reads {k} joints, got {q.shape[1]}")
        Y = self.chain_regressor(q[:, :k] @ self.map.to_chain.T, up_vector(mounting_pitch))
        return np.einsum("al,nlc->nac", self.map.to_arm, Y)

    def torques(self, q_arm: np.ndarray, mounting_pitch: float) -> np.ndarray:
        """The efforts (N x joints_given) the console adds to the arm's first joints at positions ``q_arm``:
        t_i = (up x z_i) . (S_i - M_i o_i), S_i and M_i the first moment and mass of links i.., in O(links)."""
        q = np.atleast_2d(np.asarray(q_arm, dtype=float))
        k = self.joints_read
        if q.shape[1] < k:
            raise DataError(f"the {self.map.kind} gravity chain reads {k} joints, got {q.shape[1]}")
        R, p = self.frames(q[:, :k] @ self.map.to_chain.T)
        up = up_vector(mounting_pitch)
        first = self._mass[:, None] * p + np.einsum("nlij,lj->nli", R, self._first)  # m_j c_j, base frame
        S = np.cumsum(first[:, ::-1], axis=1)[:, ::-1]
        M = np.cumsum(self._mass[::-1])[::-1]
        z = R[..., 2]
        revolute = np.einsum("nli,nli->nl", np.cross(up, z), S - M[:, None] * p)
        t = np.where(self._prismatic, M * (z @ up), revolute)
        return t @ self.map.to_arm.T

    def document(self, comment: str = "") -> dict:
        """The console's file (its ``DH`` object): plain JSON, every mass written (cisst's default differs)."""
        joints = []
        for link in self.links:
            entry: dict = {"name": link.name, "alpha": link.alpha, "A": link.a, "theta": link.theta, "D": link.d,
                           "type": "prismatic" if link.prismatic else "revolute",
                           "mode": "active" if link.active else "passive"}
            if link.offset:
                entry["offset"] = link.offset
            entry.update({"mass": link.mass, "cx": link.com[0], "cy": link.com[1], "cz": link.com[2]})
            joints.append(entry)
        out: dict = {"DH": {"convention": "modified", "joints": joints}}
        if comment:
            out = {"comment": comment, **out}
        return out


_COMMENTS = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', re.S)


def _strip_comments(text: str) -> str:
    """JSON with the // and /* */ comments the dVRK's files carry (jsoncpp reads them) made plain."""
    return _COMMENTS.sub(lambda m: m.group(1) or "", text)


def parse_chain(document: dict, source: str = "the file") -> ConsoleChain:
    """A chain from the console's document (its ``DH`` object, ``links`` or ``joints``)."""
    dh = document.get("DH") if isinstance(document, dict) else None
    if not isinstance(dh, dict):
        raise DataError(f"{source}: no \"DH\" object (a dVRK kinematic file has one)")
    if str(dh.get("convention", "")).lower() != "modified":
        raise DataError(f"{source}: the console's gravity chain is modified DH (\"convention\": \"modified\")")
    entries = dh.get("links", dh.get("joints"))
    if not isinstance(entries, list):
        raise DataError(f"{source}: DH has no \"links\" or \"joints\" array")
    links = []
    for i, e in enumerate(entries):
        try:
            kind = str(e.get("type", "revolute")).lower()
            if kind not in ("revolute", "hinge", "prismatic", "slider"):
                raise DataError(f"{source}: link {i + 1}: type {kind!r}: revolute or prismatic")
            link = ChainLink(name=str(e.get("name", f"link{i + 1}")), alpha=float(e.get("alpha", 0.0)),
                             a=float(e.get("A", 0.0)), theta=float(e.get("theta", 0.0)), d=float(e.get("D", 0.0)),
                             prismatic=kind in ("prismatic", "slider"),
                             active=str(e.get("mode", "active")).lower() == "active",
                             offset=float(e.get("offset", 0.0)), mass=float(e.get("mass", 0.0)),
                             com=(float(e.get("cx", 0.0)), float(e.get("cy", 0.0)), float(e.get("cz", 0.0))))
        except (AttributeError, TypeError, ValueError) as exc:
            raise DataError(f"{source}: link {i + 1}: {exc}") from exc
        if not all(math.isfinite(v) for v in (link.alpha, link.a, link.theta, link.d, link.offset, link.mass,
                                               *link.com)) or link.mass < 0:
            raise DataError(f"{source}: link {i + 1} ({link.name}): values must be finite, the mass >= 0")
        links.append(link)
    try:
        return ConsoleChain(links)
    except DataError as exc:
        raise DataError(f"{source}: {exc}") from exc


def load_chain(path: str | Path) -> ConsoleChain:
    """The chain of a console physical-DH file (the dVRK's shipped files, with comments, or ours)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    try:
        document = json.loads(_strip_comments(text))
    except ValueError as exc:
        raise DataError(f"{path}: not JSON ({exc})") from exc
    return parse_chain(document, str(path))


@dataclass(frozen=True)
class MomentFit:
    """Mass moments of a chain fitted to target efforts."""

    chain: ConsoleChain
    rms: np.ndarray  # per arm joint read, N m (N), over the check poses
    worst: np.ndarray  # largest |error| per joint over the check poses
    reachable: np.ndarray  # per joint: whether a link with mass gives it an effort (not: the console gives it 0)


def fit_moments(template: ConsoleChain, q_fit: np.ndarray, target_fit: np.ndarray, q_check: np.ndarray,
                target_check: np.ndarray, mounting_pitch: float, prior_weight: float = 1e-8,
                max_com_distance: float = MAX_COM_DISTANCE) -> MomentFit:
    """The mass moments of ``template``'s active links with a mass that best reproduce ``target_fit`` (N x k
    efforts of the arm's first k joints at ``q_fit``): least squares with each fitted link's mass at least
    MIN_FITTED_MASS and its centre of mass within ``max_com_distance`` of its frame's origin (|m c| <= r m: a
    second-order cone), plus a small pull (``prior_weight`` relative to the data) towards the template's
    moments, which fixes the directions the efforts do not determine. A massless link stays massless (the PSM's
    first insertion link, whose force the console ignores); the ECM's insertion link keeps the template's mass,
    which the console replaces by its endoscope's, and only its centre is fitted. The residual is measured at
    other poses (``q_check``)."""
    import cvxpy as cp

    Y = template.regressor(q_fit, mounting_pitch)
    k = template.joints_given
    A, b = Y.reshape(-1, Y.shape[-1]), np.asarray(target_fit, dtype=float)[:, :k].reshape(-1)
    x0 = template.moments
    fitted = [i for i, link in enumerate(template.links) if link.active and link.mass > 0]
    x = cp.Variable(x0.size)
    scale = max(float(np.linalg.norm(A, 2)), 1e-12)
    objective = cp.sum_squares(A @ x - b) + prior_weight * scale ** 2 * cp.sum_squares(x - x0)
    constraints = []
    for i in range(len(template.links)):
        m, mc = x[4 * i], x[4 * i + 1:4 * i + 4]
        if i == template.map.endoscope_link:  # the console writes its endoscope's mass there: the centre only
            constraints += [m == x0[4 * i], cp.norm(mc, 2) <= max_com_distance * x0[4 * i]]
        elif i in fitted:
            constraints += [m >= MIN_FITTED_MASS, cp.norm(mc, 2) <= max_com_distance * m]
        else:
            constraints += [x[4 * i:4 * i + 4] == x0[4 * i:4 * i + 4]]
    problem = cp.Problem(cp.Minimize(objective), constraints)
    try:
        problem.solve(solver=cp.CLARABEL)
    except cp.error.SolverError as exc:
        raise DataError(f"the chain's mass moments could not be fitted: {exc}") from exc
    if problem.status not in ("optimal", "optimal_inaccurate") or x.value is None:
        raise DataError(f"the chain's mass moments could not be fitted: the solver says {problem.status}")
    moments = np.asarray(x.value, dtype=float).copy()
    for i in range(len(template.links)):
        if i not in fitted:
            moments[4 * i:4 * i + 4] = x0[4 * i:4 * i + 4]  # exactly as the template (not the solver's 1e-12)
        elif i == template.map.endoscope_link:
            moments[4 * i] = x0[4 * i]
    chain = template.with_moments(moments)
    error = chain.torques(q_check, mounting_pitch) - np.asarray(target_check, dtype=float)[:, :k]
    columns = [4 * i + c for i in range(len(template.links))
               if i in fitted or i == template.map.endoscope_link for c in range(4)]
    reachable = np.abs(Y[:, :, columns]).max(axis=(0, 2)) > 0.0
    return MomentFit(chain, np.sqrt(np.mean(error ** 2, axis=0)), np.max(np.abs(error), axis=0), reachable)
