"""Parameters of the ``recorder`` node (full descriptions: config/recorder.yaml). All are read at start
(they name the bag and its topics): none changes while it records."""
from __future__ import annotations

from dvrk_ident_ros.parameters.schema import Kind, NodeSchema, Parameter

SCHEMA = NodeSchema("recorder", (
    Parameter("arm", Kind.STRING, "PSM1",
              "dVRK arm name, any case (e.g. MTML, PSM1); the recorded topics are /<arm>/..."),
    Parameter("output_directory", Kind.STRING, "recordings",
              "Directory that receives one bag per recording (relative to the working directory)"),
    Parameter("bag_path", Kind.STRING, "", 'Bag directory to write; "" = a time-stamped name inside output_directory'),
    Parameter("record_setpoint", Kind.BOOL, True, "Record /<arm>/setpoint_js as well as measured_js"),
    Parameter("expect_player", Kind.BOOL, False,
              "A player was started for this recording: a bag in which it never moved the arm is removed at exit"),
    Parameter("gap_threshold", Kind.DOUBLE, 0.0,
              "A gap between two measured_js samples longer than this is reported; 0 = 2.5 x the median period",
              unit="s", minimum=0.0),
    Parameter("extra_topics", Kind.STRING_ARRAY, None,
              'Further topics to record, e.g. ["/PSM1/jaw/measured_js"]; not set = none'),
))
