"""One simulated dVRK arm, ROS-free: the commands the dVRK accepts, the state it publishes.

Operating state (:mod:`dvrk_ident_ros.sim.operating`): ``initial_state``
DISABLED, ENABLED (powered, not homed), HOMED (ENABLED, homed, idle: ready;
the default here, for offline use; the node starts DISABLED like a console)
or FAULT; :meth:`SimulatedArm.state_command` takes the crtk strings (enable,
disable, home, unhome, pause, resume). Homing moves the arm to its home pose
with a quintic over ``homing_time`` s (longer if the pose is farther than
``move_speed`` allows in that time), busy meanwhile (an MTM says homed during
that move, its data valid: sim/operating.py). Whenever the arm is not ENABLED
and homed it holds its pose under the PID (the simulator's brakes: a
powered-off MTM would sag, and the simulation has no joint stops), and its
published data is invalid (:meth:`SimulatedArm.sample`: zeros). A
``servo_jf`` while homing (any command during an MTM's homing move), or a PID
tracking error (setpoint - measured) beyond ``fault_tracking_error`` while
ENABLED or PAUSED, faults the arm.

Commands (dVRK joint space) are obeyed only when the arm is ENABLED, homed and
not homing (and, on a PSM, its tool is engaged); otherwise they raise
:class:`~dvrk_ident_ros.sim.operating.ArmNotReadyError` and change nothing. Then
they are checked; a rejected command raises SafetyError and leaves the arm as
it was:

- ``servo_jp(q, qd, at=..., joints=...)``: PID position setpoint, meant to be
  streamed; ``joints``: the joints it sets (the PSM's arm and jaw streams).
  With ``servo_timing="arrival"`` (as the dVRK: mtsIntuitiveResearchKitArm
  stores the goal and its velocity, the PID takes them at its next period) it
  is taken at once and held, position and setpoint velocity, until the next;
  ``at`` is ignored. With ``"stamp"`` (the default, gentler than any real arm) ``at`` (its
  stamp, in simulated time) delays it to the physics step at that time (one
  that arrives late is carried forward from its stamp; an older one than the
  setpoint in force is ignored), so a stream is followed as it was sent
  whatever the delivery jitter; between samples the setpoint is carried forward
  with its velocity (first-order hold) for 1.5 of the stream's intervals after
  it arrived (at most ``SERVO_HOLD``), then held with zero velocity, as when a
  stream stops;
- ``move_jp(q)``: the arm plans its own quintic move (``busy`` until done, then
  a goal-reached event), a goal beyond the limits clipped to them;
- ``servo_jf(tau)``: effort mode, the efforts are applied as they are;
- ``use_gravity_compensation(on)`` (any state): the dVRK's own compensation
  (perfect gravity, springs and cable of the true model) added to every
  command; on at start on a dVRK 2.4 MTM, off on 2.3;
- ``hold()``: position mode at the current pose.

Physics: :class:`~dvrk_ident_ros.sim.physics.ArmPhysics` (semi-implicit Euler
at ``physics_rate``; the mass matrix reused while its estimated relative change
stays under ``MASS_MATRIX_TOLERANCE``, the known torques' domain clamp with a
pseudo-inverse computed once: real-time speed) plus a Dahl cable hysteresis; measured positions are
quantised like the encoders, measured efforts carry the recordings' noise and
are quantised like the motor currents; the setpoint's effort is the PID's.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from dvrk_ident_ros.arm.state import OperatingStatus
from dvrk_ident_ros.errors import ArmNotReadyError, DvrkIdentError, SafetyError
from dvrk_ident_ros.gc.console_gc import ConsoleChain, mounting_pitch_of
from dvrk_ident_ros.model.compiled import load_compiled
from dvrk_ident_ros.safety import CommandChecker
from dvrk_ident_ros.sim.config import SimConfig
from dvrk_ident_ros.sim.hysteresis import DahlHysteresis
from dvrk_ident_ros.sim.noise import quantize
from dvrk_ident_ros.sim.operating import Action, OperatingMachine
from dvrk_ident_ros.sim.physics import ArmPhysics, ArmState
from dvrk_ident_ros.sim.servo import PidServo

POSITION, EFFORT = "position", "effort"
MASS_MATRIX_TOLERANCE = 3e-3  # M(q) is recomputed once it may have changed by this fraction (real-time speed)
MASS_SENSITIVITY_POSES = 8  # poses (home and random ones inside the limits) that estimate how M varies
STATIC_TOLERANCE = 1e-4  # rad (m): the same for the built-in compensation's torques
SERVO_HOLD = 0.05  # s: a streamed setpoint is carried forward with its velocity at most this long
SERVO_HOLD_PERIODS = 1.5  # ... and at most this many of the stream's intervals: then it is held (the stream stopped)
SERVO_CLOCK = 1.0  # s: a servo_jp stamped further than this from the arm's time is on another clock: no stamp
MAX_SERVO_JUMP = 0.25  # rad (m): a streamed setpoint this far from the current one is not a stream
FAULT_TRACKING_ERROR = 0.5  # rad: default tracking-error fault; prismatic joints use a tenth of it in m
PRISMATIC_SCALE = 0.1  # m per rad of fault_tracking_error for prismatic joints (0.05 m for the PSM insertion)
DVRK_VERSIONS = ("2.3", "2.4")  # 2.4: the MTM's built-in gravity compensation is on at start; 2.3: off
#: how a streamed servo_jp is taken: "arrival", as the dVRK (its arm takes the setpoint, position and velocity,
#: at the first control period after it arrives and holds it until the next: a late or bunched stream reaches
#: it as steps); "stamp", gentler: at its stamp's instant, carried forward between samples (first-order hold)
SERVO_TIMINGS = ("arrival", "stamp")


def _quintic(s: float) -> tuple[float, float]:
    """Normalised quintic 10s^3 - 15s^4 + 6s^5 and its derivative, s in [0, 1]."""
    s = min(max(s, 0.0), 1.0)
    return s ** 3 * (10 - 15 * s + 6 * s * s), 30 * s * s * (1 - s) ** 2


def builtin_compensation_at_start(config: SimConfig, dvrk_version: str) -> bool:
    """Whether the dVRK's own gravity compensation is on at start: the simulated arm's setting
    (its ``simulation`` file, config/sim/<family>.yaml: on for the MTM) on dVRK 2.4, off on 2.3."""
    if str(dvrk_version) not in DVRK_VERSIONS:
        raise DvrkIdentError(f"dvrk_version {dvrk_version!r}: expected one of {', '.join(DVRK_VERSIONS)}")
    return bool(config.builtin_gravity_compensation) and str(dvrk_version) == "2.4"


def tracking_limits(config: SimConfig, fault_tracking_error: float) -> np.ndarray:
    """Per dVRK joint: ``fault_tracking_error`` rad, a tenth of it in m for prismatic joints."""
    if not fault_tracking_error > 0.0:
        raise DvrkIdentError(f"fault_tracking_error {fault_tracking_error}: expected > 0 rad")
    return np.where(config.prismatic, PRISMATIC_SCALE, 1.0) * float(fault_tracking_error)


@dataclass(order=True)
class _PendingServo:
    """A streamed setpoint due at simulated time ``at`` (ordered by it, then by arrival)."""

    at: float
    order: int
    q: np.ndarray = field(compare=False)
    qd: np.ndarray = field(compare=False)
    joints: np.ndarray = field(compare=False)  # bool mask: the joints this command sets


@dataclass(frozen=True)
class Sample:
    """What the arm publishes at one instant (dVRK joint space); all zeros when not ``valid``."""

    valid: bool
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray  # measured (noise, current quantisation)
    setpoint_position: np.ndarray
    setpoint_effort: np.ndarray  # the PID's command


class _LimitClamp:
    """Motor position -> the nearest one inside a checker's limits (as ``CommandChecker.clamp_position``,
    with the pseudo-inverse computed once: it runs at every physics step); the last answer is reused
    for the same position (the physics and the built-in compensation ask twice per step)."""

    def __init__(self, model, checker: CommandChecker):
        self._model = model
        zero = checker.coordinates(np.zeros(model.dof))
        self._rows = np.array([checker.coordinates(e) - zero for e in np.eye(model.dof)]).T
        self._offset = zero
        self._lower, self._upper = checker.lower, checker.upper
        self._inner = (checker.lower + 1e-6, checker.upper - 1e-6)
        self._pinv = np.linalg.pinv(self._rows)
        self._last: tuple[np.ndarray, np.ndarray] | None = None

    def __call__(self, q_motor: np.ndarray) -> np.ndarray:
        if self._last is not None and np.array_equal(self._last[0], q_motor):
            return self._last[1]
        q = self._model.dvrk_from_motor(q_motor)
        c = self._rows @ q + self._offset
        if np.all((c >= self._lower) & (c <= self._upper)):
            result = q_motor.copy()
        else:
            for _ in range(20):
                excess = np.clip(c, *self._inner) - c
                if not np.any(excess):
                    break
                q = q + self._pinv @ excess
                c = self._rows @ q + self._offset
            result = self._model.motor_from_dvrk(q)
        self._last = (q_motor.copy(), result)
        return result


class SimulatedArm:
    def __init__(self, config: SimConfig, variant: str | None = None, *, noise: bool = True, seed: int = 0,
                 physics_rate: float = 1500.0, initial_position: np.ndarray | None = None,
                 initial_state: str = "HOMED", homing_time: float = 3.0, dvrk_version: str = "2.4",
                 tool_engaged: bool = True, fault_tracking_error: float = FAULT_TRACKING_ERROR,
                 servo_timing: str = "stamp", kinematic_gc: ConsoleChain | None = None):
        if servo_timing not in SERVO_TIMINGS:
            raise DvrkIdentError(f"servo_timing {servo_timing!r}: one of {', '.join(SERVO_TIMINGS)}")
        self.servo_timing = servo_timing
        self._by_stamp = servo_timing == "stamp"
        self.config = config
        self.model = model = config.model
        self.dof = model.dof
        self.names = list(model.description.dvrk_joint_names)
        self.dt = 1.0 / physics_rate
        # an arm without a tool (the MTM) says homed during its homing move, data valid (sim/operating.py)
        self.operating = OperatingMachine(initial_state, homing_time, homed_while_homing=config.spec.jaw is None)
        self.tracking_limit = tracking_limits(config, fault_tracking_error)
        self.tool_engaged = bool(tool_engaged) or config.spec.jaw is None  # only an arm with a jaw has a tool
        self.trajectory_ratio = 1.0  # trajectory_j/set_ratio: the moves' speeds, scaled
        self.physics = ArmPhysics(model, config.delta, coulomb_velocity=config.coulomb_velocity)
        self._static_at: np.ndarray | None = None
        self._static = np.zeros(self.dof)
        self.servo = PidServo(config.gains, self.dof)
        self.checker = CommandChecker(model, variant, torque_limit=config.gains.torque_limit, section="hardware")
        # the cable polynomial was identified inside the excitation limits: held at their edge beyond them
        self.physics.known_torque_domain = _LimitClamp(model, CommandChecker(model, variant))
        self.physics.mass_tolerance = MASS_MATRIX_TOLERANCE
        self.physics.mass_weights = self.physics.mass_sensitivity(self._sensitivity_poses(config))
        self.hysteresis = DahlHysteresis(config.hysteresis, config.hysteresis_width)
        self._compiled = load_compiled(model)
        self._noise = config.noise if noise else None
        self._rng = np.random.default_rng(seed)
        start = config.home if initial_position is None else np.asarray(initial_position, dtype=float)
        q0 = self.checker.position(self.checker.clamp_position(start), "initial position")
        self.home = self.checker.position(self.checker.clamp_position(config.home), "home pose")
        self.state = ArmState(model.motor_from_dvrk(q0), np.zeros(self.dof))
        self.q = q0.copy()  # dVRK joint space, true
        self.qd = np.zeros(self.dof)
        self.q_ref = q0.copy()
        self.qd_ref = np.zeros(self.dof)
        self.effort = np.zeros(self.dof)  # what the arm applies (dVRK joint space)
        self.effort_command = np.zeros(self.dof)
        self.mode = POSITION
        self.locked = np.zeros(self.dof, dtype=bool)  # in effort mode, joints the PID holds (an MTM's locked wrist)
        # the dVRK 2.4 console's own PSM/ECM compensation (kinematic_gc): its chain's torques, not the truth's
        if kinematic_gc is not None and str(dvrk_version) != "2.4":
            raise DvrkIdentError(f"kinematic_gc is an input of the dVRK 2.4 console, not of {dvrk_version}")
        self.console_gc = kinematic_gc
        self._pitch = mounting_pitch_of(model.description.gravity) + 0.0 if kinematic_gc is not None else 0.0
        self._compensation_at: np.ndarray | None = None
        self._compensation = np.zeros(self.dof)
        self.builtin_gravity_compensation = (builtin_compensation_at_start(config, dvrk_version)
                                             or kinematic_gc is not None)
        self.dvrk_version = str(dvrk_version)
        self.teleoperated = False  # /console/teleop/enable: this arm is in an enabled teleoperation
        self._move: tuple[float, np.ndarray, np.ndarray, float] | None = None
        self._homing_move = False  # the running move is the homing (no goal-reached event)
        self._requested = np.zeros(self.dof)  # the running move_jp's goal as asked, before the clip
        self._goal_events: list[bool] = []
        self.time = 0.0
        # operating_state events, as the console sends them: one per accepted state command (changed or not),
        # one at every move's start (busy) and end (idle), one at every other change (homed, fault)
        self._status_dirty = False
        self._last_status = self.status
        self._status_events: list[OperatingStatus] = [self._last_status]
        self._servo_time = np.zeros(self.dof)  # per joint: when its streamed setpoint was set (first-order hold)
        self._servo_until = np.zeros(self.dof)  # per joint: carried forward until then, then held
        self._pending: list[_PendingServo] = []  # stamped servo_jp not due yet, by time
        self._latest = (self.q_ref, self.qd_ref)  # the stream's setpoint once every pending one is applied
        self._arrivals = 0
        self.stale_servo = 0  # servo_jp commands stamped before the setpoint in force: ignored
        # s: how late each servo_jp was obeyed, after its stamp (stamp) or after it reached the arm (arrival)
        self.servo_lateness: list[float] = []

    def _sensitivity_poses(self, config: SimConfig) -> np.ndarray:
        """Motor positions where M's dependence on each joint is estimated: home and random poses inside
        the limits (fixed seed: the same simulator every time)."""
        rng = np.random.default_rng(12345)
        poses = [self.checker.clamp_position(config.home)]
        span = np.where(config.prismatic, 0.1, 1.5)
        for _ in range(MASS_SENSITIVITY_POSES - 1):
            poses.append(self.checker.clamp_position(config.home + rng.uniform(-span, span)))
        return self.model.motor_from_dvrk(np.array(poses))

    # -- operating state -------------------------------------------------------------
    @property
    def status(self) -> OperatingStatus:
        """What ``/<ARM>/operating_state`` says now."""
        return self.operating.status(self._move is not None and not self._homing_move)

    @property
    def ready(self) -> bool:
        """Motion commands are obeyed: ENABLED, homed (and, on a PSM, the tool engaged)."""
        return self.operating.commandable and self.tool_engaged

    def not_ready_reason(self, arm: str) -> str:
        """Why motion commands are ignored ('' when they are not), for a log line."""
        if self.operating.commandable and not self.tool_engaged:
            return f"{arm} has no tool engaged"
        return "" if self.ready else self.operating.not_ready_reason(arm)

    def state_command(self, command: str) -> None:
        """A crtk state command (enable, disable, home, unhome, pause, resume); DvrkIdentError if unknown.
        An accepted command is answered by an event even when nothing changes (the console's "so user
        knows which state is current")."""
        self._act(self.operating.command(command))
        self._flush_status(force=True)

    def inject_fault(self, reason: str = "fault injected") -> None:
        """Put the arm in FAULT at once (the simulation's test hook)."""
        self._act(self.operating.fault(reason))
        self._flush_status()

    def _act(self, action: Action) -> None:
        self._status_dirty = True
        if action == Action.HOLD:
            self._hold()
        elif action == Action.HOME:
            self._hold()
            q_from = self.q.copy()
            duration = max(self.operating.homing_time, self._move_duration(q_from, self.home))
            if duration > 0:
                self._move, self._homing_move = (self.time, q_from, self.home.copy(), duration), True
            self.operating.start_homing(self.time, duration)
            self.operating.update(self.time)  # homing_time 0 at the home pose: homed at once

    def _flush_status(self, force: bool = False) -> None:
        """Note the status as an event when it may have changed and did (or when ``force``: a command's
        answer, a move's start)."""
        status = self.status
        if force or (self._status_dirty and status != self._last_status):
            self._status_events.append(status)
            self._last_status = status
        self._status_dirty = False

    def pop_status_events(self) -> list[OperatingStatus]:
        """The operating_state events since the last call, oldest first (the first call: the state at start)."""
        events, self._status_events = self._status_events, []
        return events

    def pop_goal_events(self) -> list[bool]:
        """Goal-reached events since the last call: True when a move_jp ended, False when it was cut short."""
        events, self._goal_events = self._goal_events, []
        return events

    def require_ready(self, what: str, effort: bool = False) -> None:
        """ArmNotReadyError unless motion commands are obeyed. While homing, an ``effort`` command faults the
        arm (the PID leaves position mode, the homing cannot finish), and so does any command while the
        data is valid (an MTM's homing move): the dVRK takes it (ArmIsReady asks for ENABLED and the joints
        ready, not homed) and the homing leaves its path; the simulation faults, so that it shows."""
        if self.operating.homing and (effort or self.operating.data_valid):
            self._act(self.operating.fault(f"{what} while homing"))
            self._flush_status()
            raise ArmNotReadyError(f"{what}: a command while homing: the arm faulted")
        if not self.ready:
            reason = "no tool engaged" if self.operating.commandable else self.status.describe()
            raise ArmNotReadyError(f"{what}: ignored, arm not ready ({reason})")

    def _cancel_move(self) -> None:
        if self._move is not None:
            self._status_dirty = True
            if not self._homing_move:
                self._goal_events.append(False)
        self._move = None
        self._homing_move = False

    # -- commands ------------------------------------------------------------------
    def servo_jp(self, position, velocity=None, *, at: float | None = None, joints=None,
                 received: float | None = None) -> None:
        """A streamed position setpoint (dVRK joint space, all joints; ``joints``, a bool mask or indices:
        only these are set, the others keep the stream's setpoint, see :meth:`servo_reference`).

        Checked at once (SafetyError, nothing changes). ``servo_timing`` "arrival" (the dVRK): taken at the
        simulated instant ``received`` (when the message reached the arm; None: now), at once when that has
        passed, and held as it came until the next; ``at`` is not read (the node derives ``received`` from it).
        "stamp":
        obeyed at simulated time ``at`` (the command's
        stamp) when that is still ahead, else at once, carried forward from its stamp (a late command
        says where the stream is now, not where it was); a command stamped before the setpoint in force
        is stale and ignored (``stale_servo``); a stamp more than ``SERVO_CLOCK`` s from the arm's time is
        on another clock: the command is taken as stamped now.
        """
        self.require_ready("servo_jp")
        mask = np.ones(self.dof, dtype=bool)
        if joints is not None:
            mask = np.zeros(self.dof, dtype=bool)
            mask[np.asarray(joints)] = True
        base_q, base_qd = self.servo_reference()
        in_force = base_q  # a jump is measured from the setpoint in force (carried forward)
        if not self._pending and self.mode == POSITION and self._move is None:
            in_force = self._reference()[0]
        q_in = self.checker.finite(position, "servo_jp position")
        q = np.where(mask, q_in, base_q)
        q = self.checker.position(q, "servo_jp position")
        if velocity is None or len(velocity) == 0:
            qd = np.where(mask, 0.0, base_qd)
        else:
            qd = np.where(mask, self.checker.finite(velocity, "servo_jp velocity"), base_qd)
            qd = self.checker.speed(qd, "servo_jp velocity", scale=1.5)
        stamped = at is not None and abs(at - self.time) <= SERVO_CLOCK  # else on another clock: no stamp
        if self._by_stamp:
            stamp = float(at) if stamped and at is not None else self.time
            now = q + qd * max(0.0, self.time - stamp)  # a late command: where it says the stream is now
        else:  # the dVRK takes it as it came, when it came
            timed = received is not None and abs(received - self.time) <= SERVO_CLOCK
            stamp = float(received) if timed and received is not None else self.time
            now = q
        jump = np.where(mask, np.abs(now - in_force), 0.0)
        if np.max(jump) > MAX_SERVO_JUMP:
            i = int(np.argmax(jump))
            raise SafetyError(f"servo_jp position: {self.names[i]} jumps {jump[i]:.3f} from the current setpoint "
                              f"(at most {MAX_SERVO_JUMP}; use move_jp)")
        self._arrivals += 1
        if not self._by_stamp:  # how long after it reached the arm it is taken (0: at that instant)
            self._record_lateness(max(0.0, self.time - stamp))
        if stamp <= self.time + 0.5 * self.dt:
            self._apply_servo(q, qd, mask, stamp)
        else:
            bisect.insort(self._pending, _PendingServo(stamp, self._arrivals, q, qd, mask))
        self._latest = (q, qd)

    def servo_reference(self) -> tuple[np.ndarray, np.ndarray]:
        """The streamed setpoint (position, velocity) once every pending servo_jp is applied: what a
        command for some joints completes, and what a new command's jump is measured from."""
        if self._pending:
            return self._latest
        if self.mode == POSITION:
            return self.q_ref, self.qd_ref
        return self.q, np.zeros(self.dof)

    @property
    def pending_servo(self) -> int:
        """Stamped servo_jp commands received but not due yet."""
        return len(self._pending)

    def _apply_servo(self, q: np.ndarray, qd: np.ndarray, mask: np.ndarray, stamp: float) -> None:
        """The setpoint for ``mask``'s joints from now on, as of simulated time ``stamp`` (<= now)."""
        if self.mode != POSITION:
            self.servo.reset()
            self.q_ref, self.qd_ref = self.q.copy(), np.zeros(self.dof)
            self._servo_time[:] = min(stamp, self.time)
        fresh = mask & (stamp >= self._servo_time - 1e-9)
        if not np.any(fresh):
            self.stale_servo += 1
            return
        self._cancel_move()
        self.mode = POSITION
        self.locked[:] = False
        if self._by_stamp:
            self._record_lateness(self.time - stamp)
        self.q_ref = np.where(fresh, q, self.q_ref)
        self.qd_ref = np.where(fresh, qd, self.qd_ref)
        if self._by_stamp:  # carried forward from its stamp until about one of the stream's intervals after it arrived
            interval = stamp - self._servo_time  # since the joint's previous setpoint
            hold = np.clip(SERVO_HOLD_PERIODS * interval, 2.0 * self.dt, SERVO_HOLD)
            self._servo_until = np.where(fresh, self.time + hold, self._servo_until)
        else:  # held as it came, its velocity the PID's velocity setpoint until the next (the dVRK)
            self._servo_until = np.where(fresh, self.time, self._servo_until)
        self._servo_time[fresh] = stamp

    def _record_lateness(self, seconds: float) -> None:
        self.servo_lateness.append(seconds)
        if len(self.servo_lateness) > 200_000:
            del self.servo_lateness[:100_000]

    def _apply_due(self) -> None:
        """Apply the stamped servo_jp commands due at this step, in order."""
        while self._pending and self._pending[0].at <= self.time + 0.5 * self.dt:
            entry = self._pending.pop(0)
            self._apply_servo(entry.q, entry.qd, entry.joints, entry.at)

    def _drop_pending(self) -> None:
        self._pending.clear()

    def _move_duration(self, start: np.ndarray, goal: np.ndarray) -> float:
        """A quintic's duration at the configured peak speeds times the trajectory ratio (its peak speed is 15/8
        the mean)."""
        return float(np.max(15.0 / 8.0 * np.abs(goal - start) / (self.trajectory_ratio * self.config.move_speed)))

    def set_trajectory_ratio(self, ratio: float) -> None:
        """The dVRK's ``trajectory_j/set_ratio``: the moves' peak speeds scaled by ``ratio``, in (0, 1]; from the
        next move on. DvrkIdentError (nothing changes) outside that range."""
        ratio = float(ratio)
        if not 0.0 < ratio <= 1.0:
            raise DvrkIdentError(f"trajectory_j/set_ratio {ratio}: expected a value in (0, 1]")
        self.trajectory_ratio = ratio

    def emulate_tool_present(self, present: bool) -> None:
        """A PSM's ``emulate_tool_present``: a tool the arm cannot detect counts as engaged (or no longer does);
        an arm without a tool (no jaw) ignores it."""
        if self.config.spec.jaw is not None:
            self.tool_engaged = bool(present)

    def move_jp(self, goal) -> float:
        """Start a move to ``goal`` (clipped to the limits, as the dVRK does); returns its duration (s)."""
        self.require_ready("move_jp")
        q = self.checker.finite(goal, "move_jp goal")
        self._requested = q.copy()  # before the clip: a joining move_joints keeps what was asked
        q = self.checker.position(self.checker.clamp_position(q), "move_jp goal (clipped)")
        start = self.q_ref if self.mode == POSITION else self.q.copy()
        duration = max(0.1, self._move_duration(start, q))
        if self.mode != POSITION:
            self.servo.reset()
        self._cancel_move()
        self._drop_pending()
        self.mode = POSITION
        self.locked[:] = False
        self._move = (self.time, start.copy(), q, duration)
        self._flush_status(force=True)  # busy, even when a move was already running
        return duration

    def move_joints(self, goal, joints) -> float:
        """A move of some ``joints`` only (the PSM's jaw/move_jp): the other joints keep the running move's goal,
        which is re-targeted without a goal-reached event (the dVRK's jaw_move_jp re-evaluates the arm's joint
        trajectory with the new jaw goal), or without a move their setpoint."""
        self.require_ready("move_jp")
        joining = self._move is not None and not self._homing_move and self.mode == POSITION
        # the running move's goal as it was asked (the clip applies to the joined goal: a wrist goal clipped
        # against the jaw's old value is asked again with the jaw's new one)
        q = (self._requested if joining else self.q_ref).copy()
        q[joints] = np.asarray(goal, dtype=float)[joints]
        if joining:
            self._move = None  # joined, not interrupted: no goal_reached false
        return self.move_jp(q)

    def servo_jf(self, effort, *, cartesian: bool = False) -> None:
        """Effort mode at ``effort``; a joint command (not ``cartesian``: the efforts of a ``servo_cf`` wrench)
        releases the locked joints, as the dVRK's switch out of Cartesian space does."""
        self.require_ready("servo_jf", effort=True)
        self.effort_command = self.checker.torque(effort, "servo_jf effort")
        self._cancel_move()
        self._drop_pending()
        if not cartesian:
            self.locked[:] = False
        if self.mode != EFFORT and self.locked.any():  # the locked joints held from where they are
            self._hold_locked(self.locked)
        self.mode = EFFORT
        self._flush_status()

    def lock_joints(self, joints) -> None:
        """In effort mode, ``joints`` (a bool mask) are held by the PID at their setpoint (:meth:`set_locked_goal`),
        the others take their efforts: the MTM's orientation lock (its wrist in position mode). Released by any
        position command, a joint ``servo_jf``, ``free`` or :meth:`unlock_joints`."""
        mask = np.asarray(joints, dtype=bool)
        if self.mode == EFFORT:
            self._hold_locked(mask & ~self.locked)
        self.locked = mask.copy()

    def unlock_joints(self) -> None:
        self.locked[:] = False

    def _hold_locked(self, joints: np.ndarray) -> None:
        self.servo.integral[joints] = 0.0
        self.q_ref = np.where(joints, self.q, self.q_ref)
        self.qd_ref = np.where(joints, 0.0, self.qd_ref)

    def set_locked_goal(self, goal) -> None:
        """The locked joints' setpoint (dVRK joint space, all joints; the others' values are not read), clipped to the
        limits."""
        q = self.checker.finite(goal, "locked joints' goal")
        q = self.checker.clamp_position(np.where(self.locked, q, self.q_ref))
        self.q_ref = np.where(self.locked, q, self.q_ref)

    def free(self) -> None:
        """crtk ``free``: effort mode at 0 N m (the dVRK's own compensation, if on, still carries the arm)."""
        self.require_ready("free", effort=True)
        self.servo_jf(np.zeros(self.dof))

    def hold(self) -> None:
        """Position mode at the current pose."""
        self.require_ready("hold")
        self._hold()
        self._flush_status()

    def _hold(self) -> None:
        self._cancel_move()
        self._drop_pending()
        self.servo.reset()
        self.mode = POSITION
        self.locked[:] = False
        self.q_ref, self.qd_ref = self.q.copy(), np.zeros(self.dof)
        self._servo_time[:] = self.time
        self._servo_until[:] = self.time

    def use_gravity_compensation(self, on: bool) -> None:
        """Accepted in any state."""
        self.builtin_gravity_compensation = bool(on)

    def teleop(self, enable: bool) -> None:
        """What the console's teleoperation does to this arm when it is enabled or disabled (mtsTeleOperationPSM,
        ../shared/reference/dvrk-console-gravity-and-teleop.md). An MTM at enable: its own compensation on and
        ``body/servo_cf`` zero (the orientation unlocked: every joint in effort mode at 0 N m, with the
        compensation); at disable: ``hold`` in 2.4, nothing in 2.2/2.3. A PSM: nothing here (following the MTM
        through servo_cp is not simulated). Commands the arm's state refuses are left out, as the console's are."""
        self.teleoperated = bool(enable)
        if not self._is_mtm:
            return
        if enable:
            self._free_with_compensation()
        elif self.dvrk_version == "2.4" and self.ready:
            self.hold()

    def clutch(self, pressed: bool) -> None:
        """The operator's clutch pedal during an enabled teleoperation: an MTM as at the enable (compensation on,
        ``body/servo_cf`` zero), a PSM held (``hold``) where it is."""
        if not (pressed and self.teleoperated):
            return
        if self._is_mtm:
            self._free_with_compensation()
        elif self.ready:
            self.hold()

    @property
    def _is_mtm(self) -> bool:
        return self.config.spec.family.upper() == "MTM"

    def _free_with_compensation(self) -> None:
        self.use_gravity_compensation(True)
        if self.ready:
            self.servo_jf(np.zeros(self.dof))  # body/servo_cf(0): J^T 0

    @property
    def busy(self) -> bool:
        """The arm's own move (move_jp or homing) runs."""
        return self._move is not None

    # -- physics -------------------------------------------------------------------
    def static_torque(self, q_motor: np.ndarray) -> np.ndarray:
        """Gravity, springs and cable of the true model (what a perfect compensation applies), dVRK space."""
        if self._static_at is not None and np.max(np.abs(q_motor - self._static_at)) <= STATIC_TOLERANCE:
            return self._static
        if self._compiled is not None:
            tau = self._compiled.gravity(q_motor) @ self.config.delta
        else:
            tau = self.model.gravity(q_motor[None], self.config.delta)[0]
        if self.model.description.known_torques:
            tau = tau + self.physics.known_torques(q_motor)
        self._static = self.model.dvrk_torque_from_motor(tau)
        self._static_at = q_motor.copy()
        return self._static

    def set_console_gc(self, chain: ConsoleChain | None) -> None:
        """Apply another ``kinematic_gc`` chain (None: none) from the next control step. The console reads its
        file at start only; the simulated arm takes it live, for a calibration's hold test with the new file.
        A chain turns the built-in compensation on, as the console's configuration does."""
        if chain is not None and self.dvrk_version != "2.4":
            raise DvrkIdentError(f"kinematic_gc is an input of the dVRK 2.4 console, not of {self.dvrk_version}")
        self.console_gc = chain
        self._pitch = mounting_pitch_of(self.model.description.gravity) + 0.0 if chain is not None else 0.0
        self._compensation_at = None
        self.builtin_gravity_compensation = (chain is not None
                                             or builtin_compensation_at_start(self.config, self.dvrk_version))

    def compensation_torque(self, q_motor: np.ndarray) -> np.ndarray:
        """What the dVRK's own compensation applies while on, dVRK space: the console's chain (kinematic_gc)
        at the measured joints, or a perfect one (the truth's gravity, springs and cable: the MTM's file)."""
        if self.console_gc is None:
            return self.static_torque(q_motor)
        q = self.model.dvrk_from_motor(q_motor)
        if self._compensation_at is None or np.max(np.abs(q - self._compensation_at)) > STATIC_TOLERANCE:
            torques = self.console_gc.torques(q[None], self._pitch)[0]
            self._compensation = np.zeros(self.dof)
            self._compensation[:torques.size] = torques
            self._compensation_at = q.copy()
        return self._compensation

    def _reference(self) -> tuple[np.ndarray, np.ndarray]:
        """The PID's setpoint now (position, velocity): the move's profile, or the streamed setpoint
        carried forward with its velocity (first-order hold between servo_jp samples) for about one of
        the stream's intervals (``SERVO_HOLD_PERIODS``, at most ``SERVO_HOLD`` s), then held still: a
        stream that stopped leaves the arm at its last setpoint, with zero setpoint velocity."""
        if self._move is None:
            if not self._by_stamp:
                return self.q_ref, self.qd_ref
            ahead = np.minimum(np.maximum(self.time, self._servo_time), self._servo_until) - self._servo_time
            return self.q_ref + self.qd_ref * ahead, np.where(self.time <= self._servo_until, self.qd_ref, 0.0)
        t0, q_from, q_to, duration = self._move
        s, ds = _quintic((self.time - t0) / duration)
        self.q_ref = q_from + s * (q_to - q_from)
        self.qd_ref = ds / duration * (q_to - q_from)
        if self.time - t0 >= duration:
            if not self._homing_move:
                self._goal_events.append(True)
            self._move, self._homing_move = None, False
            self._status_dirty = True
            self.qd_ref = np.zeros(self.dof)
        self._servo_time[:] = self.time
        self._servo_until[:] = self.time
        return self.q_ref, self.qd_ref

    def step(self) -> None:
        """One control and physics period."""
        limit = self.config.gains.torque_limit
        compensation = self.compensation_torque(self.state.q) if self.builtin_gravity_compensation else None
        q_ref = None
        if self._pending:
            self._apply_due()
        if self.mode == POSITION:
            q_ref, qd_ref = self._reference()
            tau = self.servo.command(self.q, self.qd, q_ref, qd_ref, self.dt, compensation)
        else:
            tau = self.effort_command if compensation is None else self.effort_command + compensation
            tau = np.clip(tau, -limit, limit)
            if self.locked.any():
                held = self.servo.command(self.q, self.qd, self.q_ref, self.qd_ref, self.dt, compensation)
                tau = np.where(self.locked, held, tau)
        self.effort = tau
        resisting = self.hysteresis.torque(self.q)
        self.state = self.physics.step_euler(self.state, self.model.motor_torque_from_dvrk(tau - resisting), self.dt)
        q_new = self.model.dvrk_from_motor(self.state.q)
        self.hysteresis.update(q_new - self.q)
        self.q, self.qd = q_new, self.model.dvrk_from_motor(self.state.qd)
        self.time += self.dt
        if q_ref is not None and self.operating.supervised:
            self._check_tracking(q_ref)
        if self.operating.update(self.time) or self._status_dirty:
            self._flush_status()

    def _check_tracking(self, q_ref: np.ndarray) -> None:
        """FAULT when the PID's setpoint and the position part further than ``tracking_limit``."""
        error = np.abs(q_ref - self.q)
        over = np.flatnonzero(error > self.tracking_limit)
        if over.size:
            i = int(over[0])
            self._act(self.operating.fault(f"tracking error: {self.names[i]} {error[i]:.4f} beyond "
                                           f"{self.tracking_limit[i]:g}"))

    def advance(self, duration: float) -> int:
        """Run whole physics steps covering ``duration`` s; returns the number of steps."""
        steps = round(duration / self.dt)
        for _ in range(steps):
            self.step()
        return steps

    # -- what the arm publishes ----------------------------------------------------
    def measured(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Position (encoder-quantised), velocity, effort (noise, current-quantised in motor
        coordinates), dVRK joint space, whatever the operating state (see :meth:`sample`)."""
        if self._noise is None:
            return self.q.copy(), self.qd.copy(), self.effort.copy()
        q = quantize(self.q, self._noise.resolution)
        effort = self.effort + self._rng.normal(size=self.dof) * self._noise.effort_std
        if self._noise.effort_resolution is not None:
            tau_motor = quantize(self.model.motor_torque_from_dvrk(effort), self._noise.effort_resolution)
            effort = self.model.dvrk_torque_from_motor(tau_motor)
        return q, self.qd.copy(), effort

    def setpoint(self) -> tuple[np.ndarray, np.ndarray]:
        """Position setpoint and commanded effort."""
        if self.mode == POSITION:
            return self.q_ref.copy(), self.effort.copy()
        return np.where(self.locked, self.q_ref, self.q), self.effort.copy()

    def sample(self) -> Sample:
        """What the dVRK publishes: measured and setpoint while the data is valid (ENABLED or PAUSED,
        homed), else all zeros (the bridge then stamps them 0)."""
        if not self.operating.data_valid:
            zeros = np.zeros(self.dof)
            return Sample(False, zeros, zeros, zeros, zeros, zeros)
        q, qd, effort = self.measured()
        q_sp, effort_sp = self.setpoint()
        return Sample(True, q, qd, effort, q_sp, effort_sp)

    def builtin_compensation_effort(self) -> np.ndarray:
        """The built-in gravity compensation's torques at the current pose while it is on, else zeros
        (``/<ARM>/gravity_compensation/setpoint_js``)."""
        if not self.builtin_gravity_compensation:
            return np.zeros(self.dof)
        if self.console_gc is not None:
            return self.compensation_torque(self.state.q).copy()
        if self._static_at is None:
            return self.static_torque(self.state.q).copy()
        return self._static.copy()  # what the last control step applied (no second evaluation per step)
