"""Parameters of the ``simulated_arm`` node (full descriptions: config/simulated_arm.yaml). All are read
at start (they build the simulated arm and its pacing): none changes while it runs."""
from __future__ import annotations

from dvrk_ident_ros.parameters.schema import Kind, NodeSchema, Parameter

SCHEMA = NodeSchema("simulated_arm", (
    Parameter("arm", Kind.STRING, "PSM1", "dVRK arm name, any case (e.g. MTML, PSM1); topics are /<arm>/..."),
    Parameter("publish_rate", Kind.DOUBLE, 100.0, "Rate of /<arm>/measured_js and setpoint_js (dVRK default 100)",
              unit="Hz", minimum=1.0, maximum=1000.0),
    Parameter("physics_rate", Kind.DOUBLE, 1500.0, "Rate of the physics integration (at least publish_rate)",
              unit="Hz", minimum=1.0),
    Parameter("publish_clock", Kind.BOOL, False, "Publish /clock (other nodes then need use_sim_time:=true)"),
    Parameter("real_time_factor", Kind.DOUBLE, 1.0,
              "Simulated seconds per wall-clock second with publish_clock; 0 = as fast as possible", minimum=0.0),
    Parameter("clock_rate", Kind.DOUBLE, 500.0, "Rate of /clock with publish_clock, in simulated time",
              unit="Hz", minimum=1.0, maximum=10000.0),
    Parameter("true_parameters", Kind.STRING, "",
              'Dynamic parameters of the simulated arm (a file); "" = the shipped set for the arm family'),
    Parameter("config_file", Kind.STRING, "", 'Arm description (a YAML file); "" = the shipped one for the arm family'),
    Parameter("initial_position", Kind.DOUBLE_ARRAY, (0.0,),
              "Start pose, one value per joint of the model; [0.0] = the home pose", unit="rad (m for prismatic)"),
    Parameter("initial_state", Kind.STRING, "DISABLED", "Operating state at start",
              choices=("DISABLED", "ENABLED", "HOMED", "FAULT"), ignore_case=True),
    Parameter("homing_time", Kind.DOUBLE, 3.0, "Duration of the homing (ENABLED, not homed, busy)",
              unit="s", minimum=0.0),
    Parameter("dvrk_version", Kind.STRING, "2.4",
              "dVRK version whose MTM behaviour is simulated: 2.4 built-in compensation on at start, 2.3 off",
              choices=("2.3", "2.4")),
    Parameter("tool_engaged", Kind.BOOL, True,
              "PSM only: a tool is engaged; false: measured_js carries the 7 raw joints, motion is ignored"),
    Parameter("fault_tracking_error", Kind.DOUBLE, 0.5,
              "A joint whose PID setpoint and measured position part by more than this faults the arm (a tenth "
              "in m for prismatic)", unit="rad", minimum=0.0, exclusive_minimum=True),
    Parameter("servo_timing", Kind.STRING, "arrival",
              "How a streamed servo_jp is taken: arrival (as the dVRK: when it reached the arm, held until the "
              "next; depth 1) or stamp (gentler: at its stamp, carried forward between samples)",
              choices=("arrival", "stamp")),
    Parameter("kinematic_gc", Kind.STRING, "",
              "dVRK 2.4 PSM/ECM: the console's physical-DH gravity file (dvrk-ident export kinematic-gc) applied "
              "as the console does (PID feed forward, every mode; use_gravity_compensation turns it off); \"\" = "
              "the console's default (a Si arm's shipped physical file, none for a Classic arm); none = none; at "
              "run time: from the next control step (a console reads it at start only)", runtime=True),
    Parameter("noise", Kind.BOOL, True, "Encoder quantisation and effort noise like a real arm; false = exact"),
    Parameter("seed", Kind.INTEGER, 0, "Seed of the noise generator", minimum=0),
))
