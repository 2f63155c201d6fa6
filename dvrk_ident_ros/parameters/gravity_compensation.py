"""Parameters of the ``gravity_compensation`` node (full descriptions: config/gravity_compensation.yaml).

Changeable while it runs: ``torque_limit_scale`` (the clamp of the next command: lowering it can only
reduce the torques; raising it never goes beyond the file's or the arm's own limits, scale 1) and
``publish_diagnostics`` (whether ~/diagnostics goes with the next command; nothing reaches the arm).
The arm, the model file and the supervisor's timings are fixed once the node has taken the arm.
"""
from __future__ import annotations

from dvrk_ident_ros.gc.model.travel import DEFAULT_TRAVEL
from dvrk_ident_ros.gc.runtime.fit_check import RANGE_MARGIN_DEG
from dvrk_ident_ros.gc.runtime.supervisor import SETTING_BOUNDS, SupervisorSettings
from dvrk_ident_ros.parameters.schema import Kind, NodeSchema, Parameter


def _timing(name: str, description: str, unit: str = "s") -> Parameter:
    """One of the supervisor's settings: its default and its check are the supervisor's own."""
    bound, exclusive, expect = SETTING_BOUNDS[name]
    return Parameter(name, Kind.DOUBLE, getattr(SupervisorSettings, name), description, unit=unit, minimum=bound,
                     exclusive_minimum=exclusive, expect=expect if exclusive else "")


SCHEMA = NodeSchema("gravity_compensation", (
    Parameter("arm", Kind.STRING, "MTML", "dVRK arm name, any case: MTML or MTMR (a PSM with an identified model)"),
    Parameter("parameter_file", Kind.STRING, "",
              "Model parameters: a dVRK gc-<ARM>-<serial>.json or an identified-model JSON; required"),
    _timing("stale_periods", "Watchdog, in nominal measured_js periods: a sample is late after stale_periods - 1 "
            "periods", unit=""),
    _timing("handover_after", "A state stale this long (and faded to 0 N m) hands the arm back to the dVRK's own "
            "compensation"),
    _timing("resume_after", "After a hand-over the arm is taken again once the state has been fresh and ready this "
            "long"),
    _timing("ramp_in_time", "Time over which the torque is ramped in, from the arm's own effort (setpoint_js) at a "
            "take-over"),
    _timing("fade_out_time", "Time over which the torque is faded out to zero (stale state, exit)"),
    Parameter("torque_limit_scale", Kind.DOUBLE, 1.0,
              "Scale of the per-joint torque limits (the gc file's, or the arm's for an identified model); at "
              "run time: the clamp of the next command", minimum=0.0, maximum=1.0, exclusive_minimum=True,
              runtime=True),
    Parameter("blend", Kind.STRING, "velocity",
              "How an MLSE gc file's two directions are blended: velocity (the dVRK console's law) or travel (the "
              "branch each joint arrived on, held at rest: the cable's hysteresis)", choices=("velocity", "travel")),
    Parameter("blend_travel", Kind.DOUBLE, DEFAULT_TRAVEL,
              "With blend travel: the joint travel over which the direction state turns from one branch to the "
              "other", unit="rad", minimum=0.0, exclusive_minimum=True),
    Parameter("fit_check", Kind.BOOL, True,
              "Before every take-over, check that the file fits the arm: its torques at the pose against the "
              "arm's own holding effort (setpoint_js; MLSE files); a file that does not fit is refused (no "
              "command, exit 2). After every take-over (any file): a joint that leaves the take-over pose by "
              "more than its limit within 2.5 s ends the compensation (hold, exit 2)"),
    Parameter("fit_probe", Kind.BOOL, True,
              "A PSM's identified model: the fit check before every take-over holds the arm at its pose reached "
              "once from above and once from below on the yaw, pitch and insertion (four move_jp of half a "
              "percent of each joint's range, at rest 2 s after each) and checks the model against the efforts "
              "it rests under there; false: against the effort at the pose alone, plus or minus its static "
              "friction"),
    Parameter("fit_tolerance", Kind.DOUBLE_ARRAY, (0.0,),
              "The fit check's per-joint tolerance (7 values for an MTM's gc file, 6 for a PSM's model); [0.0]: "
              "the measured defaults",
              unit="N m"),
    Parameter("fit_range_margin", Kind.DOUBLE, RANGE_MARGIN_DEG,
              "An MLSE file that records the joint range its data covered (joint_position_lower_limit and "
              "_upper_limit): the fit check refuses a take-over with a joint 1-6 beyond that range by more than "
              "this plus a tenth of the range's width", unit="deg", minimum=0.0),
    Parameter("disable_builtin", Kind.BOOL, True,
              "Turn the dVRK's own compensation off before the first command and restore it as found"),
    Parameter("publish_diagnostics", Kind.BOOL, True,
              "Publish GravityCompensationDiagnostics on ~/diagnostics with every command; at run time: from "
              "the next command", runtime=True),
))
