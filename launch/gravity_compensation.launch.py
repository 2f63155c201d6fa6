"""Gravity compensation of a dVRK arm from our own parameters.

    ros2 launch dvrk_ident gravity_compensation.launch.py arm:=MTML parameter_file:=gc-MTML-12345.json
    ros2 launch dvrk_ident gravity_compensation.launch.py arm:=MTML parameter_file:=gc-MTML-12345.json blend:=travel

``parameter_file`` is required: a dVRK gc JSON or an identified-model JSON
(relative to the working directory). The node turns the dVRK's built-in
compensation off while it runs and back on when it stops (config:
``disable_builtin``). Parameters: config/gravity_compensation.yaml, then the
launch arguments. ``arm`` in any case; ``use_sim_time`` true/false/1/0.

Beside it, ``gc_safety_net`` hands the arm back (``hold``, the dVRK's own compensation
as found) if the compensation ends without doing so itself (a crash, SIGKILL).

The launch ends when the node exits: ``ros2 launch`` exits non-zero when the
node could not run (a missing or wrong parameter file, ...), 0 after Ctrl-C.
"""
from dvrk_ident_ros.jobs.launch_support import launch_description


def generate_launch_description():
    """The arguments and nodes of dvrk_ident_ros/jobs/launch_plans.py's "gravity_compensation" (the plan
    `dvrk-ident launch gravity_compensation` runs too)."""
    return launch_description("gravity_compensation")
