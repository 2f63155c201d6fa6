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
  ``servo_timing`` "arrival" takes it when it reached the arm and holds it, as
  the dVRK; "stamp" (the default, gentler than any real arm) at its stamp,
  carried forward between samples (:mod:`dvrk_ident_ros.sim.servo_stream`);
- ``move_jp(q)``: the arm plans its own quintic move (``busy`` until done, then
  a goal-reached event), a goal beyond the limits clipped to them
  (:mod:`dvrk_ident_ros.sim.moves`);
- ``servo_jf(tau)``: effort mode, the efforts are applied as they are;
- ``use_gravity_compensation(on)`` (any state): the dVRK's own compensation
  (perfect gravity, springs and cable of the true model, or the dVRK 2.4
  console's ``kinematic_gc`` chain: :mod:`dvrk_ident_ros.sim.compensation`)
  added to every command; on at start on a dVRK 2.4 MTM, off on 2.3;
- ``hold()``: position mode at the current pose.

Below the dVRK's arm software (:class:`~dvrk_ident_ros.sim.pid_arm.PidArm`): the PID
(the setpoint's effort is its command), the dVRK's own compensation, physics, sensors.
"""
from __future__ import annotations

import numpy as np

from dvrk_ident_ros.arm.state import OperatingStatus
from dvrk_ident_ros.errors import ArmNotReadyError, DvrkIdentError
from dvrk_ident_ros.gc.model.console_gc import ConsoleChain
from dvrk_ident_ros.sim.config import SimConfig
from dvrk_ident_ros.sim.moves import JointMoves, Move
from dvrk_ident_ros.sim.operating import Action, OperatingMachine
from dvrk_ident_ros.sim.pid_arm import EFFORT, POSITION, PidArm
from dvrk_ident_ros.sim.sensors import Sample
from dvrk_ident_ros.sim.servo_stream import SERVO_CLOCK, PendingServo, ServoStream, checked_timing

__all__ = ["EFFORT", "FAULT_TRACKING_ERROR", "POSITION", "PRISMATIC_SCALE", "SERVO_CLOCK", "Sample",
           "SimulatedArm", "tracking_limits"]

FAULT_TRACKING_ERROR = 0.5  # rad: default tracking-error fault; prismatic joints use a tenth of it in m
PRISMATIC_SCALE = 0.1  # m per rad of fault_tracking_error for prismatic joints (0.05 m for the PSM insertion)


def tracking_limits(config: SimConfig, fault_tracking_error: float) -> np.ndarray:
    """Per dVRK joint: ``fault_tracking_error`` rad, a tenth of it in m for prismatic joints."""
    if not fault_tracking_error > 0.0:
        raise DvrkIdentError(f"fault_tracking_error {fault_tracking_error}: expected > 0 rad")
    return np.where(config.prismatic, PRISMATIC_SCALE, 1.0) * float(fault_tracking_error)


class SimulatedArm(PidArm):
    """One simulated dVRK arm: the dVRK's arm software (operating state, commands obeyed when ready, its own
    moves, the servo_jp stream, the console's teleoperation) over the arm under its PID (:class:`PidArm`)."""

    def __init__(self, config: SimConfig, variant: str | None = None, *, noise: bool = True, seed: int = 0,
                 physics_rate: float = 1500.0, initial_position: np.ndarray | None = None,
                 initial_state: str = "HOMED", homing_time: float = 3.0, dvrk_version: str = "2.4",
                 tool_engaged: bool = True, fault_tracking_error: float = FAULT_TRACKING_ERROR,
                 servo_timing: str = "stamp", kinematic_gc: ConsoleChain | None = None):
        self.servo_timing = checked_timing(servo_timing)
        # an arm without a tool (the MTM) says homed during its homing move, data valid (sim/operating.py)
        self.operating = OperatingMachine(initial_state, homing_time, homed_while_homing=config.spec.jaw is None)
        self.tracking_limit = tracking_limits(config, fault_tracking_error)
        self.tool_engaged = bool(tool_engaged) or config.spec.jaw is None  # only an arm with a jaw has a tool
        self.moves = JointMoves(config.move_speed)
        super().__init__(config, variant, physics_rate=physics_rate, noise=noise, seed=seed,
                         initial_position=initial_position, dvrk_version=dvrk_version, kinematic_gc=kinematic_gc)
        self.stream = ServoStream(servo_timing, self.checker, self.names, self.dof, self.dt)
        self.teleoperated = False  # /console/teleop/enable: this arm is in an enabled teleoperation
        # operating_state events, as the console sends them: one per accepted state command (changed or not),
        # one at every move's start (busy) and end (idle), one at every other change (homed, fault)
        self._status_dirty = False
        self._last_status = self.status
        self._status_events: list[OperatingStatus] = [self._last_status]

    # -- operating state -------------------------------------------------------------
    @property
    def status(self) -> OperatingStatus:
        """What ``/<ARM>/operating_state`` says now."""
        return self.operating.status(self.moves.commanded)

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
            duration = max(self.operating.homing_time, self.moves.duration(q_from, self.home))
            if duration > 0:
                self.moves.running = Move(self.time, q_from, self.home.copy(), duration, homing=True)
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
        return self.moves.pop_goal_events()

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
        if self.moves.cancel():
            self._status_dirty = True

    # -- commands ------------------------------------------------------------------
    def servo_jp(self, position, velocity=None, *, at: float | None = None, joints=None,
                 received: float | None = None) -> None:
        """A streamed position setpoint (dVRK joint space, all joints; ``joints``, a bool mask or indices:
        only these are set, the others keep the stream's setpoint, see :meth:`servo_reference`), checked at
        once (SafetyError, nothing changes), then taken as ``servo_timing`` says (:meth:`ServoStream.receive`):
        "arrival" (the dVRK) at the simulated instant ``received`` (None: now; ``at`` is not read), "stamp" at
        ``at`` (its stamp), carried forward from it; one stamped before the setpoint in force is ignored
        (``stale_servo``)."""
        self.require_ready("servo_jp")
        reference = self.servo_reference()
        in_force = reference[0]  # a jump is measured from the setpoint in force (carried forward)
        if not self.stream.pending and self.mode == POSITION and self.moves.running is None:
            in_force = self._reference()[0]
        command = self.stream.receive(position, velocity, joints, reference, in_force, self.time, at=at,
                                      received=received)
        if command is not None:
            self._apply_servo(command)

    def servo_reference(self) -> tuple[np.ndarray, np.ndarray]:
        """The streamed setpoint (position, velocity) once every pending servo_jp is applied: what a
        command for some joints completes, and what a new command's jump is measured from."""
        if self.stream.pending:
            return self.stream.latest
        if self.mode == POSITION:
            return self.q_ref, self.qd_ref
        return self.q, np.zeros(self.dof)

    @property
    def pending_servo(self) -> int:
        """Stamped servo_jp commands received but not due yet."""
        return len(self.stream.pending)

    @property
    def stale_servo(self) -> int:
        """servo_jp commands stamped before the setpoint in force: ignored."""
        return self.stream.stale

    @property
    def servo_lateness(self) -> list[float]:
        """s: how late each servo_jp was obeyed, after its stamp (stamp) or after it reached the arm (arrival)."""
        return self.stream.lateness

    def _apply_servo(self, command: PendingServo) -> None:
        """The setpoint for the command's joints from now on, as of its stamp (<= now)."""
        if self.mode != POSITION:
            self.servo.reset()
            self.q_ref, self.qd_ref = self.q.copy(), np.zeros(self.dof)
            self.stream.rebase(min(command.at, self.time))
        fresh = self.stream.fresh(command)
        if not np.any(fresh):
            return
        self._cancel_move()
        self.mode = POSITION
        self.locked[:] = False
        self.q_ref = np.where(fresh, command.q, self.q_ref)
        self.qd_ref = np.where(fresh, command.qd, self.qd_ref)
        self.stream.taken(fresh, command.at, self.time)

    @property
    def trajectory_ratio(self) -> float:
        """trajectory_j/set_ratio: the moves' speeds, scaled."""
        return self.moves.ratio

    def set_trajectory_ratio(self, ratio: float) -> None:
        """The dVRK's ``trajectory_j/set_ratio``: the moves' peak speeds scaled by ``ratio``, in (0, 1]; from the
        next move on. DvrkIdentError (nothing changes) outside that range."""
        self.moves.set_ratio(ratio)

    def emulate_tool_present(self, present: bool) -> None:
        """A PSM's ``emulate_tool_present``: a tool the arm cannot detect counts as engaged (or no longer does);
        an arm without a tool (no jaw) ignores it."""
        if self.config.spec.jaw is not None:
            self.tool_engaged = bool(present)

    def move_jp(self, goal) -> float:
        """Start a move to ``goal`` (clipped to the limits, as the dVRK does); returns its duration (s)."""
        self.require_ready("move_jp")
        q = self.checker.finite(goal, "move_jp goal")
        self.moves.requested = q.copy()  # before the clip: a joining move_joints keeps what was asked
        q = self.checker.position(self.checker.clamp_position(q), "move_jp goal (clipped)")
        start = self.q_ref if self.mode == POSITION else self.q.copy()
        duration = max(0.1, self.moves.duration(start, q))
        if self.mode != POSITION:
            self.servo.reset()
        self._cancel_move()
        self.stream.drop()
        self.mode = POSITION
        self.locked[:] = False
        self.moves.running = Move(self.time, start.copy(), q, duration)
        self._flush_status(force=True)  # busy, even when a move was already running
        return duration

    def move_joints(self, goal, joints) -> float:
        """A move of some ``joints`` only (the PSM's jaw/move_jp): the other joints keep the running move's goal,
        which is re-targeted without a goal-reached event (the dVRK's jaw_move_jp re-evaluates the arm's joint
        trajectory with the new jaw goal), or without a move their setpoint."""
        self.require_ready("move_jp")
        joining = self.moves.commanded and self.mode == POSITION
        # the running move's goal as it was asked (the clip applies to the joined goal: a wrist goal clipped
        # against the jaw's old value is asked again with the jaw's new one)
        q = (self.moves.requested if joining else self.q_ref).copy()
        q[joints] = np.asarray(goal, dtype=float)[joints]
        if joining:
            self.moves.running = None  # joined, not interrupted: no goal_reached false
        return self.move_jp(q)

    def servo_jf(self, effort, *, cartesian: bool = False) -> None:
        """Effort mode at ``effort``; a joint command (not ``cartesian``: the efforts of a ``servo_cf`` wrench)
        releases the locked joints, as the dVRK's switch out of Cartesian space does."""
        self.require_ready("servo_jf", effort=True)
        self.effort_command = self.checker.torque(effort, "servo_jf effort")
        self._cancel_move()
        self.stream.drop()
        if not cartesian:
            self.locked[:] = False
        if self.mode != EFFORT and self.locked.any():  # the locked joints held from where they are
            self._hold_locked(self.locked)
        self.mode = EFFORT
        self._flush_status()

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
        self.stream.drop()
        self.servo.reset()
        self.mode = POSITION
        self.locked[:] = False
        self.q_ref, self.qd_ref = self.q.copy(), np.zeros(self.dof)
        self.stream.restart(self.time)

    def teleop(self, enable: bool) -> None:
        """What the console's teleoperation does to this arm when it is enabled or disabled (sawIntuitiveResearchKit's
        mtsTeleOperationPSM). An MTM at enable: its own compensation on and
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
        return self.moves.running is not None

    # -- physics -------------------------------------------------------------------
    def _reference(self) -> tuple[np.ndarray, np.ndarray]:
        """The PID's setpoint now (position, velocity): the move's profile, or the streamed setpoint
        (:meth:`ServoStream.reference`: carried forward between servo_jp samples for about one of the
        stream's intervals, then held still with zero velocity, as when a stream stops)."""
        if self.moves.running is None:
            return self.stream.reference(self.time, self.q_ref, self.qd_ref)
        self.q_ref, self.qd_ref, ended = self.moves.profile(self.time)
        if ended:
            self._status_dirty = True
        self.stream.restart(self.time)
        return self.q_ref, self.qd_ref

    def step(self) -> None:
        """One control and physics period."""
        if self.stream.pending:
            for command in self.stream.due(self.time):  # the stamped servo_jp due at this step, in order
                self._apply_servo(command)
        reference = self._reference() if self.mode == POSITION else None
        self.drive(self.control(reference))
        if reference is not None and self.operating.supervised:
            self._check_tracking(reference[0])
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
    def sample(self) -> Sample:
        """What the dVRK publishes: measured and setpoint while the data is valid (ENABLED or PAUSED,
        homed), else all zeros (the bridge then stamps them 0)."""
        if not self.operating.data_valid:
            zeros = np.zeros(self.dof)
            return Sample(False, zeros, zeros, zeros, zeros, zeros)
        q, qd, effort = self.measured()
        q_sp, effort_sp = self.setpoint()
        return Sample(True, q, qd, effort, q_sp, effort_sp)
