"""Who has the arm: the compensation taking it over, yielding it, stopping, handing it back (ROS-free).

The gravity-compensation node's decisions off its control path, on the events it receives: a valid sample
while it does not command (:meth:`ArmOwnership.may_start`: the take-over's checks of gc/runtime/takeover.py, the
fit check before it, a PSM's with its probe from both sides of the pose, and the guard after it), a sample with
stamp 0 (:meth:`~ArmOwnership.on_invalid`), the arm's operating state (:meth:`~ArmOwnership.on_operating_state`),
a reading of the dVRK's own compensation (:meth:`~ArmOwnership.on_reading`: someone else turned it on, the node
yields), an outage (:meth:`~ArmOwnership.hand_over_after_outage`) and the exit. What it does goes out through
:class:`ArmOutputs` (the node's publishers and log); what it knows of the arm's readiness comes from
:class:`ArmReadiness` (the node's operating-state monitor). Rules, state by state: docs/nodes.md
("How gravity_compensation runs").
"""
from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from typing import Protocol

from dvrk_ident_ros.arm.state import CrtkState, OperatingStatus
from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.gc.runtime.compensation import Compensation
from dvrk_ident_ros.gc.runtime.fit_check import ModelFitCheck
from dvrk_ident_ros.gc.runtime.fit_probe import BothSidesProbe
from dvrk_ident_ros.gc.runtime.held_effort import HeldEffort
from dvrk_ident_ros.gc.runtime.safety_net import NetState, state_path, write_state
from dvrk_ident_ros.gc.runtime.supervisor import BuiltinCompensation, CompensationState, CompensationSupervisor
from dvrk_ident_ros.gc.runtime.takeover import TakeOverGate
from dvrk_ident_ros.gc.runtime.takeover_guard import TakeoverGuard

#: s: a stamp-0 stream while the operating state says ready is reported after this long (a sample in flight
#: when the arm turns ready is no news)
INVALID_REPORT_AFTER = 1.0


class ArmReadiness(Protocol):
    """The arm's operating state as the node's monitor reads it."""

    @property
    def ready(self) -> bool: ...

    @property
    def status(self) -> OperatingStatus | None: ...

    def settled(self, now: float) -> bool: ...

    def reason(self) -> str: ...


class ArmOutputs(Protocol):
    """What the node does on the core's behalf: its publishers, its watchdog, its log and its exit."""

    def zero_command(self) -> None:
        """One servo_jf of 0 N m now."""

    def set_builtin(self, on: bool) -> None:
        """use_gravity_compensation ``on``."""

    def hold(self) -> None:
        """/<ARM>/hold: the arm's own PID holds it where it is."""

    def move_jp(self, goal: list[float]) -> None:
        """/<ARM>/move_jp ``goal``: the arm moves there itself (the fit probe's holds)."""

    def stop_watchdog(self) -> None: ...

    def log(self, level: int, text: str) -> None:
        """``level``: logging.INFO, WARNING or ERROR."""

    def exit(self, status: int) -> None:
        """End the node as SIGINT does, with exit ``status``."""

    def flag_subscribed(self) -> bool: ...

    def readings_published(self) -> bool: ...


