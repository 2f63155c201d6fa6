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
from launch.actions import DeclareLaunchArgument
from launch.launch_description import LaunchDescription
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node, SetParameter
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from dvrk_ident_ros.arm.registry import known_arms, mlse_arms
from dvrk_ident_ros.jobs.launch_support import canonical_arguments, exit_handler

PACKAGE = "dvrk_ident"


def generate_launch_description():
    arm = LaunchConfiguration("arm")
    compensation = Node(
        package=PACKAGE,
        executable="gravity_compensation",
        name=["gravity_compensation_", arm],
        parameters=[
            PathJoinSubstitution([FindPackageShare(PACKAGE), "config/gravity_compensation.yaml"]),
            {
                "arm": ParameterValue(arm, value_type=str),
                "parameter_file": ParameterValue(LaunchConfiguration("parameter_file"), value_type=str),
                "blend": ParameterValue(LaunchConfiguration("blend"), value_type=str),
            },
        ],
        output="screen",
        emulate_tty=True,
    )
    # hands the arm back (hold, the dVRK's own compensation as found) if the compensation ends without doing it
    safety_net = Node(
        package=PACKAGE,
        executable="gc_safety_net",
        name=["gc_safety_net_", arm],
        parameters=[PathJoinSubstitution([FindPackageShare(PACKAGE), "config/gc_safety_net.yaml"]),
                    {"arm": ParameterValue(arm, value_type=str)}],
        output="screen",
        emulate_tty=True,
    )
    return LaunchDescription([
        DeclareLaunchArgument("arm", default_value="MTML",
                              description=f"dVRK arm to compensate: {', '.join(known_arms())} (any case; a gc file for "
                                          f"{', '.join(n for s in mlse_arms() for n in s.names)}, an "
                                          "identified model for any)"),
        DeclareLaunchArgument(
            "parameter_file",
            description="gc-<ARM>-<serial>.json of the dVRK or an identified-model JSON (required)"),
        DeclareLaunchArgument(
            "blend", default_value="velocity",
            description="a gc file's two directions: velocity (the dVRK console's law) or travel (each joint held "
                        "with the branch its cable arrived on: docs/gravity-compensation.md, the drift test); "
                        "overrides the blend of config/gravity_compensation.yaml"),
        DeclareLaunchArgument(
            "use_sim_time", default_value="false",
            description="true: follow /clock (a simulated arm started with use_sim_time:=true)"),
        canonical_arguments(booleans=("use_sim_time",), arm="arm"),
        SetParameter(name="use_sim_time", value=LaunchConfiguration("use_sim_time")),  # "true"/"false" once canonical
        safety_net,
        compensation,
        exit_handler(compensation, "the gravity compensation", required=True),
        exit_handler(safety_net, "the safety net of the gravity compensation"),
    ])
