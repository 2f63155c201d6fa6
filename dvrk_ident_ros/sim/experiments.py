"""Experiments on the simulated arm without ROS: pose-grid collection and the drift test.

The same core objects the nodes use (:class:`~dvrk_ident_ros.sim.arm.SimulatedArm`,
:class:`~dvrk_ident_ros.excitation.playback.GridPlayback`, a compensation law),
stepped directly, so benchmarks of many poses run faster than real time.

Drift test (Lin 2019, section V-C): the arm is brought to a random pose by
its PID, then left under the compensation torques only (commanded from each
state sample, held between samples) for ``hold_time``; the drift is the tip
displacement (mm) and rotation (deg) over that time.

Pose grids: :func:`collect_pose_grid` plays a grid as the player does
(move_jp, reached, settle, sample) and leaves out the first ``trim[0]`` poses of
every sweep: the arm reaches a sweep's first pose from the previous sweep (the
other direction, or another auxiliary value) with the joint's cable hysteresis
still in that motion's state, so its holding torque is not the sweep's
direction's (the original tool drops the first two and the last pose,
:func:`dvrk_ident_ros.gc.fitting.data.load_cuhk`). :func:`collection_time` is the
time the arm takes for a grid (simulated seconds, the same per pose as
:func:`collect_pose_grid` spends).

Static holds: :func:`static_holds` brings the arm to each pose by its PID alone
(the dVRK's own compensation off), lets it settle and averages its position and
effort: at rest the effort is the arm's gravity and springs, the data of
:func:`dvrk_ident_ros.gc.fitting.static_refit.refit_gravity`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dvrk_ident_ros.errors import DvrkIdentError
from dvrk_ident_ros.excitation import holds
from dvrk_ident_ros.excitation.playback import GridPlayback
from dvrk_ident_ros.gc.fitting.data import PoseData, robust_mean
from dvrk_ident_ros.gc.model.travel import DEFAULT_TRAVEL, Recording
from dvrk_ident_ros.gc.runtime.fit_probe import BothSidesProbe
from dvrk_ident_ros.sim.arm import SimulatedArm


def collect_pose_grid(arm: SimulatedArm, playback: GridPlayback, rate: float = 100.0, settle_timeout: float = 5.0,
                      std_filter: float = 0.3, trim: tuple[int, int] = (1, 0),
                      travel: float | None = DEFAULT_TRAVEL) -> PoseData:
    """Move-settle-sample through the grid's poses; per pose the robust mean of the samples (as the loaders).

    ``trim``: poses left out at the start and the end of every sweep (played, not kept). ``travel``: the
    width of the direction state (gc/model/travel.py) tracked over every state sample (``rate``), as the bag
    loader does: each pose's ``branch`` is its estimated joint's mean state while sampled (None: none)."""
    sweeps = playback.grid["sweeps"]
    offsets = np.cumsum([0] + [len(s["poses"]) for s in sweeps])
    qs, taus, joints, dirs, auxs, ids = [], [], [], [], [], []
    dt = 1.0 / rate
    sweep_of = [int(np.searchsorted(offsets, pose.index, side="right") - 1) for pose in playback.poses]
    seen: dict[int, int] = {}
    rank = []  # each pose's position in its sweep
    for k in sweep_of:
        rank.append(seen.get(k, 0))
        seen[k] = rank[-1] + 1
    stream: list[np.ndarray] = []  # every state sample's position, as a recorder logs them
    windows: list[np.ndarray] = []

    def advance() -> tuple[np.ndarray, np.ndarray]:
        arm.advance(dt)
        q, _, tau = arm.measured()
        stream.append(q)
        return q, tau

    for n, pose in enumerate(playback.poses):
        arm.move_jp(pose.q)
        waited = 0.0
        while (arm.busy or np.max(np.abs(arm.q - pose.q)) > playback.tolerance) and waited < settle_timeout:
            advance()
            waited += dt
        for _ in range(round(playback.settle_time / dt)):
            advance()
        samples_q, samples_tau = [], []
        first = len(stream)
        for _ in range(playback.samples_per_pose):
            q, tau = advance()
            samples_q.append(q)
            samples_tau.append(tau)
        k = sweep_of[n]
        if rank[n] < trim[0] or rank[n] >= seen[k] - trim[1]:
            continue
        sweep = sweeps[k]
        qs.append(robust_mean(np.array(samples_q).T[None], std_filter)[0])
        taus.append(robust_mean(np.array(samples_tau).T[None], std_filter)[0])
        joints.append(sweep["estimated_joint"])
        dirs.append(pose.direction)
        auxs.append(sweep["auxiliary_value"] if sweep.get("auxiliary_value") is not None else np.nan)
        ids.append(k)
        windows.append(np.arange(first, len(stream)))
    recording = Recording(np.array(stream), tuple(windows))
    branch = recording.branches(np.array(joints), travel) if travel is not None else None
    return PoseData(np.array(qs), np.array(taus), np.array(joints), np.array(dirs), np.array(auxs), np.array(ids),
                    "simulated arm", branch=branch, recording=recording)


def collection_time(arm: SimulatedArm, playback: GridPlayback, rate: float = 100.0) -> float:
    """Seconds the arm takes for the grid: per pose the arm's own move (its quintic at ``move_speed``, at least
    0.1 s), the settle time and the sampling window (``samples_per_pose`` at ``rate``), from the home pose."""
    q = arm.home.copy()
    total = 0.0
    for pose in playback.poses:
        total += max(0.1, arm.moves.duration(q, pose.q)) + playback.settle_time + playback.samples_per_pose / rate
        q = pose.q
    return total


@dataclass
class StaticHolds:
    """Mean position and effort (dVRK joint space) at each pose, and the time the arm took (s)."""

    q: np.ndarray
    effort: np.ndarray
    seconds: float


def static_holds(arm: SimulatedArm, poses: np.ndarray, settle: float = 1.0, samples: int = 50,
                 rate: float = 100.0, builtin: bool = False) -> StaticHolds:
    """Each pose reached by the arm's move_jp and held by its PID (the dVRK's own compensation off, unless
    ``builtin``: an ECM Si's PID alone cannot hold it; the measured effort is the sum either way), ``settle``
    s after the move, then ``samples`` state samples at ``rate`` averaged."""
    steps = max(1, round(1.0 / (rate * arm.dt)))
    q_mean, effort_mean = [], []
    start = arm.time
    arm.use_gravity_compensation(builtin)
    for goal in poses:
        duration = arm.move_jp(goal)
        for _ in range(round((duration + settle) / arm.dt)):
            arm.step()
        qs, efforts = [], []
        for _ in range(samples):
            q, _, effort = arm.measured()
            qs.append(q)
            efforts.append(effort)
            for _ in range(steps):
                arm.step()
        q_mean.append(np.mean(qs, axis=0))
        effort_mean.append(np.mean(efforts, axis=0))
    return StaticHolds(np.array(q_mean), np.array(effort_mean), arm.time - start)


@dataclass
class DriftResult:
    """Per pose: the tip's drift over the hold (a pose whose hold ended in a fault: the drift until the hold's
    end; a pose whose approach faulted was not held: NaN, left out of the statistics)."""

    position_mm: np.ndarray
    rotation_deg: np.ndarray
    poses: np.ndarray
    faults: tuple[int, ...] = ()  # the poses where the arm faulted (then enabled and homed again)

    def summary(self) -> str:
        held = ~np.isnan(self.position_mm)
        if not held.any():
            return f"{len(self.poses)} poses, none held: the arm faulted at {len(self.faults)} of them"
        p, r = self.position_mm[held], self.rotation_deg[held]
        text = (f"{len(self.poses)} poses: tip drift mean {p.mean():.2f} mm (median {np.median(p):.2f}, max "
                f"{p.max():.2f}), rotation mean {r.mean():.2f} deg (median {np.median(r):.2f}, max {r.max():.2f})")
        return text + (f"; the arm faulted at {len(self.faults)} of them ({int((~held).sum())} not held)"
                       if self.faults else "")


def random_poses(arm: SimulatedArm, count: int, rng: np.random.Generator, fraction: float = 0.6,
                 box: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Poses drawn uniformly in the central ``fraction`` of every joint's range (or of ``box``, e.g. the
    range the compensation's data covered), inside every limit of the simulated arm
    (:func:`dvrk_ident_ros.excitation.holds.random_poses`)."""
    return holds.random_poses(arm.checker, count, rng, fraction=fraction, box=box)


