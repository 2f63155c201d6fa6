"""Collect identification data: play a trajectory on an arm and record it.

    ros2 launch dvrk_ident collect.launch.py arm:=PSM1 sim:=true
    ros2 launch dvrk_ident collect.launch.py arm:=MTML trajectory_file:=config/grids/mtml_gc_grid.yaml

Starts ``trajectory_player`` (config/trajectory_player.yaml, autostart) and
``recorder`` (config/recorder.yaml); with ``sim:=true`` also a simulated arm
publishing /clock, and every node then uses sim time. The player moves
nothing until the arm is ENABLED, homed and idle: on a real arm, power it on
and home it from the console (or ``home_arm:=true``, which sends enable and
home itself); the simulated arm starts DISABLED and unhomed like a freshly
started console, and ``sim:=true`` homes it (``home_arm`` defaults to ``sim``). When the player exits
(the trajectory is finished, or it stopped on an error) the whole launch shuts
down, which lets the recorder close its bag.

``trajectory_file``: empty picks the shipped Fourier trajectory of the arm
family; a relative path is taken from the working directory, else from the
installed package share (so ``config/grids/mtml_gc_grid.yaml`` works anywhere).
"""
import os

from launch.actions import (
    DeclareLaunchArgument,
    LogInfo,
    OpaqueFunction,
    RegisterEventHandler,
    SetLaunchConfiguration,
    Shutdown,
)
from launch.conditions import IfCondition
from launch.event_handlers import OnProcessExit
from launch.launch_description import LaunchDescription
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node, SetParameter
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

PACKAGE = "dvrk_ident"
ARMS = ["MTML", "MTMR", "PSM1", "PSM2", "PSM3"]
DEFAULT_TRAJECTORY = {
    "MTM": "config/trajectories/mtm_fourier.yaml",
    "PSM": "config/trajectories/psm_fourier.yaml",
}


def _config(name: str) -> PathJoinSubstitution:
    return PathJoinSubstitution([FindPackageShare(PACKAGE), name])


def _resolve_trajectory(context):
    """Set ``trajectory_file`` to an absolute path: the family default when empty."""
    arm = LaunchConfiguration("arm").perform(context)
    given = os.path.expanduser(LaunchConfiguration("trajectory_file").perform(context).strip())
    share = FindPackageShare(PACKAGE).perform(context)
    if not given:
        path = os.path.join(share, DEFAULT_TRAJECTORY[arm[:3]])
    elif os.path.isabs(given) or os.path.exists(given) or not os.path.exists(os.path.join(share, given)):
        path = os.path.abspath(given)  # the player reports a missing file itself
    else:
        path = os.path.join(share, given)
    return [
        SetLaunchConfiguration("trajectory_file", path),
        LogInfo(msg=["trajectory for ", arm, ": ", path]),
    ]


def generate_launch_description():
    arm = LaunchConfiguration("arm")
    sim = LaunchConfiguration("sim")
    player = Node(
        package=PACKAGE,
        executable="trajectory_player",
        name=["trajectory_player_", arm],
        parameters=[
            _config("config/trajectory_player.yaml"),
            {
                "arm": ParameterValue(arm, value_type=str),
                "trajectory_file": ParameterValue(LaunchConfiguration("trajectory_file"), value_type=str),
                "autostart": True,
                "home_arm": ParameterValue(LaunchConfiguration("home_arm"), value_type=bool),
            },
        ],
        output="screen",
        emulate_tty=True,
    )
    return LaunchDescription([
        DeclareLaunchArgument("arm", default_value="PSM1", choices=ARMS, description="dVRK arm to move and record"),
        DeclareLaunchArgument(
            "trajectory_file", default_value="",
            description="trajectory or pose-grid file; empty: config/trajectories/psm_fourier.yaml for PSMx, "
                        "config/trajectories/mtm_fourier.yaml for MTMx"),
        DeclareLaunchArgument(
            "sim", default_value="false", choices=["true", "false"],
            description="true: also start a simulated arm publishing /clock; every node uses sim time"),
        DeclareLaunchArgument(
            "home_arm", default_value=sim, choices=["true", "false"],
            description="true: the player powers the arm on and homes it (state_command enable, home) before "
                        "it plays; default: the value of sim"),
        DeclareLaunchArgument(
            "output_directory", default_value="recordings",
            description="directory that receives the bag (relative to the working directory)"),
        OpaqueFunction(function=_resolve_trajectory),
        # Applies to every node started after it in this launch file.
        SetParameter(name="use_sim_time", value=True, condition=IfCondition(sim)),
        Node(
            package=PACKAGE,
            executable="simulated_arm",
            name=["simulated_arm_", arm],
            parameters=[
                _config("config/simulated_arm.yaml"),
                {"arm": ParameterValue(arm, value_type=str), "publish_clock": True},
            ],
            output="screen",
            emulate_tty=True,
            condition=IfCondition(sim),
        ),
        Node(
            package=PACKAGE,
            executable="recorder",
            name=["recorder_", arm],
            parameters=[
                _config("config/recorder.yaml"),
                {
                    "arm": ParameterValue(arm, value_type=str),
                    "output_directory": ParameterValue(LaunchConfiguration("output_directory"), value_type=str),
                },
            ],
            output="screen",
            emulate_tty=True,
            # SIGINT first; SIGTERM only after this many seconds, so the bag is closed in peace.
            sigterm_timeout="15",
        ),
        player,
        RegisterEventHandler(
            OnProcessExit(
                target_action=player,
                on_exit=[
                    LogInfo(msg="trajectory player exited: stopping the recorder and the other nodes"),
                    Shutdown(reason="trajectory player exited"),
                ],
            )
        ),
    ])
