"""Collect identification data: play a trajectory on an arm and record it.

    ros2 launch dvrk_ident collect.launch.py arm:=PSM1 sim:=true [sim_rate:=1000.0]
    ros2 launch dvrk_ident collect.launch.py arm:=MTML trajectory_file:=config/grids/mtml_gc_grid.yaml

Starts ``trajectory_player`` (config/trajectory_player.yaml) and ``recorder``
(config/recorder.yaml); with ``sim:=true`` also a simulated arm publishing
/clock, and every node then uses sim time. The player moves nothing until the
arm is ENABLED, homed and idle: on a real arm, power it on and home it from the
console (or ``home_arm:=true``, which sends enable and home itself); the
simulated arm starts DISABLED and unhomed like a freshly started console, and
``sim:=true`` homes it (``home_arm`` defaults to ``sim``).

``autostart:=true`` (the default): the player plays ``trajectory_file`` and
exits; the whole launch then shuts down (the recorder closes its bag: renamed
``<bag>-FAILED`` after an aborted run, removed when nothing was played) and
ends with the player's verdict: ``ros2 launch`` exits 0 when the trajectory was
played, non-zero when the player (or any other node) failed.
``autostart:=false``: the player waits for ``/<ARM>/play_trajectory`` action
goals and the launch runs until Ctrl-C.

``trajectory_file``: empty picks the shipped Fourier trajectory of the arm
family; a relative path is taken from the working directory, else from the
installed package share (so ``config/grids/mtml_gc_grid.yaml`` works anywhere);
a file found nowhere stops the launch before any node starts. ``arm`` in any
case (``psm1``); booleans true/false/1/0 in any case.
"""
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.launch_description import LaunchDescription
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node, SetParameter
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from dvrk_ident_ros.arm.registry import known_arms
from dvrk_ident_ros.jobs.launch_support import canonical_arguments, exit_handler, resolve_trajectory

PACKAGE = "dvrk_ident"


def _config(name: str) -> PathJoinSubstitution:
    return PathJoinSubstitution([FindPackageShare(PACKAGE), name])


def generate_launch_description():
    arm = LaunchConfiguration("arm")
    sim = LaunchConfiguration("sim")
    simulated_arm = Node(
        package=PACKAGE,
        executable="simulated_arm",
        name=["simulated_arm_", arm],
        parameters=[
            _config("config/simulated_arm.yaml"),
            {"arm": ParameterValue(arm, value_type=str), "publish_clock": True,
             "publish_rate": ParameterValue(LaunchConfiguration("sim_rate"), value_type=float)},
        ],
        output="screen",
        emulate_tty=True,
        condition=IfCondition(sim),
    )
    recorder = Node(
        package=PACKAGE,
        executable="recorder",
        name=["recorder_", arm],
        parameters=[
            _config("config/recorder.yaml"),
            {
                "arm": ParameterValue(arm, value_type=str),
                "output_directory": ParameterValue(LaunchConfiguration("output_directory"), value_type=str),
                # a bag without anything played is removed, one of a failed run renamed <bag>-FAILED
                "expect_player": True,
            },
        ],
        output="screen",
        emulate_tty=True,
        # SIGINT first; SIGTERM only after this many seconds, so the bag is closed in peace.
        sigterm_timeout="15",
    )
    player = Node(
        package=PACKAGE,
        executable="trajectory_player",
        name=["trajectory_player_", arm],
        parameters=[
            _config("config/trajectory_player.yaml"),
            {
                "arm": ParameterValue(arm, value_type=str),
                "trajectory_file": ParameterValue(LaunchConfiguration("trajectory_file"), value_type=str),
                "autostart": ParameterValue(LaunchConfiguration("autostart"), value_type=bool),
                "home_arm": ParameterValue(LaunchConfiguration("home_arm"), value_type=bool),
            },
        ],
        output="screen",
        emulate_tty=True,
    )
    return LaunchDescription([
        DeclareLaunchArgument("arm", default_value="PSM1",
                              description=f"dVRK arm to move and record: {', '.join(known_arms())} (any case)"),
        DeclareLaunchArgument(
            "trajectory_file", default_value="",
            description="trajectory or pose-grid file (absolute, relative to the working directory, or in the "
                        "package share); empty: config/trajectories/psm_fourier.yaml for PSMx, "
                        "config/trajectories/mtm_fourier.yaml for MTMx"),
        DeclareLaunchArgument(
            "sim", default_value="false",
            description="true: also start a simulated arm publishing /clock; every node uses sim time"),
        DeclareLaunchArgument(
            "sim_rate", default_value="100.0",
            description="with sim: the simulated arm's state rate (Hz): 100 as the dVRK bridge's default; 1000 as "
                        "the -p 0.001 a lab asks its console for in an identification run (docs/lab-procedure.md)"),
        DeclareLaunchArgument(
            "home_arm", default_value=sim,
            description="true: the player powers the arm on and homes it (state_command enable, home) before "
                        "it plays; default: the value of sim"),
        DeclareLaunchArgument(
            "autostart", default_value="true",
            description="true: play trajectory_file, then end the launch with the player's status; false: the "
                        "player waits for /<arm>/play_trajectory action goals"),
        DeclareLaunchArgument(
            "output_directory", default_value="recordings",
            description="directory that receives the bag (relative to the working directory)"),
        canonical_arguments(booleans=("sim", "home_arm", "autostart"), arm="arm"),
        resolve_trajectory("trajectory_file", arm="arm"),
        # Applies to every node started after it in this launch file.
        SetParameter(name="use_sim_time", value=True, condition=IfCondition(sim)),
        simulated_arm,
        recorder,
        player,
        exit_handler(player, "the trajectory player", required=True),
        exit_handler(recorder, "the recorder"),
        exit_handler(simulated_arm, "the simulated arm"),
    ])
