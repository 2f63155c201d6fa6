"""The test hook ``simulation/freeze_state`` (ROS-free): the arm's control loop stalls behind a live bridge.

From the next state period on, every joint state topic repeats that period's sample and its stamp for the
duration asked (simulated time; the physics and the events run on). The bridge converts the repeated stamp from
the arm's clock anew each time: it varies by FROZEN_STAMP_JITTER either way (arm_samples.REPEAT_TOLERANCE).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dvrk_ident_ros.errors import DvrkIdentError
from dvrk_ident_ros.sim.arm import Sample

#: s: a frozen sample's stamp, published again, varies this much either way (the bridge's two clock reads)
FROZEN_STAMP_JITTER = 5e-6


@dataclass(frozen=True)
class Published:
    """A state period's sample, its stamp (s) and the built-in compensation's torques."""

    sample: Sample
    stamp: float
    builtin: np.ndarray


class StateFreeze:
    """Whether a state period publishes the arm's current sample or a frozen one."""

    def __init__(self, seed: int) -> None:
        self._jitter = np.random.default_rng(seed)
        self._asked: float | None = None  # s: a freeze asked for, starting at the next state period
        self._frozen: tuple[float, Published] | None = None  # until (simulated s), what is published again
        self.thawed = False  # the last call ended a freeze

    def ask(self, seconds: float) -> None:
        """Freeze the state for ``seconds`` from the next state period (DvrkIdentError: not a duration)."""
        if not (math.isfinite(seconds) and seconds >= 0.0):
            raise DvrkIdentError(f"freeze_state {seconds}: expected a duration >= 0 s")
        self._asked = seconds

    def frozen(self, now: float, stamp: float, current: Callable[[], tuple[Sample, np.ndarray]]) -> Published | None:
        """The frozen sample (its stamp jittered) while a freeze lasts at simulated time ``now``, else None:
        publish the current one (``thawed``: a freeze just ended). A freeze asked for begins with this period's
        (``current()``, ``stamp``)."""
        self.thawed = False
        if self._asked is not None:
            sample, builtin = current()
            self._frozen = (now + self._asked, Published(sample, stamp, builtin))
            self._asked = None
        if self._frozen is None:
            return None
        until, published = self._frozen
        if now >= until:
            self._frozen, self.thawed = None, True
            return None
        jitter = float(self._jitter.uniform(-FROZEN_STAMP_JITTER, FROZEN_STAMP_JITTER))
        return Published(published.sample, published.stamp + jitter, published.builtin)

