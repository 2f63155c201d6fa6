"""Parameters of the ``gc_calibration`` node (full descriptions: config/gc_calibration.yaml). All are read at
start: the job (an MTM's: dvrk_ident_ros/jobs/gc_calibration.py; a PSM's or an ECM's, the console's own file:
dvrk_ident_ros/jobs/console_calibration.py) runs once with them."""
from __future__ import annotations

from dvrk_ident_ros.parameters.schema import Kind, NodeSchema, Parameter

SCHEMA = NodeSchema("gc_calibration", (
    Parameter("arm", Kind.STRING, "MTML",
              "dVRK arm name, any case: an MTM (gc file) or a PSM or ECM (the console's kinematic_gc file)"),
    Parameter("serial", Kind.STRING, "", "The arm's serial number: names the files the job writes; required",
              numeric_text=True),
    Parameter("parameter_file", Kind.STRING, "",
              "PSM, ECM: the identified model (/identify, SDP) whose gravity the holds refit; required there"),
    Parameter("refit_holds", Kind.INTEGER, 24, "PSM, ECM: static holds recorded for the refit (both sides)",
              minimum=4),
    Parameter("hold_only", Kind.BOOL, False,
              "PSM, ECM: only the hold test, with the compensation the arm applies (after a console restart)"),
    Parameter("grid_file", Kind.STRING, "",
              'Pose grid to play; "" = config/grids/<arm>_gc_grid.yaml (working directory, else package share)'),
    Parameter("output_directory", Kind.STRING, "gc_calibration",
              "Directory for the bag, the gc file, the report and the nodes' logs"),
    Parameter("home_arm", Kind.BOOL, False, "Power the arm on and home it (state_command) before it moves"),
    Parameter("pose_stride", Kind.INTEGER, 1, "Play every k-th pose of each sweep", minimum=1),
    Parameter("sweep_stride", Kind.INTEGER, 1, "Play every k-th auxiliary value of each joint's sweeps", minimum=1),
    Parameter("method", Kind.STRING, "", 'gc estimator; "" = the fitting job\'s default'),
    Parameter("orders", Kind.STRING, "", 'Polynomial orders of joints 1-6 ("4,1,4,4,4,4"), "auto"; "" = default'),
    Parameter("effort", Kind.STRING, "setpoint", "The bag's effort the fit uses", choices=("setpoint", "measured")),
    Parameter("hold_poses", Kind.INTEGER, 5, "Poses held with the new file (0: no hold test)", minimum=0),
    Parameter("hold_time", Kind.DOUBLE, 2.0, "Time each pose is held (MTM: by the compensation alone)", unit="s",
              minimum=0.0, exclusive_minimum=True),
    Parameter("seed", Kind.INTEGER, 0, "Seed of the random hold poses"),
    Parameter("max_tip_drift", Kind.DOUBLE, 0.0,
              "A hold whose tip drifts (PSM, ECM: sags) more fails the job (exit 1; files kept); 0 = report only",
              unit="mm", minimum=0.0),
    Parameter("collect_timeout", Kind.DOUBLE, 3600.0, "Longest time the grid's collection may take", unit="s",
              minimum=0.0, exclusive_minimum=True),
))
