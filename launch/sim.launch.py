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
from launch.actions import DeclareLaunchArgument
from launch.launch_description import LaunchDescription
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node, SetParameter
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from dvrk_ident_ros.arm.registry import known_arms
from dvrk_ident_ros.jobs.launch_support import canonical_arguments, exit_handler

PACKAGE = "dvrk_ident"


def generate_launch_description():
    arm = LaunchConfiguration("arm")
    use_sim_time = LaunchConfiguration("use_sim_time")
    simulated_arm = Node(
        package=PACKAGE,
        executable="simulated_arm",
        name=["simulated_arm_", arm],
        parameters=[
            PathJoinSubstitution([FindPackageShare(PACKAGE), "config/simulated_arm.yaml"]),
            {
                "arm": ParameterValue(arm, value_type=str),
                "publish_rate": ParameterValue(LaunchConfiguration("publish_rate"), value_type=float),
                "publish_clock": ParameterValue(use_sim_time, value_type=bool),
                "initial_state": ParameterValue(LaunchConfiguration("initial_state"), value_type=str),
                "dvrk_version": ParameterValue(LaunchConfiguration("dvrk_version"), value_type=str),
            },
        ],
        output="screen",
        emulate_tty=True,
    )
    return LaunchDescription([
        DeclareLaunchArgument("arm", default_value="PSM1",
                              description=f"dVRK arm to simulate: {', '.join(known_arms())} (any case)"),
        DeclareLaunchArgument(
            "publish_rate", default_value="100.0",
            description="rate of /<arm>/measured_js and setpoint_js in Hz (up to 1000.0)"),
        DeclareLaunchArgument(
            "initial_state", default_value="DISABLED", choices=["DISABLED", "ENABLED", "HOMED", "FAULT"],
            description="operating state at start: DISABLED (a freshly started console), ENABLED (powered, not "
                        "homed), HOMED (ready), FAULT"),
        DeclareLaunchArgument(
            "dvrk_version", default_value="2.4", choices=["2.3", "2.4"],
            description="dVRK version simulated: the built-in MTM gravity compensation is on at start in 2.4, "
                        "off in 2.3"),
        DeclareLaunchArgument(
            "use_sim_time", default_value="false",
            description="true: the simulated arm publishes /clock and every node uses sim time"),
        canonical_arguments(booleans=("use_sim_time",), arm="arm"),
        # Applies to every node started after it in this launch file.
        SetParameter(name="use_sim_time", value=use_sim_time),  # "true"/"false" once canonical
        simulated_arm,
        exit_handler(simulated_arm, "the simulated arm", required=True),
    ])
