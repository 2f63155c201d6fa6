"""The whole gravity job on one arm: an MTM's gc file, or a PSM's or an ECM's file for the dVRK 2.4 console.

    ros2 launch dvrk_ident gc_calibration.launch.py arm:=MTML serial:=41878
    ros2 launch dvrk_ident gc_calibration.launch.py arm:=MTML serial:=0 sim:=true
    ros2 launch dvrk_ident gc_calibration.launch.py arm:=MTML serial:=0 sim:=true pose_stride:=10 sweep_stride:=2
    ros2 launch dvrk_ident gc_calibration.launch.py arm:=PSM1 serial:=28007 parameter_file:=psm1_sdp.json

Starts ``gc_calibration`` (config/gc_calibration.yaml), which runs the job in order. An MTM
(dvrk_ident_ros/jobs/gc_calibration.py): the nodes of collect.launch.py play ``grid_file`` and record it;
once the bag is closed, gc-<ARM>-<serial>.json is fitted from it (as ``dvrk-ident gc fit``); the
``gravity_compensation`` node then holds the arm with the new file at ``hold_poses`` poses away from the
grid for ``hold_time`` s each, and the drift (joint, tip) is reported in ``output_directory``
(gc-<ARM>-<serial>-report.txt, -hold.csv, -hold.png). A PSM or an ECM (dvrk_ident_ros/jobs/console_calibration.py,
dVRK 2.4): ``refit_holds`` static holds are recorded, the gravity of ``parameter_file`` (the identified model)
refitted to them, the console's physical-DH file <ARM>-<serial>-kinematic-gc.json fitted, and the arm held
in position mode at ``hold_poses`` poses with its compensation, then with the new file (a simulated arm takes
it live; a console after a restart: ``hold_only:=true``). With ``sim:=true`` a simulated arm publishing
/clock is started too (every node then uses sim time), and homed by the job (``home_arm`` defaults to
``sim``). On a real arm: power it on and home it from the console first.

The launch ends with the job's status: 0 done, non-zero when a step failed (the player's status when the
grid could not be played, 1 for the fit or the hold). An unknown arm, a grid found nowhere or a PSM without
its parameter file stops the launch before any node starts.
"""
from launch.actions import DeclareLaunchArgument, OpaqueFunction, SetLaunchConfiguration
from launch.conditions import IfCondition
from launch.launch_description import LaunchDescription
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node, SetParameter
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from dvrk_ident_ros.arm.registry import known_arms
from dvrk_ident_ros.jobs.gc_calibration import check_job
from dvrk_ident_ros.jobs.launch_support import canonical_arguments, exit_handler

PACKAGE = "dvrk_ident"


def _config(name: str) -> PathJoinSubstitution:
    return PathJoinSubstitution([FindPackageShare(PACKAGE), name])


def _check_job(context):
    """An unknown arm, a grid found nowhere or a PSM without its parameter file stops the launch before any node
    starts."""
    given = context.launch_configurations
    resolved = check_job(given["arm"], given["grid_file"], given["parameter_file"],
                         given["hold_only"].lower() == "true")
    return [SetLaunchConfiguration("grid_file", resolved["grid_file"]),
            SetLaunchConfiguration("parameter_file", resolved["parameter_file"])]


