"""Parameters of the ``trajectory_player`` node (full descriptions: config/trajectory_player.yaml).

Changeable while it runs: ``speed_scale`` only. It is read when a play starts (a goal without its own
speed_scale, or autostart), and every plan is checked against the joint limits at 1 kHz before any
motion, so a new value can never reach the arm unchecked, nor change a run already under way.
"""
from __future__ import annotations

from dvrk_ident_ros.parameters.schema import Kind, NodeSchema, Parameter

SCHEMA = NodeSchema("trajectory_player", (
    Parameter("arm", Kind.STRING, "PSM1", "dVRK arm name, any case (e.g. MTML, PSM1); topics are /<arm>/..."),
    Parameter("trajectory_file", Kind.STRING, "",
              "Trajectory or pose-grid file: absolute, relative to the working directory, or in the package's "
              'share; "" = none loaded'),
    Parameter("autostart", Kind.BOOL, False,
              "Play trajectory_file at start, then exit (0 done, 1 aborted, 2 refused); false = wait for the "
              "PlayTrajectory action"),
    Parameter("ready_timeout", Kind.DOUBLE, 60.0,
              "How long a play request waits for the arm to be ENABLED, homed and idle before it is refused",
              unit="s", minimum=0.0, exclusive_minimum=True),
    Parameter("home_arm", Kind.BOOL, False,
              "Power on and home a not-ready arm (state_command enable, home); false: the operator does"),
    Parameter("stream_rate", Kind.DOUBLE, 500.0, "Rate of the /<arm>/servo_jp stream, on absolute deadlines",
              unit="Hz", minimum=1.0, maximum=2000.0),
    Parameter("ramp_in_speed", Kind.DOUBLE, 0.2,
              "Largest joint speed of the ramp from the current pose to the trajectory start (m/s for insertion)",
              unit="rad/s", minimum=0.0, exclusive_minimum=True),
    Parameter("tracking_error_limit", Kind.DOUBLE_ARRAY, None,
              "Largest |setpoint - measured| per dVRK joint before the player stops; not set = the arm "
              "description's tracking_error", unit="rad (m for prismatic)", minimum=0.0, exclusive_minimum=True,
              arm_dependent=True),
    Parameter("stale_timeout", Kind.DOUBLE, 0.1,
              "Largest age of the last fresh measured_js (valid, its stamp advanced) before the player stops streaming",
              unit="s", minimum=0.0, exclusive_minimum=True),
    Parameter("speed_scale", Kind.DOUBLE, 1.0,
              "Factor on the playback speed (0.5: half speed); at run time: for the next play (every plan is "
              "checked against the limits before motion)", minimum=0.0, maximum=1.0, exclusive_minimum=True,
              runtime=True),
    Parameter("periods", Kind.INTEGER, 0, "Periods of a Fourier trajectory to play; 0 = the file's number",
              minimum=0),
    Parameter("pose_stride", Kind.INTEGER, 1, "Pose grid: play every k-th pose of each sweep (1 = all)", minimum=1),
    Parameter("sweep_stride", Kind.INTEGER, 1,
              "Pose grid: play every k-th auxiliary value (or repetition) of each joint's sweeps (1 = all)",
              minimum=1),
    Parameter("wait_for_recorder", Kind.BOOL, True,
              "autostart: wait until a recorder reports /<arm>/measured_js written; false plays without one"),
    Parameter("recorder_timeout", Kind.DOUBLE, 15.0,
              "autostart: how long to wait for that recorder, once the arm is ready, before refusing to play",
              unit="s", minimum=0.0, exclusive_minimum=True),
))
