"""The dVRK console's own kinematics of an arm (ROS-free): the DH chain it computes ``measured_cp``, the
Jacobians and the kinematics services from (sawIntuitiveResearchKit share/kinematic and share/tool files;
cisst robManipulator::ForwardKinematics), so that a simulated arm reports its tip in the console's frames.

Per link (alpha, a, theta, d, offset): a revolute joint adds q + offset to theta, a prismatic one to d; alpha
+-1.5708 is read as +-pi/2, as cisst reads it (its offsets are taken as written). Standard DH:
A = Rz(theta) Tz(d) Tx(a) Rx(alpha); modified (Craig): A = Rx(alpha) Tx(a) Rz(theta) Tz(d). The tip:

    T(q) = A_1(q_1) ... A_n(q_n) T_tool

with ``T_tool`` the tool-tip offset, appended only when every link is asked for (``links`` < n gives link
``links``'s frame, 0 the base: the console's ``forward_kinematics`` with fewer joints).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.files import read_document

CONVENTIONS = ("standard", "modified")


def _snap(alpha: float) -> float:
    return float(np.copysign(np.pi / 2, alpha)) if abs(abs(alpha) - 1.5708) < 1e-12 else alpha


@dataclass(frozen=True)
class ConsoleKinematics:
    """A console chain: per link (alpha, a, theta, d, offset) and whether the joint is prismatic."""

    convention: str
    alpha: np.ndarray
    a: np.ndarray
    theta: np.ndarray
    d: np.ndarray
    offset: np.ndarray
    prismatic: np.ndarray
    tool_tip: np.ndarray
    source: str = ""

    @property
    def joints(self) -> int:
        return int(self.alpha.size)

    def forward(self, q: np.ndarray, links: int | None = None) -> np.ndarray:
        """The frames (B x 4 x 4) of link ``links`` (None: the tool tip, every link and the tool-tip offset) at
        joint positions ``q`` (B x n, or n; only the first ``links`` columns are read)."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        count = self.joints if links is None else int(links)
        if not 0 <= count <= self.joints or q.shape[1] < count:
            raise DataError(f"console kinematics: link {count} of {self.joints} with {q.shape[1]} joint positions")
        batch = q.shape[0]
        T = np.broadcast_to(np.eye(4), (batch, 4, 4)).copy()
        for i in range(count):
            theta = self.theta[i] + (0.0 if self.prismatic[i] else self.offset[i] + q[:, i])
            d = self.d[i] + (self.offset[i] + q[:, i] if self.prismatic[i] else 0.0)
            theta, d = np.broadcast_to(theta, (batch,)), np.broadcast_to(d, (batch,))
            ca, sa, a = np.cos(self.alpha[i]), np.sin(self.alpha[i]), self.a[i]
            ct, st = np.cos(theta), np.sin(theta)
            A = np.zeros((batch, 4, 4))
            A[:, 3, 3] = 1.0
            if self.convention == "standard":
                A[:, 0, 0], A[:, 0, 1], A[:, 0, 2], A[:, 0, 3] = ct, -st * ca, st * sa, a * ct
                A[:, 1, 0], A[:, 1, 1], A[:, 1, 2], A[:, 1, 3] = st, ct * ca, -ct * sa, a * st
                A[:, 2, 1], A[:, 2, 2], A[:, 2, 3] = sa, ca, d
            else:
                A[:, 0, 0], A[:, 0, 1], A[:, 0, 3] = ct, -st, a
                A[:, 1, 0], A[:, 1, 1], A[:, 1, 2], A[:, 1, 3] = st * ca, ct * ca, -sa, -sa * d
                A[:, 2, 0], A[:, 2, 1], A[:, 2, 2], A[:, 2, 3] = st * sa, ct * sa, ca, ca * d
            T = T @ A
        return T @ self.tool_tip if count == self.joints else T


def parse_kinematics(document: dict, source: str = "the file") -> ConsoleKinematics:
    convention = str(document.get("convention", "")).lower()
    if convention not in CONVENTIONS:
        raise DataError(f"{source}: convention {convention!r}, expected one of {', '.join(CONVENTIONS)}")
    rows = document.get("links")
    if not isinstance(rows, list) or not rows:
        raise DataError(f"{source}: 'links' must list [alpha, a, theta, d, offset, r|p] per link")
    values, prismatic = [], []
    for k, row in enumerate(rows, 1):
        if not isinstance(row, list) or len(row) != 6 or row[5] not in ("r", "p"):
            raise DataError(f"{source}: link {k} {row!r}: expected [alpha, a, theta, d, offset, r|p]")
        try:
            numbers = [float(v) for v in row[:5]]
        except (TypeError, ValueError) as exc:
            raise DataError(f"{source}: link {k} {row!r}: {exc}") from exc
        if not all(np.isfinite(numbers)):
            raise DataError(f"{source}: link {k} {row!r}: not finite")
        values.append(numbers)
        prismatic.append(row[5] == "p")
    tool = np.asarray(document.get("tool_tip", np.eye(4).tolist()), dtype=float)
    if tool.shape != (4, 4) or not np.allclose(tool[:3, :3] @ tool[:3, :3].T, np.eye(3), atol=1e-9) \
            or not np.allclose(tool[3], [0, 0, 0, 1]):
        raise DataError(f"{source}: tool_tip must be a 4x4 rigid transform")
    table = np.array(values)
    return ConsoleKinematics(convention, np.array([_snap(x) for x in table[:, 0]]), table[:, 1], table[:, 2],
                             table[:, 3], table[:, 4], np.array(prismatic), tool, source)


def load_kinematics(path: str | Path) -> ConsoleKinematics:
    path = Path(path)
    document = read_document(path)
    if not isinstance(document, dict):
        raise DataError(f"{path}: expected a mapping (convention, links, tool_tip)")
    return parse_kinematics(document, str(path))
