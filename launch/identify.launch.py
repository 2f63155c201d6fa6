"""The /identify service.

    ros2 launch dvrk_ident identify.launch.py output_directory:=identification

Parameters: config/identification_service.yaml, then the launch arguments. The
launch ends when the service exits: ``ros2 launch`` exits non-zero when it
could not run, 0 after Ctrl-C.
"""
from launch.actions import DeclareLaunchArgument
from launch.launch_description import LaunchDescription
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from dvrk_ident_ros.jobs.launch_support import exit_handler

PACKAGE = "dvrk_ident"


def generate_launch_description():
    service = Node(
        package=PACKAGE,
        executable="identification_service",
        name="identification_service",
        parameters=[
            PathJoinSubstitution([FindPackageShare(PACKAGE), "config/identification_service.yaml"]),
            {
                "output_directory": ParameterValue(LaunchConfiguration("output_directory"), value_type=str),
                "data_directory": ParameterValue(LaunchConfiguration("data_directory"), value_type=str),
            },
        ],
        output="screen",
        emulate_tty=True,
    )
    return LaunchDescription([
        DeclareLaunchArgument(
            "output_directory", default_value="identification",
            description="the only directory /identify writes into (relative to the working directory)"),
        DeclareLaunchArgument(
            "data_directory", default_value="",
            description="where a request's data files must be; empty: any file this user can read"),
        service,
        exit_handler(service, "the identification service", required=True),
    ])
