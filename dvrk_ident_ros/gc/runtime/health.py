"""The compensation's health as the ROS diagnostics tools show it: a level and one short sentence (ROS-free).

Levels are diagnostic_msgs/DiagnosticStatus's: OK while compensating (or idle
on purpose: the arm not ready, teleoperation has it), WARN while fading on a
stale state, at exit, with a torque clamped at its limit, or while waiting for
something that should come (the dVRK's own compensation to switch off, fresh
state before taking the arm again), ERROR while stopped by an outage (not
commanding while it should).

Also the node's counters, its /diagnostics key-values and the lines it logs about the state's outages.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dvrk_ident_ros.gc.runtime.supervisor import CompensationState, CompensationSupervisor

OK, WARN, ERROR = 0, 1, 2  # diagnostic_msgs/DiagnosticStatus.OK, WARN, ERROR
STATE_NAMES = {CompensationState.RAMP_IN: "ramp-in", CompensationState.ACTIVE: "active",
               CompensationState.FADING_OUT: "fading out", CompensationState.STOPPED: "stopped"}


@dataclass
class Health:
    level: int
    message: str


def compensation_health(arm: str, state: CompensationState, scale: float, *, stale_for: float | None = None,
                        handed_over: bool = False, final: bool = False, saturated: Sequence[str] = (),
                        idle_reason: str = "", idle_expected: bool = False) -> Health:
    """The level and message for the compensation of ``arm``.

    ``stale_for``: s since the last sample during an outage (the state went stale while commanding and has
    not come back); ``handed_over``: the arm was handed back to the dVRK's own compensation; ``final``: the
    node is exiting; ``saturated``: joints whose torque was clamped since the last report; ``idle_reason``:
    why the node does not command (while STOPPED without an outage); ``idle_expected``: that reason is a
    normal one (the arm not ready, teleoperation has it), not something the node waits for."""
    if state == CompensationState.FADING_OUT:
        if final:
            return Health(WARN, f"{arm}: exiting: fading out (scale {scale:.2f}), then the dVRK's own "
                                "compensation as found")
        if stale_for is not None:
            return Health(WARN, f"{arm}: no measured_js for {1e3 * stale_for:.0f} ms: fading out (scale "
                                f"{scale:.2f})")
        return Health(WARN, f"{arm}: fading out (scale {scale:.2f})")
    if state in (CompensationState.RAMP_IN, CompensationState.ACTIVE):
        what = f"compensating {arm}" + (f" (ramp-in, scale {scale:.2f})" if state == CompensationState.RAMP_IN else "")
        if saturated:
            return Health(WARN, f"{what}; torque clamped at its limit on {', '.join(saturated)}")
        return Health(OK, what)
    if stale_for is not None:
        back = ("handed back to the dVRK's own compensation" if handed_over
                else "not commanding (faded to zero), the dVRK's own compensation still off")
        return Health(ERROR, f"{arm}: no measured_js for {stale_for:.1f} s: {back}")
    if idle_expected:
        return Health(OK, f"idle: {idle_reason}" if idle_reason else f"{arm}: idle")
    return Health(WARN, f"not commanding {arm}: {idle_reason}" if idle_reason else f"not commanding {arm}")


@dataclass
class Counters:
    """What the node counts: samples answered with a command, rejected (NaN, wrong length), invalid (stamp
    0), repeated (the previous sample again: the arm's loop stalled), and commands of its own (fades)."""

    answered: int = 0
    rejected: int = 0
    invalid: int = 0
    repeated: int = 0
    fade_commands: int = 0


def report_values(counters: Counters, supervisor: CompensationSupervisor, now: float, *, flag_owned: bool,
                  saturated: Sequence[str], parameter_file: str, model: str) -> dict[str, object]:
    """The key-value pairs of the compensation's /diagnostics status."""
    sup = supervisor
    stale = sup.stale_for(now)
    return {
        "state": STATE_NAMES.get(sup.state, str(sup.state)),
        "scale": sup.scale,
        "answered": counters.answered,
        "rejected": counters.rejected,
        "invalid (stamp 0)": counters.invalid,
        "repeated stamps": counters.repeated,
        "fade commands": counters.fade_commands,
        "stale events": sup.stale_events,
        "late samples": sup.late_samples,
        "hand-overs": sup.handovers,
        "max gap (s)": sup.max_gap,
        "stale for (s)": stale if stale is not None else 0.0,
        "period (s)": sup.period,
        "watchdog threshold (s)": sup.stale_after(),
        "dVRK compensation flag owned": flag_owned,
        "saturated since the last report": ", ".join(saturated) or "none",
        "parameter file": parameter_file,
        "model": model,
    }


def exit_summary(counters: Counters, supervisor: CompensationSupervisor) -> str:
    """The counts of the node's exit line."""
    c, sup = counters, supervisor
    return (f"answered {c.answered} samples, rejected {c.rejected}, invalid (stamp 0) {c.invalid}, repeated "
            f"stamps {c.repeated}, stale events {sup.stale_events}, late samples {sup.late_samples}, max gap "
            f"{1e3 * sup.max_gap:.0f} ms, hand-overs {sup.handovers}, fade commands {c.fade_commands}")


def late_message(arm: str, supervisor: CompensationSupervisor, now: float, held: int) -> str:
    """A fade starts: the state is late (``held``: such events not logged since the last line)."""
    sup = supervisor
    return (f"/{arm}/measured_js late: no sample for {1e3 * (sup.stale_for(now) or 0.0):.0f} ms (threshold "
            f"{1e3 * sup.stale_after():.0f} ms, period {1e3 * sup.period:.1f} ms): fading out over "
            f"{sup.settings.fade_out_time:g} s until it comes back ({sup.stale_events} stale events, "
            f"{sup.late_samples} late samples so far" + (f"; {held} more since the last report" if held else "")
            + ")")


def faded_message(arm: str, supervisor: CompensationSupervisor, now: float, held: int) -> str:
    """A stale fade reached 0 N m; the arm is still the node's until ``handover_after``."""
    sup = supervisor
    return (f"faded to 0 N m with /{arm}/measured_js stale for {1e3 * (sup.stale_for(now) or 0.0):.0f} ms: not "
            f"commanding; the dVRK's own compensation stays off until handover_after "
            f"{sup.settings.handover_after:g} s" + (f" ({held} more since the last report)" if held else ""))
