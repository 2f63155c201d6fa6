"""The hold test of a gc calibration (ROS-free, Lin 2019 section V-C): poses inside the recorded range but as
far as possible from every grid pose, the drift of the arm's tip while the new file holds it there."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dvrk_ident_ros.arm.registry import arm_spec
from dvrk_ident_ros.errors import StepFailedError


def hold_poses(grid_poses: np.ndarray, box: tuple[np.ndarray, np.ndarray], count: int, rng: np.random.Generator,
               admissible: Callable[[np.ndarray], bool], candidates: int = 400) -> np.ndarray:
    """``count`` poses inside the central 80 % of ``box`` (the recorded range) and ``admissible`` (the arm's
    limits), each the farthest from every grid pose among ``candidates`` random ones (held-out poses)."""
    lo, hi = (np.asarray(b, dtype=float) for b in box)
    mid, half = (lo + hi) / 2, (hi - lo) / 2 * 0.8
    chosen: list[np.ndarray] = []
    grid = np.asarray(grid_poses, dtype=float)
    tries = 0
    while len(chosen) < count:
        pool = [q for q in rng.uniform(mid - half, mid + half, (candidates, len(lo))) if admissible(q)]
        tries += 1
        if not pool:
            if tries > 20:
                raise StepFailedError("no hold pose inside the recorded range satisfies the arm's limits")
            continue
        pool_arr = np.array(pool)
        taken = np.vstack([grid, *chosen]) if chosen else grid
        distance = np.min(np.linalg.norm(pool_arr[:, None, :] - taken[None, :, :], axis=2), axis=1)
        chosen.append(pool_arr[int(np.argmax(distance))])
    return np.array(chosen)


@dataclass(frozen=True)
class Drift:
    """One hold: the pose at the first command and ``hold_time`` later."""

    q_start: np.ndarray
    q_end: np.ndarray
    tip_mm: float
    tip_deg: float
    stopped: bool = False  # the compensation's take-over guard stopped it (the file pulled the arm away)

    @property
    def joint(self) -> np.ndarray:
        return np.abs(self.q_end - self.q_start)


def drift_of(q_start: np.ndarray, q_end: np.ndarray, tip: Callable[[np.ndarray], np.ndarray]) -> Drift:
    """Joint and tip drift between two poses; ``tip(q)``: the last frame's 4x4 pose (dVRK joints)."""
    start, end = tip(q_start), tip(q_end)
    cos = np.clip((np.trace(start[:3, :3].T @ end[:3, :3]) - 1) / 2, -1.0, 1.0)
    return Drift(np.asarray(q_start, float), np.asarray(q_end, float),
                 float(1e3 * np.linalg.norm(end[:3, 3] - start[:3, 3])), float(np.degrees(np.arccos(cos))))


def tip_function(arm: str) -> Callable[[np.ndarray], np.ndarray]:
    """The arm model's forward kinematics to its last frame, in dVRK joint coordinates."""
    from dvrk_ident_ros.model.arm_model import load_model

    model = load_model(arm_spec(arm).model)
    return lambda q: model.forward_kinematics(model.motor_from_dvrk(np.asarray(q, float))[None])[0, -1]


def limits_check(arm: str) -> Callable[[np.ndarray], bool]:
    """Whether a pose is inside the arm's position limits (its variant's)."""
    from dvrk_ident_ros.model.arm_model import load_model
    from dvrk_ident_ros.safety import CommandChecker

    checker = CommandChecker(load_model(arm_spec(arm).model), arm, margin=0.05)
    return lambda q: checker.first_position_violation(np.asarray(q, float)[None]) is None


# -- report ---------------------------------------------------------------------------------------------------------
