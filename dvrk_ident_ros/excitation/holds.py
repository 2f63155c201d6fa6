"""Static holds: random poses for the gravity refit of an identified model (gc/static_refit.py), as a pose grid
the player plays (move_jp, settle, sample) and the recorder records.

The poses are drawn uniformly in the central ``fraction`` of every joint's range (the arm description's
hardware limits), inside every limit (coupled coordinates too), in random order: each pose is reached from a
random side, so the static friction a hold carries averages out over the holds. One sweep (``kind:
static_holds``), ``settle_time`` long enough for the PID to settle and ``samples_per_pose`` for a hold of
``gc refit``'s minimum length (1.5 s at rest, its first second left out).
"""
from __future__ import annotations

import numpy as np

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.safety import CommandChecker

HOLDS_KIND = "static_holds"
DEFAULT_POSES = 30
DEFAULT_SETTLE = 2.0  # s: the PID's settling after a move (1 s left 0.9 mm of drift on the simulated PSM)
DEFAULT_SAMPLES = 100  # at 100 Hz: 1 s sampled after the settle
MAX_DRAWS = 10_000  # random draws per pose before the limits are called too tight


def random_poses(checker: CommandChecker, count: int, rng: np.random.Generator, fraction: float = 0.6,
                 box: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Poses (count x dof, dVRK joint space) drawn uniformly in the central ``fraction`` of every joint's range
    (or of ``box``, e.g. the range a compensation's data covered), inside every limit of ``checker``."""
    n = checker.dof
    lo, hi = np.full(n, -1.0), np.full(n, 1.0)
    if box is not None:
        lo, hi = np.asarray(box[0], dtype=float), np.asarray(box[1], dtype=float)
    else:  # per-joint box from the limited coordinates that are single joints
        for row, lower, upper in zip(checker._rows, checker.lower, checker.upper, strict=True):
            nz = np.flatnonzero(np.abs(row) > 1e-12)
            if len(nz) == 1 and abs(row[nz[0]] - 1.0) < 1e-12:
                lo[nz[0]], hi[nz[0]] = lower, upper
    mid, half = (lo + hi) / 2, (hi - lo) / 2 * fraction
    out: list[np.ndarray] = []
    draws = 0
    while len(out) < count:
        draws += 1
        if draws > MAX_DRAWS * max(count, 1):
            raise DataError(f"{len(out)} of {count} poses inside the limits after {draws - 1} draws: the central "
                            f"{100 * fraction:g} % of the ranges is outside the coupled limits")
        q = rng.uniform(mid - half, mid + half)
        if checker.first_position_violation(q[None]) is None:
            out.append(q)
    return np.array(out).reshape(-1, n)


def holds_grid(arm: str, checker: CommandChecker, poses: int = DEFAULT_POSES, seed: int = 0,
               fraction: float = 0.9, settle: float = DEFAULT_SETTLE, samples: int = DEFAULT_SAMPLES) -> dict:
    """The pose grid of ``poses`` static holds of ``arm`` (for :func:`~dvrk_ident_ros.excitation.files.save_grid`)."""
    if poses < 1 or not 0.0 < fraction <= 1.0 or not settle >= 0.0 or samples < 1:
        raise DataError(f"holds: {poses} poses, fraction {fraction}, settle {settle} s, {samples} samples: expected "
                        "poses >= 1, 0 < fraction <= 1, settle >= 0, samples >= 1")
    q = random_poses(checker, poses, np.random.default_rng(seed), fraction=fraction)
    return {"kind": HOLDS_KIND, "arm": arm.upper(), "coordinates": "dvrk", "units": "rad (m for a prismatic joint)",
            "settle_time": float(settle), "samples_per_pose": int(samples),
            "comment": f"{poses} static holds in the central {100 * fraction:g} % of the ranges, seed {seed}: "
                       "dvrk-ident gc refit fits the identified model's gravity to them",
            "sweeps": [{"estimated_joint": None, "auxiliary_joint": None, "auxiliary_value": None,
                        "direction": "positive", "poses": q.tolist()}]}
