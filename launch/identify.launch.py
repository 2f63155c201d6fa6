"""The /identify service.

    ros2 launch dvrk_ident identify.launch.py output_directory:=identification

Parameters: config/identification_service.yaml, then the launch arguments. The
launch ends when the service exits: ``ros2 launch`` exits non-zero when it
could not run, 0 after Ctrl-C.
"""
from dvrk_ident_ros.jobs.launch_support import launch_description


def generate_launch_description():
    """The arguments and nodes of dvrk_ident_ros/jobs/launch_plans.py's "identify" (the plan
    `dvrk-ident launch identify` runs too)."""
    return launch_description("identify")
