"""A simulated arm's own moves (move_jp, homing): quintic profiles in dVRK joint space (ROS-free).

A move from q0 to q1 over T s: q(t) = q0 + s(t / T) (q1 - q0), s(u) = 10 u^3 - 15 u^4 + 6 u^5 (at rest at both
ends); T = max over the joints of 15/8 |q1 - q0| / (ratio v_max) (the quintic's peak speed is 15/8 its mean),
``ratio`` the dVRK's trajectory_j/set_ratio. A move_jp's end is a goal-reached event True, its interruption
False; the homing move gives none.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dvrk_ident_ros.errors import DvrkIdentError


def quintic(s: float) -> tuple[float, float]:
    """Normalised quintic 10s^3 - 15s^4 + 6s^5 and its derivative, s in [0, 1]."""
    s = min(max(s, 0.0), 1.0)
    return s ** 3 * (10 - 15 * s + 6 * s * s), 30 * s * s * (1 - s) ** 2


@dataclass(frozen=True)
class Move:
    """One move: from ``q_from`` at ``start`` (simulated s) to ``q_to`` in ``duration`` s."""

    start: float
    q_from: np.ndarray
    q_to: np.ndarray
    duration: float
    homing: bool = False  # the homing move: no goal-reached event


class JointMoves:
    """The running move (None: none), the trajectory ratio, the goal-reached events not collected yet, and the
    last move_jp's goal as it was asked (``requested``, before the clip to the limits)."""

    def __init__(self, move_speed: np.ndarray) -> None:
        self.move_speed = move_speed  # per joint: the peak speed at ratio 1 (rad/s, m/s)
        self.ratio = 1.0  # trajectory_j/set_ratio: the moves' speeds, scaled
        self.running: Move | None = None
        self.requested = np.zeros(np.size(move_speed))
        self.goal_events: list[bool] = []

    @property
    def commanded(self) -> bool:
        """A move_jp runs (not the homing)."""
        return self.running is not None and not self.running.homing

    def duration(self, start: np.ndarray, goal: np.ndarray) -> float:
        """A quintic's duration at the configured peak speeds times the trajectory ratio (its peak speed is 15/8
        the mean)."""
        return float(np.max(15.0 / 8.0 * np.abs(goal - start) / (self.ratio * self.move_speed)))

    def set_ratio(self, ratio: float) -> None:
        """The dVRK's ``trajectory_j/set_ratio``: the moves' peak speeds scaled by ``ratio``, in (0, 1]; from the
        next move on. DvrkIdentError (nothing changes) outside that range."""
        ratio = float(ratio)
        if not 0.0 < ratio <= 1.0:
            raise DvrkIdentError(f"trajectory_j/set_ratio {ratio}: expected a value in (0, 1]")
        self.ratio = ratio

    def cancel(self) -> bool:
        """Stop the running move (a move_jp's: a goal-reached event False); whether one ran."""
        move, self.running = self.running, None
        if move is not None and not move.homing:
            self.goal_events.append(False)
        return move is not None

    def profile(self, now: float) -> tuple[np.ndarray, np.ndarray, bool]:
        """The running move's setpoint at ``now`` (position, velocity) and whether the move ended (then its
        velocity is zero, a move_jp's goal-reached event True noted, and no move runs)."""
        move = self.running
        assert move is not None
        s, ds = quintic((now - move.start) / move.duration)
        q = move.q_from + s * (move.q_to - move.q_from)
        qd = ds / move.duration * (move.q_to - move.q_from)
        if now - move.start < move.duration:
            return q, qd, False
        if not move.homing:
            self.goal_events.append(True)
        self.running = None
        return q, np.zeros(q.size), True

    def pop_goal_events(self) -> list[bool]:
        """Goal-reached events since the last call: True when a move_jp ended, False when it was cut short."""
        events, self.goal_events = self.goal_events, []
        return events
