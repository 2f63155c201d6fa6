"""A simulated dVRK arm.

    ros2 launch dvrk_ident sim.launch.py arm:=PSM1 publish_rate:=100.0 use_sim_time:=false

Parameters: config/simulated_arm.yaml, then the launch arguments. With
``use_sim_time:=true`` the simulated arm publishes /clock (``publish_clock``)
and every node of this launch runs on that clock.
"""
from launch.actions import DeclareLaunchArgument
from launch.launch_description import LaunchDescription
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node, SetParameter
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

PACKAGE = "dvrk_ident"
ARMS = ["MTML", "MTMR", "PSM1", "PSM2", "PSM3"]


def generate_launch_description():
    arm = LaunchConfiguration("arm")
    use_sim_time = LaunchConfiguration("use_sim_time")
    return LaunchDescription([
        DeclareLaunchArgument("arm", default_value="PSM1", choices=ARMS, description="dVRK arm to simulate"),
        DeclareLaunchArgument(
            "publish_rate", default_value="100.0",
            description="rate of /<arm>/measured_js and setpoint_js in Hz (up to 1000.0)"),
        DeclareLaunchArgument(
            "use_sim_time", default_value="false", choices=["true", "false"],
            description="true: the simulated arm publishes /clock and every node uses sim time"),
        # Applies to every node started after it in this launch file.
        SetParameter(name="use_sim_time", value=use_sim_time),
        Node(
            package=PACKAGE,
            executable="simulated_arm",
            name=["simulated_arm_", arm],
            parameters=[
                PathJoinSubstitution([FindPackageShare(PACKAGE), "config/simulated_arm.yaml"]),
                {
                    "arm": ParameterValue(arm, value_type=str),
                    "publish_rate": ParameterValue(LaunchConfiguration("publish_rate"), value_type=float),
                    "publish_clock": ParameterValue(use_sim_time, value_type=bool),
                },
            ],
            output="screen",
            emulate_tty=True,
        ),
    ])