class StaticTruth:
    """The simulator's exact gravity, springs and cable torques as a compensation: the drift test's floor
    (what is left is the cable hysteresis the PID held, and the friction)."""

    def __init__(self, arm: SimulatedArm):
        self.arm = arm

    def observe(self, q) -> None:
        """No state."""

    def compute(self, q, qd, scale: float = 1.0) -> np.ndarray:
        return scale * self.arm.static_torque(self.arm.model.motor_from_dvrk(np.asarray(q, dtype=float)))


def tip_pose(arm: SimulatedArm, q_dvrk: np.ndarray) -> np.ndarray:
    return arm.model.forward_kinematics(arm.model.motor_from_dvrk(q_dvrk)[None])[0, -1]


def tip_drift(arm: SimulatedArm, q_start: np.ndarray, q_end: np.ndarray) -> tuple[float, float]:
    """How far the tip moved between two poses (dVRK joint space): mm, and the rotation's angle in deg."""
    start, end = tip_pose(arm, q_start), tip_pose(arm, q_end)
    cos = np.clip((np.trace(start[:3, :3].T @ end[:3, :3]) - 1) / 2, -1.0, 1.0)
    return float(1e3 * np.linalg.norm(end[:3, 3] - start[:3, 3])), float(np.degrees(np.arccos(cos)))


