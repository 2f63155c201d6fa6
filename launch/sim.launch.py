"""A simulated dVRK arm.

    ros2 launch dvrk_ident sim.launch.py arm:=PSM1 publish_rate:=100.0 use_sim_time:=false

The arm starts as the dVRK console leaves it (``initial_state:=DISABLED``, not
homed): power it on and home it with ``/<arm>/state_command`` (enable, home),
or start it ready with ``initial_state:=HOMED``. ``dvrk_version`` sets the
built-in MTM gravity compensation's default (2.4: on, 2.3: off).

Parameters: config/simulated_arm.yaml, then the launch arguments. With
``use_sim_time:=true`` the simulated arm publishes /clock (``publish_clock``)
and every node of this launch runs on that clock. ``arm`` in any case;
``use_sim_time`` true/false/1/0. The launch ends when the simulated arm exits:
``ros2 launch`` exits non-zero when it could not run, 0 after Ctrl-C.
"""
from dvrk_ident_ros.jobs.launch_support import launch_description


def generate_launch_description():
    """The arguments and nodes of dvrk_ident_ros/jobs/launch_plans.py's "sim" (the plan
    `dvrk-ident launch sim` runs too)."""
    return launch_description("sim")
