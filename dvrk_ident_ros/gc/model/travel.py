"""The cable's direction state per joint, from the joint positions alone (Dahl through a play).

MTM cables hold a pose with a torque that depends on the direction the joint
last travelled (Lin 2019 section III-A): Dahl's model of it turns a state h
from one branch (-1) to the other (+1) exponentially in the travel,

    p_i <- min(max(p_i, q_i - e_i), q_i + e_i)                 (a play of half-width e_i)
    h_i <- s + (h_i - s) exp(-|dp_i| / w),  s = sgn(dp_i)      (Dahl, exact for any step)

(dp_i: the change of the play's output p_i this sample; w: the travel over
which the cable's torque turns from one branch to the other). The play keeps
encoder jitter (one count back and forth) from turning the state: its
half-width e_i is 1.25 x the joint's encoder count, learnt as the smallest
position change seen below 10 mrad (w / 8 until one is seen, at least w / 100).
It delays a reversal by 2 e_i of travel: 0.4 mrad on the MTM's joints 1-3 (the
w / 100 floor at w = 0.02 rad), 7 mrad on its wrist pitch and yaw (3 mrad a
count), 15 mrad on its roll (6 mrad). The width w should span several counts. The travel counts whatever
the velocity: a slow final approach (a short move of one joint, the PID
settling) turns the cable as a fast one does.

One filter for the three places that need it: the travel blend of the
compensation law (gc/runtime/law.py, sample by sample, no arrays), and the pose-grid
recordings (the simulated collection and the bag loader), where it gives each
sampled pose the state its estimated joint's cable was in, so the fit
(gc/fitting/mlse.py) sees partly turned branches for what they are.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dvrk_ident_ros.errors import DataError

#: The travel over which the direction state turns (rad): the node's ``blend_travel`` default.
DEFAULT_TRAVEL = 0.02
PLAY = 0.125  # the play's half-width before a count is learnt, as a fraction of the travel width
PLAY_FLOOR = 0.01  # after: at least this fraction
COUNT_MARGIN = 1.25  # the half-width in encoder counts
COUNT_CEILING = 0.01  # rad: no count is learnt from a larger change (a motion or a jump, not one count)


class TravelState:
    """The direction state h (``state``, one per joint, 0 at start: neither branch) of joints whose
    positions are fed to :meth:`update` sample by sample."""

    def __init__(self, joints: int, width: float = DEFAULT_TRAVEL):
        if not width > 0:
            raise DataError(f"blend_travel {width}: the travel to turn the direction state must be > 0 rad")
        self.width = float(width)
        self.state = [0.0] * joints
        self._joints = joints
        self._play: list[float] | None = None  # the play's output p per joint
        self._last = [0.0] * joints  # the previous sample's position
        self._count = [math.inf] * joints  # the smallest position change seen: the encoder count
        self._half_width = [PLAY * self.width] * joints

    def update(self, q) -> list[float]:
        """Advance every joint's state by its travel through the play since the last sample; returns
        ``state`` (the same list every call)."""
        if self._play is None:
            self._play = [float(q[i]) for i in range(self._joints)]
            self._last = list(self._play)
            return self.state
        width = self.width
        for i in range(self._joints):
            x = float(q[i])
            change = abs(x - self._last[i])
            self._last[i] = x
            if 0.0 < change < self._count[i] and change < COUNT_CEILING:
                self._count[i] = change
                self._half_width[i] = max(PLAY_FLOOR * width, COUNT_MARGIN * change)
            p, e = self._play[i], self._half_width[i]
            moved = (x - e - p) if x - e > p else (x + e - p) if x + e < p else 0.0
            if moved != 0.0:
                self._play[i] = p + moved
                target = 1.0 if moved > 0.0 else -1.0
                self.state[i] = target + (self.state[i] - target) * math.exp(-abs(moved) / width)
        return self.state


def travel_states(positions: np.ndarray, width: float = DEFAULT_TRAVEL) -> np.ndarray:
    """The direction state after every sample of a recording (T x n positions, in time order)."""
    positions = np.asarray(positions, dtype=float)
    tracker = TravelState(positions.shape[1], width)
    out = np.empty_like(positions)
    for k, q in enumerate(positions.tolist()):
        out[k] = tracker.update(q)
    return out


@dataclass(frozen=True)
class Recording:
    """The joint positions of a pose-grid recording in time order (every state sample, moves included) and,
    per averaged pose, the indices of its samples: what the direction state of each pose is computed from,
    for any width."""

    positions: np.ndarray  # T x joints
    samples: tuple[np.ndarray, ...]  # per pose

    def select(self, mask: np.ndarray) -> Recording:
        """The poses of a boolean ``mask`` over them."""
        mask = np.asarray(mask)
        if mask.dtype != bool or len(mask) != len(self.samples):
            raise DataError(f"a Recording selects with a boolean mask over its {len(self.samples)} poses")
        return Recording(self.positions, tuple(s for s, keep in zip(self.samples, mask, strict=True) if keep))

    def branches(self, joints: np.ndarray, width: float = DEFAULT_TRAVEL) -> np.ndarray:
        """Per pose the mean direction state of its estimated joint (1-based ``joints``) over its samples."""
        states = travel_states(self.positions, width)
        return np.array([float(np.mean(states[s, j - 1])) for s, j in zip(self.samples, joints, strict=True)])