def generate_launch_description():
    arm = LaunchConfiguration("arm")
    sim = LaunchConfiguration("sim")
    simulated_arm = Node(
        package=PACKAGE,
        executable="simulated_arm",
        name=["simulated_arm_", arm],
        parameters=[_config("config/simulated_arm.yaml"),
                    # a pose grid is move_jp only (no servo_jp stream): /clock at 100 Hz wakes every node 5x less
                    {"arm": ParameterValue(arm, value_type=str), "publish_clock": True, "clock_rate": 100.0}],
        output="screen",
        emulate_tty=True,
        condition=IfCondition(sim),
    )
    job = Node(
        package=PACKAGE,
        executable="gc_calibration",
        name=["gc_calibration_", arm],
        parameters=[
            _config("config/gc_calibration.yaml"),
            {
                "arm": ParameterValue(arm, value_type=str),
                "serial": ParameterValue(LaunchConfiguration("serial"), value_type=str),
                "grid_file": ParameterValue(LaunchConfiguration("grid_file"), value_type=str),
                "output_directory": ParameterValue(LaunchConfiguration("output_directory"), value_type=str),
                "home_arm": ParameterValue(LaunchConfiguration("home_arm"), value_type=bool),
                "hold_poses": ParameterValue(LaunchConfiguration("hold_poses"), value_type=int),
                "hold_time": ParameterValue(LaunchConfiguration("hold_time"), value_type=float),
                "pose_stride": ParameterValue(LaunchConfiguration("pose_stride"), value_type=int),
                "sweep_stride": ParameterValue(LaunchConfiguration("sweep_stride"), value_type=int),
                "orders": ParameterValue(LaunchConfiguration("orders"), value_type=str),
                "parameter_file": ParameterValue(LaunchConfiguration("parameter_file"), value_type=str),
                "refit_holds": ParameterValue(LaunchConfiguration("refit_holds"), value_type=int),
                "hold_only": ParameterValue(LaunchConfiguration("hold_only"), value_type=bool),
            },
        ],
        output="screen",
        emulate_tty=True,
        # SIGINT first: the job stops its nodes (the recorder closes its bag, the compensation fades out)
        sigterm_timeout="30",
    )
    # hands the arm back (hold, the dVRK's own compensation as found) if the job's compensation node ends
    # without doing it (its hold test runs gravity_compensation)
    safety_net = Node(
        package=PACKAGE,
        executable="gc_safety_net",
        name=["gc_safety_net_", arm],
        parameters=[_config("config/gc_safety_net.yaml"), {"arm": ParameterValue(arm, value_type=str)}],
        output="screen",
        emulate_tty=True,
    )
    arms = ", ".join(known_arms())
    return LaunchDescription([
        DeclareLaunchArgument("arm", default_value="MTML",
                              description=f"dVRK arm to calibrate: {arms} (any case; an MTM's gc file, a PSM's or "
                                          "an ECM's kinematic_gc file)"),
        DeclareLaunchArgument("serial", description="the arm's serial number: the file is gc-<arm>-<serial>.json"),
        DeclareLaunchArgument(
            "sim", default_value="false",
            description="true: also start a simulated arm publishing /clock (every node uses sim time), homed by "
                        "the job"),
        DeclareLaunchArgument(
            "home_arm", default_value=sim,
            description="true: the job powers the arm on and homes it before it moves; default: the value of sim"),
        DeclareLaunchArgument(
            "grid_file", default_value="",
            description="pose grid (absolute, relative to the working directory, or in the package share); empty: "
                        "config/grids/<arm>_gc_grid.yaml"),
        DeclareLaunchArgument(
            "output_directory", default_value="gc_calibration",
            description="directory for the bag, the gc file, the report and the logs (relative to the working "
                        "directory)"),
        DeclareLaunchArgument("hold_poses", default_value="5",
                              description="poses held with the new gc file (0: no hold test)"),
        DeclareLaunchArgument("hold_time", default_value="2.0", description="seconds each pose is held"),
        DeclareLaunchArgument("pose_stride", default_value="1",
                              description="play every k-th pose of each sweep (a shorter run: 3, 5)"),
        DeclareLaunchArgument("sweep_stride", default_value="1",
                              description="play every k-th auxiliary value of each joint's sweeps"),
        DeclareLaunchArgument("orders", default_value="",
                              description='polynomial orders of joints 1-6 ("4,1,4,4,4,4"), "auto" (cross-validation); '
                                          "empty: the fit's default"),
        DeclareLaunchArgument("parameter_file", default_value="",
                              description="PSM, ECM: the identified model (/identify, SDP) the holds refit; required "
                                          "there"),
        DeclareLaunchArgument("refit_holds", default_value="24",
                              description="PSM, ECM: static holds recorded for the refit"),
        DeclareLaunchArgument("hold_only", default_value="false",
                              description="PSM, ECM: only the hold test with the arm's compensation (after a "
                                          "console restart with the new file)"),
        canonical_arguments(booleans=("sim", "home_arm", "hold_only"), arm="arm"),
        OpaqueFunction(function=_check_job),
        # Applies to every node started after it in this launch file (the job passes it to the nodes it starts).
        SetParameter(name="use_sim_time", value=True, condition=IfCondition(sim)),
        simulated_arm,
        safety_net,
        job,
        exit_handler(job, "the gc calibration", required=True),
        exit_handler(simulated_arm, "the simulated arm"),
        exit_handler(safety_net, "the safety net of the gravity compensation"),
    ])
