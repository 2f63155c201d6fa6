"""Static holds: random poses for the gravity refit of an identified model (gc/fitting/static_refit.py), as a pose grid
the player plays (move_jp, settle, sample) and the recorder records.

The poses lie in the central ``fraction`` of every joint's range (the arm description's hardware limits),
inside every limit (coupled coordinates too). A hold carries the static friction the joint
stuck with, up to its Coulomb friction, and which side the joint came from decides much of its sign. Two
designs (``approach``):

- ``both_sides`` (the default): the poses of a Latin hypercube (every joint held near both ends of its
  range, however few the poses), each pose p held four times, as p + d, p, p - d, p (d: 2 % of every
  joint's range): p itself once reached from above on every joint and once from below, so the friction of its
  two holds cancels in part (p + d and p - d are holds too, from whichever side the arm came);
- ``random``: every hold a pose of its own, in random order, each reached from a random side.

On the simulated PSM with static friction on joints 1-3 (``python -m bench drift``) the both-sides design
left the refitted compensation less drift at equal arm time. One sweep (``kind: static_holds``),
``settle_time`` long enough for the PID to settle and ``samples_per_pose`` for a hold of ``gc refit``'s
minimum length (1.5 s at rest, its first second left out).
"""
from __future__ import annotations

import numpy as np

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.safety import CommandChecker

HOLDS_KIND = "static_holds"
APPROACHES = ("both_sides", "random")
DEFAULT_POSES = 32  # holds: 8 poses x 4 with both_sides
APPROACH_OFFSET = 0.02  # d, a fraction of each joint's range: p + d, p, p - d, p
DEFAULT_SETTLE = 2.0  # s: the PID's settling after a move (1 s left drift on the simulated PSM: docs/results.md)
DEFAULT_SAMPLES = 100  # at 100 Hz: 1 s sampled after the settle
MAX_DRAWS = 10_000  # random draws per pose before the limits are called too tight
REPAIRS = 200  # strip trades per pose before a Latin hypercube frees its most distal stratified joint


def joint_ranges(checker: CommandChecker) -> tuple[np.ndarray, np.ndarray]:
    """Per joint (dVRK joint space): the lower and upper limit of the limited coordinates that are that joint
    alone (-1, 1 where none is)."""
    n = checker.dof
    lo, hi = np.full(n, -1.0), np.full(n, 1.0)
    for row, lower, upper in zip(checker._rows, checker.lower, checker.upper, strict=True):
        nz = np.flatnonzero(np.abs(row) > 1e-12)
        if len(nz) == 1 and abs(row[nz[0]] - 1.0) < 1e-12:
            lo[nz[0]], hi[nz[0]] = lower, upper
    return lo, hi


def random_poses(checker: CommandChecker, count: int, rng: np.random.Generator, fraction: float = 0.6,
                 box: tuple[np.ndarray, np.ndarray] | None = None, offset: np.ndarray | None = None) -> np.ndarray:
    """Poses (count x dof, dVRK joint space) drawn uniformly in the central ``fraction`` of every joint's range
    (or of ``box``, e.g. the range a compensation's data covered), inside every limit of ``checker``; with
    ``offset`` (dof), q + offset and q - offset inside every limit too."""
    n = checker.dof
    if box is not None:
        lo, hi = np.asarray(box[0], dtype=float), np.asarray(box[1], dtype=float)
    else:
        lo, hi = joint_ranges(checker)
    mid, half = (lo + hi) / 2, (hi - lo) / 2 * fraction
    out: list[np.ndarray] = []
    draws = 0
    while len(out) < count:
        draws += 1
        if draws > MAX_DRAWS * max(count, 1):
            raise DataError(f"{len(out)} of {count} poses inside the limits after {draws - 1} draws: the central "
                            f"{100 * fraction:g} % of the ranges is outside the coupled limits")
        q = rng.uniform(mid - half, mid + half)
        tried = q[None] if offset is None else np.stack([q, q + offset, q - offset])
        if checker.first_position_violation(tried) is None:
            out.append(q)
    return np.array(out).reshape(-1, n)


