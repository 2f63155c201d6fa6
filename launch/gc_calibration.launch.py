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
from dvrk_ident_ros.jobs.launch_support import launch_description


def generate_launch_description():
    """The arguments and nodes of dvrk_ident_ros/jobs/launch_plans.py's "gc_calibration" (the plan
    `dvrk-ident launch gc_calibration` runs too)."""
    return launch_description("gc_calibration")
