"""The /identify service.

    ros2 launch dvrk_ident identify.launch.py output_directory:=identification

Parameters: config/identification_service.yaml, then the launch argument.
"""
from launch.actions import DeclareLaunchArgument
from launch.launch_description import LaunchDescription
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

PACKAGE = "dvrk_ident"


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument(
            "output_directory", default_value="identification",
            description="directory for results and reports when a request names none "
                        "(relative to the working directory)"),
        Node(
            package=PACKAGE,
            executable="identification_service",
            name="identification_service",
            parameters=[
                PathJoinSubstitution([FindPackageShare(PACKAGE), "config/identification_service.yaml"]),
                {"output_directory": ParameterValue(LaunchConfiguration("output_directory"), value_type=str)},
            ],
            output="screen",
            emulate_tty=True,
        ),
    ])