class ArmOwnership:
    """The compensation's hold on one arm; ``waiting`` (why it does not command, "" while it does) and
    ``idle_expected`` (that is on purpose) are what its health reports."""

    def __init__(self, arm: str, law: Compensation, supervisor: CompensationSupervisor,
                 readiness: ArmReadiness, outputs: ArmOutputs, held: HeldEffort, guard: TakeoverGuard | None, *,
                 disable_builtin: bool, has_builtin: bool,
                 probe_limits: tuple[Sequence[float], Sequence[float]] | None = None) -> None:
        """``probe_limits``: the joints' (lower, upper) limits within which a PSM's fit check holds the arm from
        both sides of its pose before a take-over (gc/runtime/fit_probe.py); None: at the pose alone."""
        self.arm = arm
        self.law = law
        self.supervisor = supervisor
        self.readiness = readiness
        self.out = outputs
        self.held = held
        self.guard = guard
        self.probe_limits = probe_limits if isinstance(held.fit_check, ModelFitCheck) else None
        self._probe: BothSidesProbe | None = None  # the fit probe under way before a take-over
        self.disable_builtin = disable_builtin
        self.builtin = BuiltinCompensation()
        self.gate = TakeOverGate(arm, supervisor, self.builtin, disable_builtin=disable_builtin,
                                 has_builtin=has_builtin)
        self.joints = held.joints
        self.names: list[str] = []  # the joints' names, from the first sample commanded from
        self.waiting = ""  # what the node waits for, as last logged ("" while commanding)
        self.idle_expected = False  # the node waits on purpose (the arm not ready, teleoperation has it)
        self.ramp_from: list[float] | None = None  # the running ramp-in's start (the arm's own effort)
        self._take_over_from: list[float] | None = None
        self._invalid_since: float | None = None
        self._started_once = False
        self._refused = False
        # what the safety net (node gc_safety_net) needs if the process dies without handing the arm back
        self.net_path = state_path(arm)
        self._net_owned: bool | None = None
        self.note_ownership()

    # -- waiting ---------------------------------------------------------------------------
    def wait(self, reason: str, expected: bool = False) -> None:
        """Not commanding because of ``reason`` (``expected``: on purpose): logged once, until it changes."""
        self.idle_expected = expected
        if reason != self.waiting:
            self.waiting = reason
            self.out.log(logging.WARNING, f"not commanding {self.arm}: {reason}")

    def _wait_for_arm(self) -> None:
        self.wait(self.readiness.reason(), expected=self.readiness.status is not None)

    # -- events ----------------------------------------------------------------------------
    def valid_sample(self) -> None:
        """A valid sample arrived: earlier stamp-0 samples are no news."""
        self._invalid_since = None

    def on_invalid(self, now: float) -> None:
        """A sample with stamp 0: the arm is not ready. It ignores effort commands, and one would fault it if it
        is homing (its busy state may come after this sample): stop at once, no further command."""
        self.gate.not_ready()
        sup = self.supervisor
        sup.interrupt()
        if sup.state != CompensationState.STOPPED:
            self.stop(f"/{self.arm}/measured_js has stamp 0 (the arm's data is invalid: not ready); stopped at "
                      "once without another command")
        if self._invalid_since is None:
            self._invalid_since = now
        if sup.state != CompensationState.STOPPED:
            return
        if self.builtin.owned:  # taken over, not commanding (yet, or faded to zero on a stale state)
            self.out.log(logging.INFO, self.hand_over())
        if not self.readiness.ready:
            self._wait_for_arm()
        elif now - self._invalid_since >= INVALID_REPORT_AFTER:
            self.wait(f"/{self.arm}/measured_js has stamp 0, the arm's mark of invalid data (powered off, not "
                      "homed or faulted?): waiting for valid samples")

    def on_operating_state(self, new: OperatingStatus, settle: float) -> None:
        """The arm's operating state changed to ``new`` (it counts as ready after ``settle`` s)."""
        sup = self.supervisor
        if self._probe is not None:
            if self._probe_moves(new):
                sup.interrupt()
                return  # the probe's own move
            if not new.ready:
                self._probe = None  # not ready for another reason: the probe starts again at the next rest
            elif not self._probe.done:
                return  # its move ended
        if new.ready:
            self._invalid_since = None  # stamp-0 samples from before are no news about the ready arm
            if sup.state == CompensationState.STOPPED and self.waiting:
                resume = (f" once its state has been fresh for resume_after {sup.settings.resume_after:g} s"
                          if sup.released else "")
                self.out.log(logging.INFO, f"{self.arm} is ready ({new.describe()}): compensating from a valid "
                                           f"sample once it has been ready for {settle:g} s" + resume)
            return
        self.builtin.forget()
        self.gate.not_ready()
        sup.interrupt()
        reason = new.not_ready_reason(self.arm)
        if sup.state != CompensationState.STOPPED:
            # a not-ready arm ignores effort commands, and a busy (homing) one faults on them: not even a zero
            self.stop(f"{reason}; stopped at once without another command (a not-ready arm ignores effort "
                      "commands, a homing one faults on them)")
        elif self.builtin.owned:  # taken over, not commanding (yet, or faded to zero on a stale state)
            self.out.log(logging.INFO, self.hand_over())
        self.wait(reason, expected=True)

    def on_reading(self, on: bool) -> None:
        """A valid reading of the dVRK's own compensation while the arm is ready (``on``: not all zero)."""
        self.gate.reading_seen()
        if self.builtin.observe(on):
            self._yield()
            self.note_ownership()

    def _yield(self) -> None:
        """Someone else turned the dVRK's own compensation on: one zero command, stop, do not fight."""
        reason = (f"the dVRK's own gravity compensation of {self.arm} was turned on by someone else "
                  "(teleoperation turns it on when it enables): stopped commanding so that the arm does not get "
                  "its gravity twice; compensating again once it is off")
        if self.supervisor.state != CompensationState.STOPPED:
            self.out.zero_command()
        self.supervisor.stop()
        self.out.stop_watchdog()
        self.waiting = reason
        self.idle_expected = True
        self.out.log(logging.WARNING, reason)

    # -- taking the arm --------------------------------------------------------------------
    def may_start(self, now: float, stamp: float, q: Sequence[float], qd: Sequence[float],
                  names: Sequence[str]) -> bool:
        """Whether a valid, fresh sample (``q``, ``qd``, stamped ``stamp``, arrived ``now``) may be commanded
        from while the node is not RAMP_IN or ACTIVE; takes the flag over when due. Records the sample's
        arrival (late samples, freshness) while the arm is ready."""
        sup = self.supervisor
        if sup.final:  # exiting: the final fade's samples are answered at its scale, none after it
            if sup.state == CompensationState.FADING_OUT:
                sup.on_sample(now, stamp)
            return sup.state == CompensationState.FADING_OUT
        if not self.readiness.ready:
            sup.interrupt()
            status = self.readiness.status
            if self._probe is None or status is None or not self._probe_moves(status):
                self._wait_for_arm()
            return False
        sup.on_sample(now, stamp)
        if sup.state == CompensationState.FADING_OUT or sup.holding:  # a late sample after a stale fade: ours
            return True
        settled = self.readiness.settled(now)
        if self.held.fit_check is not None and not self.builtin.owned and settled and not self._fits(q, now):
            return False
        out = self.out
        decision = self.gate.decide(now, settled, out.flag_subscribed, out.readings_published)
        if decision.warn:
            out.log(logging.WARNING, decision.warn)
        if decision.take_over:  # the flag was just taken: the ramp-in starts from the arm's effort before "off"
            self._take_over_from = self.held.ramp_start(now, sup.period, self.law.clamp, len(self.law.total))
            self.note_ownership()  # before "off" and the first command
        if decision.send_off:
            out.set_builtin(False)  # before the first command
        if not decision.start:
            if decision.wait:
                self.wait(decision.wait)
            return False
        self.ramp_from = self._take_over_from
        self._probe = None  # the next take-over probes its own pose
        out.log(logging.INFO, self.gate.start_message(self.ramp_from is not None, again=self._started_once))
        self._started_once = True
        if self.guard is not None:
            self.guard.start(q, qd, now)
        if not self.names and len(names) == self.joints:
            self.names = list(names)
        self.waiting = ""
        self.idle_expected = False
        return True

    def _fits(self, q: Sequence[float], now: float) -> bool:
        """The fit check before a take-over: a file that does not fit the arm held at this pose is refused (the
        reason once, no command, exit status 2)."""
        if self._refused:
            return False
        if self.probe_limits is not None:
            return self._fits_from_both_sides(q, now)
        decision = self.held.fit_decision(q, now, self.supervisor.period, self.names)
        if decision.warn:
            self.out.log(logging.WARNING, decision.warn)
        if decision.refuse:
            self._refuse(decision.refuse)
        return decision.fits

    @staticmethod
    def _probe_moves(status: OperatingStatus) -> bool:
        """The arm is busy with a move (ENABLED, homed, busy): the fit probe's, while one runs."""
        return status.state == CrtkState.ENABLED.value and status.is_homed and status.is_busy

    def _fits_from_both_sides(self, q: Sequence[float], now: float) -> bool:
        """A PSM's fit check with the probe (gc/runtime/fit_probe.py): on each sample at rest, the probe's next
        move, then the model against the efforts the arm rested under at its pose from both sides."""
        held, period = self.held, self.supervisor.period
        probe = self._probe
        effort = held.mean(now, period)
        if probe is None:
            if held.setpoint is None or effort is None:
                decision = held.without_effort(now)
                if decision.warn:
                    self.out.log(logging.WARNING, decision.warn)
                return decision.fits
            assert self.probe_limits is not None
            try:
                probe = BothSidesProbe(held.setpoint, *self.probe_limits, names=self.names)
            except DataError as exc:
                self._refuse(f"the fit probe cannot hold {self.arm} from both sides here: {exc}")
                return False
            self._probe = probe
            self.out.log(logging.INFO, f"{self.arm}: {probe.describe()}")
        goal = probe.advance(now, held.setpoint if held.fresh(now, period) else None, effort)
        if goal is not None:
            self.out.move_jp(goal)
            self.waiting = f"fit probe, move {probe.move} of {len(probe.goals)}"
            self.idle_expected = True
            return False
        if probe.failed:
            self._probe = None
            self._refuse(probe.failed)
            return False
        if not probe.done:
            return False
        check = held.fit_check
        assert isinstance(check, ModelFitCheck)
        verdict = check.check_span(q[:self.joints], *probe.span())
        if not verdict.fits:
            self._refuse(verdict.reason(self.arm, self.names))
            return False
        if not probe.said:
            probe.said = True
            self.out.log(logging.INFO, f"the parameter file fits {self.arm} at its pose reached from both sides "
                                       f"(score {verdict.score:.2f})")
        return True

    def _refuse(self, reason: str) -> None:
        """The take-over refused: the reason once, no command, exit status 2."""
        self.out.log(logging.ERROR, f"refused: {reason} (fit_check:=false takes the arm without this check)")
        self.waiting = f"refused: {reason}"
        self._refused = True
        self.out.exit(2)

    def fading(self) -> None:
        """The state came late and the fade began (the watchdog's, between samples): what the arm does from now
        on is not the file's alone, so the take-over guard stops watching (the samples after the outage would
        otherwise blame the file for the fall the fade let happen)."""
        if self.guard is not None:
            self.guard.stop()

    def pulled_away(self, q: Sequence[float], joint: int) -> None:
        """The take-over guard tripped on ``joint``: the file pulls the arm away from where it rested. Hold it
        there (the arm's own PID), the flag back as found, the reason, exit status 2."""
        guard = self.guard
        assert guard is not None
        reason = guard.reason(self.arm, q, joint, self.names)
        guard.stop()
        self.supervisor.stop()
        self.out.stop_watchdog()
        self.out.hold()  # first: the PID takes the arm where it is, before the flag goes back
        self.out.log(logging.ERROR, f"stopped: {reason}; /{self.arm}/hold sent; {self.hand_over()}")
        self.waiting = f"stopped: {reason}"
        self.out.exit(2)

    # -- handing it back -------------------------------------------------------------------
    def hand_over(self, now: float | None = None, *, count: bool = True, hold: bool = False) -> str:
        """Give the flag back as found (``count``: a hand-over while running, not the exit's), with
        ``/<ARM>/hold`` where due (``hold``: the exit, an outage; :meth:`TakeOverGate.hand_over`); what became
        of it, for the log."""
        plan = self.gate.hand_over(now if now is not None else time.monotonic(), count=count,
                                   hold=hold and self.readiness.ready)
        self.note_ownership()  # the node hands back itself: the net has nothing to do
        if plan.flag is not None:
            self.out.set_builtin(plan.flag)
        if plan.hold:
            self.out.hold()
        return plan.said

    def stop(self, reason: str) -> None:
        """Stop at once, no command; hand the flag back."""
        self.supervisor.stop()
        self.out.stop_watchdog()
        self.out.log(logging.WARNING, f"{reason}; {self.hand_over()}")

    def hand_over_after_outage(self, now: float) -> None:
        """The state has been stale for handover_after (and the fade reached 0 N m): back to the dVRK."""
        sup = self.supervisor
        stale = sup.stale_for(now) or 0.0
        self.out.log(logging.WARNING, (
            f"/{self.arm}/measured_js stale for {stale:.2f} s (handover_after {sup.settings.handover_after:g} s): "
            f"{self.hand_over(now, hold=True)}; taking the arm again once its state has been fresh for "
            f"resume_after {sup.settings.resume_after:g} s"))
        self.waiting = f"/{self.arm}/measured_js stale: handed back to the dVRK's own compensation"
        self.idle_expected = False

    def note_ownership(self) -> None:
        """Tell the safety net whether this process owns the arm (only when that changes; off the control
        path). A state that cannot be written is said, and the node goes on: the net is a second line."""
        owned = self.builtin.owned
        if owned == self._net_owned:
            return
        self._net_owned = owned
        restore = self.builtin.found if self.disable_builtin else None
        try:
            write_state(self.net_path, NetState(self.arm, os.getpid(), owned, restore))
        except OSError as exc:
            self.out.log(logging.WARNING, f"the safety net's state cannot be written ({self.net_path}): {exc}")

