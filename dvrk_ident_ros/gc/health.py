"""The compensation's health as the ROS diagnostics tools show it: a level and one short sentence (ROS-free).

Levels are diagnostic_msgs/DiagnosticStatus's: OK while compensating (or idle
on purpose: the arm not ready, teleoperation has it), WARN while fading on a
stale state, at exit, with a torque clamped at its limit, or while waiting for
something that should come (the dVRK's own compensation to switch off, fresh
state before taking the arm again), ERROR while stopped by an outage (not
commanding while it should).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dvrk_ident_ros.gc.supervisor import CompensationState

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