#: s of position hold after each pose's drift, so that a fault the hold trips is counted for that pose
HOLD_CHECK = 0.2


def drift_test(arm: SimulatedArm, law, poses: np.ndarray, hold_time: float = 2.0, state_rate: float = 1000.0,
               settle: float = 1.0) -> DriftResult:
    """Bring the arm to each pose (PID + the dVRK's own compensation), then hold it with ``law`` alone.

    The law observes every state sample of the approach too, as the node does before its hand-over: a law
    with a state (the travel blend, gc/runtime/law.py) knows where the joints came from."""
    dt = 1.0 / state_rate
    steps_per_sample = max(1, round(dt / arm.dt))
    position, rotation, faults = [], [], []
    for index, goal in enumerate(poses):
        if not arm.ready:
            _enable_and_home(arm)
        arm.use_gravity_compensation(True)
        duration = arm.move_jp(goal)
        t = 0.0
        while t < duration + settle and arm.ready:
            q, _, _ = arm.measured()
            law.observe(q)
            for _ in range(steps_per_sample):
                arm.step()
            t += steps_per_sample * arm.dt
        arm.use_gravity_compensation(False)
        start = arm.q.copy()
        t = 0.0
        while t < hold_time and arm.ready:
            q, qd, _ = arm.measured()
            arm.servo_jf(np.asarray(law.compute(q, qd, 1.0), dtype=float))
            for _ in range(steps_per_sample):
                arm.step()
            t += steps_per_sample * arm.dt
        approached = arm.ready  # else it faulted on the way: the pose is not held, not measured
        mm, deg = tip_drift(arm, start, arm.q) if approached else (np.nan, np.nan)
        position.append(mm)
        rotation.append(deg)
        if arm.ready:
            arm.hold()  # an arm still falling fast can trip the PID's tracking check in the next steps:
            arm.advance(HOLD_CHECK)  # that fault is this pose's
        if not arm.ready:
            faults.append(index)
    return DriftResult(np.array(position), np.array(rotation), np.asarray(poses), tuple(faults))


def _enable_and_home(arm: SimulatedArm, timeout: float = 60.0) -> None:
    """What a person at the console does after a fault, seconds later (the arm at rest under its hold by
    then): power the arm on (enable) and home it."""
    arm.advance(2.0)
    arm.state_command("enable")
    arm.state_command("home")
    deadline = arm.time + timeout
    while not arm.ready and arm.time < deadline:
        arm.advance(0.05)
    if not arm.ready:
        raise DvrkIdentError(f"the simulated arm did not home again after a fault: {arm.not_ready_reason('arm')}")


def run_fit_probe(arm: SimulatedArm, probe: BothSidesProbe, rate: float = 100.0, window: int = 20,
                  limit: float = 120.0) -> float:
    """A fit probe's holds (gc/runtime/fit_probe.py BothSidesProbe) on the simulated arm as the gravity
    compensation node runs them: at ``rate`` while the arm is ready and not busy, its setpoint and the mean of
    its last ``window`` commanded efforts, each goal sent by move_jp; until the probe is done or has failed
    (or ``limit`` s of arm time). Returns the arm time it took (s)."""
    steps = max(1, round(1.0 / (rate * arm.dt)))
    efforts: list[np.ndarray] = []
    start = arm.time
    while not (probe.done or probe.failed) and arm.time - start < limit:
        sample = arm.sample()
        efforts = [*efforts, np.asarray(sample.setpoint_effort, dtype=float)][-window:]
        if arm.ready and not arm.status.is_busy:
            n = len(probe.goals[0])
            mean = list(np.mean(efforts, axis=0)[:n]) if len(efforts) >= window // 2 else None
            goal = probe.advance(arm.time, list(sample.setpoint_position[:n]), mean)
            if goal is not None:
                arm.move_jp(np.concatenate([goal, arm.q[n:]]) if arm.q.shape[0] > n else np.asarray(goal))
        arm.advance(steps * arm.dt)
    return arm.time - start