def stratified_poses(checker: CommandChecker, count: int, rng: np.random.Generator, fraction: float = 0.6,
                     offset: np.ndarray | None = None) -> np.ndarray:
    """Poses (count x dof) of a Latin hypercube in the central ``fraction`` of every joint's range (McKay,
    Beckman and Conover 1979): each joint's range cut into ``count`` equal strips, one pose in each, the strips
    paired at random across joints; inside every limit of ``checker`` (with ``offset``, q + offset and
    q - offset too): while a pose is not, one of its joints trades strips with another pose and both are drawn
    again inside their strips (still one pose a strip). Where coupled limits leave some strip no pose (a PSM's
    jaw wide open allows its wrist yaw little), the most distal joint is drawn uniformly instead, then the next:
    the proximal joints, which carry the gravity a refit needs, are held near both ends of their ranges, as a few
    uniform draws need not be (a refit is then an extrapolation there)."""
    lo, hi = joint_ranges(checker)
    low, width = (lo + hi) / 2 - (hi - lo) / 2 * fraction, (hi - lo) * fraction / max(count, 1)
    for stratified in range(checker.dof, 0, -1):
        poses = _hypercube(checker, count, rng, low, width, stratified, offset)
        if poses is not None:
            return poses
    raise DataError(f"no Latin hypercube of {count} poses inside the limits in the central {100 * fraction:g} % of "
                    "the ranges: use fewer poses or the random design")


def _hypercube(checker: CommandChecker, count: int, rng: np.random.Generator, low: np.ndarray, width: np.ndarray,
               stratified: int, offset: np.ndarray | None) -> np.ndarray | None:
    """:func:`stratified_poses` with its first ``stratified`` joints in strips (``low`` + k ``width``), the
    others drawn uniformly; None when REPAIRS trades a pose leave one outside the limits."""
    n = checker.dof
    strips = np.stack([rng.permutation(count) for _ in range(n)], axis=1).astype(float)
    out = np.empty((count, n))
    in_strip = np.arange(n) < stratified

    def draw(k: int) -> bool:
        cell = strips[k].copy()
        cell[stratified:] = rng.uniform(size=n - stratified) * count  # the free joints: anywhere in range
        out[k] = low + (cell + rng.uniform(size=n) * in_strip) * width
        tried = out[k][None] if offset is None else np.stack([out[k], out[k] + offset, out[k] - offset])
        return checker.first_position_violation(tried) is None

    inside = [draw(k) for k in range(count)]
    for _ in range(REPAIRS * max(count, 1)):
        if all(inside):
            return out
        k = inside.index(False)
        m, j = int(rng.integers(count)), int(rng.integers(stratified))
        strips[[k, m], j] = strips[[m, k], j]
        inside[k], inside[m] = draw(k), draw(m)
    return out if all(inside) else None


def both_sides(poses: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """Each pose p as p + offset, p, p - offset, p (module docstring)."""
    return np.concatenate([np.stack([p + offset, p, p - offset, p]) for p in poses]).reshape(-1, poses.shape[1])


def holds_grid(arm: str, checker: CommandChecker, poses: int = DEFAULT_POSES, seed: int = 0,
               fraction: float = 0.9, settle: float = DEFAULT_SETTLE, samples: int = DEFAULT_SAMPLES,
               approach: str = APPROACHES[0]) -> dict:
    """The pose grid of ``poses`` static holds of ``arm`` (for :func:`~dvrk_ident_ros.excitation.files.save_grid`);
    with ``both_sides`` ``poses`` is rounded up to a multiple of 4."""
    if poses < 1 or not 0.0 < fraction <= 1.0 or not settle >= 0.0 or samples < 1 or approach not in APPROACHES:
        raise DataError(f"holds: {poses} poses, fraction {fraction}, settle {settle} s, {samples} samples, approach "
                        f"{approach!r}: expected poses >= 1, 0 < fraction <= 1, settle >= 0, samples >= 1, approach "
                        f"one of {', '.join(APPROACHES)}")
    rng = np.random.default_rng(seed)
    if approach == "both_sides":
        lo, hi = joint_ranges(checker)
        offset = APPROACH_OFFSET * (hi - lo)
        q = both_sides(stratified_poses(checker, -(-poses // 4), rng, fraction=fraction, offset=offset), offset)
        design = (f"{len(q) // 4} poses of a Latin hypercube, each held as p + d, p, p - d, p (d "
                  f"{100 * APPROACH_OFFSET:g} % of each joint's range: p reached from both sides)")
    else:
        q = random_poses(checker, poses, rng, fraction=fraction)
        design = "in random order"
    return {"kind": HOLDS_KIND, "arm": arm.upper(), "coordinates": "dvrk", "units": "rad (m for a prismatic joint)",
            "settle_time": float(settle), "samples_per_pose": int(samples), "approach": approach,
            "comment": f"{len(q)} static holds in the central {100 * fraction:g} % of the ranges, {design}, seed "
                       f"{seed}: dvrk-ident gc refit fits the identified model's gravity to them",
            "sweeps": [{"estimated_joint": None, "auxiliary_joint": None, "auxiliary_value": None,
                        "direction": "positive", "poses": q.tolist()}]}
