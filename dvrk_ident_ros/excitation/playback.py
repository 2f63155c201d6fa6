"""What the trajectory player commands, tick by tick (ROS-free).

Two plans, both in dVRK joint space and both driven by ``step(t, q_measured)``:

- :class:`FourierPlayback`: a quintic ramp from the current pose to the
  trajectory's start (peak joint speed ``ramp_speed``), then the Fourier
  trajectory (motor coordinates converted with q^d = A q^m; time scaled by
  ``speed_scale``) for its periods, streamed as servo_jp setpoints;
- :class:`GridPlayback`: for each pose, move_jp to it, wait until reached,
  settle, then a sampling window of ``samples_per_pose`` state samples.

Every setpoint passes :class:`~dvrk_ident_ros.safety.CommandChecker` before
it is returned; a plan whose command would leave the limits raises
SafetyError before anything is sent. :class:`TrackingMonitor` aborts on
tracking error (a limit per joint, in the joint's units); :class:`MoveWatch`
tells when the arm's own ``move_jp`` is over (``goal_reached``, ``is_busy``);
the player node adds the stale-state watchdog and the arm's operating state.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from dvrk_ident_ros.arm.player_phase import PlayerPhase
from dvrk_ident_ros.errors import DataError, SafetyError
from dvrk_ident_ros.excitation.fourier import FourierTrajectory, quintic
from dvrk_ident_ros.model.arm_model import ArmModel
from dvrk_ident_ros.safety import CommandChecker

VERIFY_RATE = 1000.0  # Hz: plans are checked against the limits this densely before they start


@dataclass
class Setpoint:
    phase: PlayerPhase
    progress: float
    position: np.ndarray | None = None  # servo_jp (streamed)
    velocity: np.ndarray | None = None
    move_goal: np.ndarray | None = None  # move_jp (issued once per pose)
    pose_index: int = 0
    pose_count: int = 0
    direction: int = 0

    @property
    def servo_position(self) -> np.ndarray:
        """``position`` of a streamed setpoint (every :class:`FourierPlayback` setpoint has one)."""
        if self.position is None:
            raise DataError(f"a {self.phase.name} setpoint without a servo_jp position")
        return self.position


class FourierPlayback:
    def __init__(self, trajectory: FourierTrajectory, model: ArmModel, checker: CommandChecker, *,
                 periods: int = 1, speed_scale: float = 1.0, ramp_speed: float = 0.2):
        if not 0.0 < speed_scale <= 1.0:
            raise DataError(f"speed_scale {speed_scale}: expected (0, 1]")
        if trajectory.joints != model.dof:
            raise DataError(f"the trajectory has {trajectory.joints} joints, the {model.description.arm} {model.dof}")
        self.trajectory = trajectory
        self.model = model
        self.checker = checker
        self.scale = speed_scale
        self.ramp_speed = ramp_speed
        self.duration = periods * trajectory.period / speed_scale
        self._ramp: tuple[np.ndarray, np.ndarray, float] | None = None
        self._t0 = 0.0
        self.start_pose = model.dvrk_from_motor(trajectory.evaluate(np.zeros(1))[0][0])
        self.verify()

    def verify(self) -> None:
        """The whole trajectory at 1 kHz against positions and speeds (before any motion)."""
        t = np.arange(0.0, self.duration, 1.0 / VERIFY_RATE)
        q, qd, _ = self.trajectory.evaluate(t * self.scale)
        q_d, qd_d = self.model.dvrk_from_motor(q), self.model.dvrk_from_motor(qd) * self.scale
        k = self.checker.first_position_violation(q_d)
        if k is not None:
            self.checker.position(q_d[k], f"trajectory at t = {t[k]:.3f} s")
        k = self.checker.first_speed_violation(qd_d)
        if k is not None:
            self.checker.speed(qd_d[k], f"trajectory velocity at t = {t[k]:.3f} s")

    def start(self, t: float, q_now: np.ndarray) -> float:
        """Plan the ramp from ``q_now``; returns the total duration (ramp + trajectory)."""
        q_now = self.checker.position(q_now, "current pose")
        distance = np.abs(self.start_pose - q_now)
        ramp = max(0.5, float(np.max(15.0 / 8.0 * distance / self.ramp_speed)))
        self._ramp = (q_now.copy(), self.start_pose, ramp)
        self._t0 = t
        return ramp + self.duration

    def step(self, t: float) -> Setpoint:
        if self._ramp is None:
            raise DataError("playback not started")
        q_from, q_to, ramp = self._ramp
        elapsed = t - self._t0
        total = ramp + self.duration
        if elapsed < ramp:
            q, qd, _ = quintic(q_from, q_to, ramp, np.array([elapsed]))
            return Setpoint(PlayerPhase.RAMP_IN, elapsed / total, self.checker.position(q[0], "ramp-in setpoint"),
                            qd[0])
        if elapsed < total:
            tt = (elapsed - ramp) * self.scale
            q, qd, _ = self.trajectory.evaluate(np.array([tt]))
            q_d = self.model.dvrk_from_motor(q[0])
            return Setpoint(PlayerPhase.PLAYING, elapsed / total,
                            self.checker.position(q_d, f"setpoint at t = {tt:.3f} s"),
                            self.model.dvrk_from_motor(qd[0]) * self.scale)
        q, _, _ = self.trajectory.evaluate(np.array([self.duration * self.scale]))
        final = self.checker.position(self.model.dvrk_from_motor(q[0]), "final setpoint")
        return Setpoint(PlayerPhase.DONE, 1.0, final, np.zeros(self.model.dof))


@dataclass
class _Pose:
    index: int  # in the full grid (the recorder's bags refer to it)
    q: np.ndarray
    direction: int


@dataclass
class GridPlayback:
    """Move, settle, sample, for every pose of a pose-grid file (``pose_stride``: every k-th pose of a sweep).

    Poses outside the arm's limits are left out (listed in ``skipped``), never commanded.
    """

    grid: dict
    checker: CommandChecker
    pose_stride: int = 1
    sweep_stride: int = 1  # every k-th auxiliary value (or repetition) of each joint
    tolerance: float = 0.02  # rad (m): pose reached
    move_timeout: float = 10.0  # s per pose
    poses: list[_Pose] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # poses outside the limits, with the reason

    def __post_init__(self) -> None:
        if self.pose_stride < 1:
            raise DataError(f"pose_stride {self.pose_stride}: expected 1 or more")
        self.settle_time = float(self.grid.get("settle_time", 0.5))
        self.samples_per_pose = int(self.grid.get("samples_per_pose", 10))
        if self.sweep_stride < 1:
            raise DataError(f"sweep_stride {self.sweep_stride}: expected 1 or more")
        kept = self._kept_sweeps(self.grid.get("sweeps") or [])
        index = 0
        for k, sweep in enumerate(self.grid.get("sweeps") or []):
            poses = np.asarray(sweep["poses"], dtype=float)
            if k not in kept:
                index += len(poses)
                continue
            direction = 1 if str(sweep.get("direction", "positive")).startswith("pos") else -1
            chosen = list(range(0, len(poses), self.pose_stride))
            if chosen[-1] != len(poses) - 1:
                chosen.append(len(poses) - 1)  # keep the sweep's end
            for k in chosen:
                try:
                    self.poses.append(_Pose(index + k, self.checker.position(poses[k], f"pose {index + k}"),
                                            direction))
                except SafetyError as exc:  # never commanded; reported by the player
                    self.skipped.append(str(exc))
            index += len(poses)
        if not self.poses:
            raise DataError("the pose grid has no pose inside the arm's limits"
                            + (f" (first: {self.skipped[0]})" if self.skipped else ""))
        self._i = -1
        self._phase = PlayerPhase.IDLE
        self._since = 0.0
        self._samples = 0
        self._move_allowance = 0.0

    def _kept_sweeps(self, sweeps: list[dict]) -> set[int]:
        """Every ``sweep_stride``-th auxiliary value (or repetition) of each joint, both directions kept."""
        seen: dict[tuple, int] = {}
        groups: dict[int | None, list[tuple]] = {}
        for sweep in sweeps:
            joint = sweep.get("estimated_joint")
            key = (joint, sweep.get("auxiliary_value"), sweep.get("direction"))
            seen[key] = seen.get(key, -1) + 1  # repetitions of the same sweep
            group = (sweep.get("auxiliary_value"), seen[key])
            order = groups.setdefault(joint, [])
            if group not in order:
                order.append(group)
        kept = set()
        seen.clear()
        for k, sweep in enumerate(sweeps):
            joint = sweep.get("estimated_joint")
            key = (joint, sweep.get("auxiliary_value"), sweep.get("direction"))
            seen[key] = seen.get(key, -1) + 1
            if groups[joint].index((sweep.get("auxiliary_value"), seen[key])) % self.sweep_stride == 0:
                kept.add(k)
        return kept

    @property
    def duration_estimate(self) -> float:
        return len(self.poses) * (self.settle_time + 0.5)

    def start(self, t: float, q_now: np.ndarray) -> float:
        self.checker.position(q_now, "current pose")
        self._i, self._phase, self._since = -1, PlayerPhase.IDLE, t
        return self.duration_estimate

    def on_sample(self) -> None:
        """One state sample arrived (counts toward the sampling window)."""
        if self._phase == PlayerPhase.SAMPLING:
            self._samples += 1

    def step(self, t: float, q_measured: np.ndarray, reached: bool | None = None) -> Setpoint:
        """``reached``: the arm's own word that the last move_jp is over (:class:`MoveWatch`); None where the
        caller has no word from the arm (offline use; the player always passes it): then the pose counts as
        reached within ``tolerance``."""
        n = len(self.poses)
        goal = None
        if self._phase == PlayerPhase.IDLE or (self._phase == PlayerPhase.SAMPLING
                                               and self._samples >= self.samples_per_pose):
            self._i += 1
            if self._i >= n:
                return Setpoint(PlayerPhase.DONE, 1.0, pose_index=self.poses[-1].index, pose_count=n)
            self._phase, self._since = PlayerPhase.MOVING, t
            goal = self.poses[self._i].q
            self._move_allowance = float(np.max(np.abs(goal - np.asarray(q_measured)))) / 0.2  # s: at 0.2 rad/s
        pose = self.poses[self._i]
        if self._phase == PlayerPhase.MOVING:
            if reached is None:
                reached = bool(np.max(np.abs(np.asarray(q_measured) - pose.q)) < self.tolerance)
            if reached and goal is None:
                self._phase, self._since = PlayerPhase.SETTLING, t
            elif t - self._since > self.move_timeout + self._move_allowance:
                raise SafetyError(f"pose {pose.index} not reached within {self.move_timeout:g} s (error "
                                  f"{np.max(np.abs(np.asarray(q_measured) - pose.q)):.3f})")
        if self._phase == PlayerPhase.SETTLING and t - self._since >= self.settle_time:
            self._phase, self._since, self._samples = PlayerPhase.SAMPLING, t, 0
        return Setpoint(self._phase, (self._i + 0.5) / n, move_goal=goal, pose_index=pose.index, pose_count=n,
                        direction=pose.direction)


class TrackingMonitor:
    """|setpoint - measured| per joint; SafetyError when a joint's error is above its limit.

    ``limits``: one per joint, in the joint's units (rad; m for the PSM insertion), or one number for all.
    """

    def __init__(self, names: list[str], limits: ArrayLike):
        self.names = names
        self.limits = np.broadcast_to(np.asarray(limits, dtype=float), (len(names),)).copy()
        self.max_error = 0.0
        self.error = np.zeros(len(names))

    def check(self, setpoint: np.ndarray, measured: np.ndarray) -> np.ndarray:
        self.error = np.abs(np.asarray(setpoint) - np.asarray(measured))
        self.max_error = max(self.max_error, float(np.max(self.error)))
        over = np.flatnonzero(self.error > self.limits)
        if over.size:
            worst = int(over[np.argmax(self.error[over] / self.limits[over])])
            raise SafetyError(f"tracking error on {self.names[worst]}: {self.error[worst]:.4f} above "
                              f"{self.limits[worst]:.4f}")
        return self.error


def tracking_limits(given: object, defaults: Sequence[float], names: Sequence[str], source: str) -> np.ndarray:
    """The per-joint tracking limits: ``given`` (a list, one per joint of ``names``) or, when it is empty,
    ``defaults`` (the arm description's, from ``source``). DataError naming what is wrong."""
    n = len(names)
    order = ", ".join(names)
    if isinstance(given, (bool, int, float, str)) or not (given is None or isinstance(given, Iterable)):
        raise DataError(f"tracking_error_limit {given!r}: expected a list of {n} limits, one per joint "
                        f"({order}) in the joint's units (rad; m for a prismatic joint), or [] for the "
                        f"defaults of {source}")
    values = list(given or [])
    if not values:
        if len(defaults) != n:
            raise DataError(f"{source} gives no tracking_error for its joints ({order}): "
                            "set tracking_error_limit")
        values = list(defaults)
    if len(values) != n:
        raise DataError(f"tracking_error_limit: {len(values)} values for {n} joints ({order})")
    try:
        limits = np.array([float(v) for v in values if not isinstance(v, (bool, str))], dtype=float)
    except (TypeError, ValueError):
        limits = np.array([])
    if limits.size != n or not np.all(np.isfinite(limits)) or np.any(limits <= 0.0):
        raise DataError(f"tracking_error_limit {values!r}: expected {n} numbers > 0 ({order})")
    return limits


class MoveWatch:
    """Whether the arm's own ``move_jp`` trajectory is over, from what the dVRK reports.

    After a move_jp the arm is busy until its trajectory ends, then publishes ``goal_reached`` true.
    ``done``: goal_reached true, or is_busy seen true and then false, since the last :meth:`sent`.
    ``busy_is_ours``: the arm's is_busy is explained by this move (from :meth:`sent` until an idle
    state is seen after the move is done), so a player does not take it for someone else moving the arm.
    ``failed``: the arm reported goal_reached false (its trajectory was interrupted).
    """

    def __init__(self) -> None:
        self.pending = False
        self.done = False
        self.failed = False
        self._busy = False  # the arm's last is_busy
        self._busy_seen = False

    def sent(self) -> None:
        self.pending, self.done, self.failed, self._busy_seen = True, False, False, False

    def on_busy(self, busy: bool) -> None:
        self._busy = busy
        if not self.pending:
            return
        if busy:
            self._busy_seen = True
        elif self._busy_seen or self.done:
            self.done = True
            self.pending = False  # idle after our move: a later busy is not ours

    def on_goal_reached(self, reached: bool) -> None:
        if not self.pending:  # a late subscriber's copy of an earlier move's event, or someone else's move
            return
        if not reached:
            self.failed = True
            return
        self.done = True
        if not self._busy:
            self.pending = False

    @property
    def busy_is_ours(self) -> bool:
        return self.pending
