"""The package's launch files, described once: each one's arguments and the nodes it starts (ROS-free).

``launch/<name>.launch.py`` builds its launch description from :data:`LAUNCH_FILES` (through
:func:`dvrk_ident_ros.jobs.launch_support.launch_description`), and ``dvrk-ident launch <name>`` runs the same
plan with :class:`~dvrk_ident_ros.jobs.launcher.LaunchPlan` where ``ros2 launch`` is absent: the same arguments
(names, defaults, descriptions, choices), nodes, names, parameters and exit rules. A plan takes the arguments'
values as text (as ``ros2 launch`` holds them), makes them canonical (an arm in any case, booleans as ROS takes
them) and refuses what cannot run (an unknown arm, a file found nowhere) before any node starts.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dvrk_ident_ros.arm.registry import arm_spec, canonical_arm, known_arms, mlse_arms
from dvrk_ident_ros.errors import CalibrationRefusedError, DataError, DvrkIdentError, LaunchArgumentError
from dvrk_ident_ros.files import resolve_package_file
from dvrk_ident_ros.jobs.launcher import PlannedNode


@dataclass(frozen=True)
class Argument:
    """A launch argument (``DeclareLaunchArgument``)."""

    name: str
    default: str | None  # None: required (or default_from)
    description: str = ""
    choices: tuple[str, ...] = ()
    default_from: str | None = None  # the default is the value of this other argument


# -- the arguments' rules: booleans and arms as ROS takes them, the trajectory by the package's one rule --------
_TRUE = ("true", "1")
_FALSE = ("false", "0")






def parse_bool(value: str, name: str) -> bool:
    """A boolean launch argument as ROS accepts it: true/false/1/0, any case; anything else is refused."""
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise LaunchArgumentError(f"launch argument {name}:={value!r} is not a boolean: use true or false (or 1, 0; "
                              "any case)")


def canonical_values(values: dict[str, str], booleans: tuple[str, ...] = (), arm: str | None = None) -> dict[str, str]:
    """The canonical text of the boolean arguments ("true"/"false") and of the arm argument (``PSM1``)."""
    out = {name: "true" if parse_bool(values[name], name) else "false" for name in booleans}
    if arm is not None:
        try:
            out[arm] = canonical_arm(values[arm])
        except DvrkIdentError as exc:
            raise LaunchArgumentError(f"launch argument {arm}: {exc}") from exc
    return out


def default_trajectory(arm: str) -> str:
    """The default excitation trajectory of the arm's family (the arm registry's ``trajectory``)."""
    path = arm_spec(canonical_arm(arm)).trajectory
    if path is None:
        raise DataError(f"the {canonical_arm(arm)} has no default trajectory (dvrk.trajectory of its description): "
                        "give trajectory_file")
    return str(path)


def trajectory_path(arm: str, given: str) -> Path:
    """The trajectory or pose-grid file a launch plays: ``given`` by the one rule of
    :func:`~dvrk_ident_ros.files.resolve_package_file` (absolute, working directory, package share),
    the family's shipped trajectory when empty. Missing: DataError naming the places looked at."""
    return resolve_package_file(given.strip() or default_trajectory(arm), "trajectory file")


def parse_launch_arguments(arguments: tuple[Argument, ...], given: list[str]) -> dict[str, str]:
    """``name:=value`` words against the declared arguments: the value of every argument."""
    known = {a.name: a for a in arguments}
    values: dict[str, str] = {}
    for word in given:
        name, sep, value = word.partition(":=")
        if not sep or not name:
            raise LaunchArgumentError(f"malformed launch argument {word!r}: expected NAME:=VALUE")
        if name not in known:
            raise LaunchArgumentError(f"unknown launch argument {name!r}: expected one of {', '.join(known)}")
        values[name] = value  # the last one wins, as with ros2 launch
    for argument in arguments:
        if argument.name in values:
            continue
        if argument.default is not None:
            values[argument.name] = argument.default
        elif argument.default_from is None:
            raise LaunchArgumentError(f"launch argument {argument.name} is required: {argument.description}")
    for argument in arguments:
        if argument.name not in values and argument.default_from is not None:  # else required: raised above
            values[argument.name] = values[argument.default_from]
        if argument.choices and values[argument.name] not in argument.choices:
            raise LaunchArgumentError(f"launch argument {argument.name}:={values[argument.name]!r}: expected one "
                                      f"of {', '.join(argument.choices)}")
    return values


def _is_true(text: str) -> bool:
    return text == "true"


# -- the plans: the nodes of each launch file for its arguments' values ------------------------------------
def collect_plan(values: dict[str, str]) -> list[PlannedNode]:
    """collect.launch.py: [simulated arm,] recorder, trajectory player (required)."""
    values = {**values, **canonical_values(values, ("sim", "home_arm", "autostart"), "arm")}
    arm, sim = values["arm"], _is_true(values["sim"])
    trajectory = trajectory_path(arm, values["trajectory_file"])  # found nowhere: refused before any node starts
    clock = {"use_sim_time": True} if sim else {}
    nodes = []
    if sim:
        nodes.append(PlannedNode("simulated_arm", {"arm": arm, "publish_clock": True,
                                                   "publish_rate": _number(values, "sim_rate"), **clock},
                                 name=f"simulated_arm_{arm}"))
    nodes.append(PlannedNode("recorder", {"arm": arm, "output_directory": values["output_directory"],
                                          "expect_player": True, **clock},
                             name=f"recorder_{arm}", stop_timeout=15.0))
    nodes.append(PlannedNode("trajectory_player", {"arm": arm, "trajectory_file": str(trajectory),
                                                   "autostart": _is_true(values["autostart"]),
                                                   "home_arm": _is_true(values["home_arm"]), **clock},
                             name=f"trajectory_player_{arm}", required=True))
    return nodes


def gravity_compensation_plan(values: dict[str, str]) -> list[PlannedNode]:
    """gravity_compensation.launch.py: the safety net, the compensation node (required)."""
    values = {**values, **canonical_values(values, ("use_sim_time",), "arm")}
    arm = values["arm"]
    return [PlannedNode("gc_safety_net", {"arm": arm, "use_sim_time": _is_true(values["use_sim_time"])},
                        name=f"gc_safety_net_{arm}"),
            PlannedNode("gravity_compensation", {"arm": arm, "parameter_file": values["parameter_file"],
                                                 "blend": values["blend"],
                                                 "use_sim_time": _is_true(values["use_sim_time"])},
                        name=f"gravity_compensation_{arm}", required=True)]


def identify_plan(values: dict[str, str]) -> list[PlannedNode]:
    """identify.launch.py: the /identify service (required)."""
    return [PlannedNode("identification_service", {"output_directory": values["output_directory"],
                                                   "data_directory": values["data_directory"]},
                        name="identification_service", required=True)]


def sim_plan(values: dict[str, str]) -> list[PlannedNode]:
    """sim.launch.py: a simulated arm (required)."""
    values = {**values, **canonical_values(values, ("use_sim_time",), "arm")}
    arm, clock = values["arm"], _is_true(values["use_sim_time"])
    try:
        rate = float(values["publish_rate"])
    except ValueError as exc:
        raise LaunchArgumentError(f"launch argument publish_rate:={values['publish_rate']!r} is not a number") from exc
    return [PlannedNode("simulated_arm", {"arm": arm, "publish_rate": rate, "publish_clock": clock,
                                          "initial_state": values["initial_state"],
                                          "dvrk_version": values["dvrk_version"], "use_sim_time": clock},
                        name=f"simulated_arm_{arm}", required=True)]


def gc_calibration_plan(values: dict[str, str]) -> list[PlannedNode]:
    """gc_calibration.launch.py: [simulated arm,] the safety net, the gravity job (required); an unknown arm, a grid
    found nowhere or a PSM without its parameter file is refused before any node starts."""
    from dvrk_ident_ros.jobs.gc_calibration import check_job

    values = {**values, **canonical_values(values, ("sim", "home_arm", "hold_only"), "arm")}
    arm, sim = values["arm"], _is_true(values["sim"])
    try:
        resolved = check_job(arm, values["grid_file"], values["parameter_file"], _is_true(values["hold_only"]))
    except CalibrationRefusedError as exc:
        raise LaunchArgumentError(str(exc)) from exc
    nodes = []
    if sim:
        # a pose grid is move_jp only (no servo_jp stream): /clock at 100 Hz wakes every node less often
        nodes.append(PlannedNode("simulated_arm", {"arm": arm, "publish_clock": True, "clock_rate": 100.0,
                                                   "use_sim_time": True}, name=f"simulated_arm_{arm}"))
    clock = {"use_sim_time": True} if sim else {}
    nodes.append(PlannedNode("gc_safety_net", {**clock, "arm": arm}, name=f"gc_safety_net_{arm}"))
    nodes.append(PlannedNode("gc_calibration", {**clock, "arm": arm, "serial": values["serial"],
                                                "grid_file": resolved["grid_file"],
                                                "output_directory": values["output_directory"],
                                                "home_arm": _is_true(values["home_arm"]),
                                                "hold_poses": _integer(values, "hold_poses"),
                                                "hold_time": _number(values, "hold_time"),
                                                "pose_stride": _integer(values, "pose_stride"),
                                                "sweep_stride": _integer(values, "sweep_stride"),
                                                "orders": values["orders"],
                                                "parameter_file": resolved["parameter_file"],
                                                "refit_holds": _integer(values, "refit_holds"),
                                                "hold_only": _is_true(values["hold_only"])},
                             name=f"gc_calibration_{arm}", required=True, stop_timeout=30.0))
    return nodes


def _number(values: dict[str, str], name: str) -> float:
    try:
        return float(values[name])
    except ValueError as exc:
        raise LaunchArgumentError(f"launch argument {name}:={values[name]!r} is not a number") from exc


def _integer(values: dict[str, str], name: str) -> int:
    try:
        return int(values[name])
    except ValueError as exc:
        raise LaunchArgumentError(f"launch argument {name}:={values[name]!r} is not an integer") from exc


# -- the arguments -------------------------------------------------------------------------------------------------
def _arms() -> str:
    return ", ".join(known_arms())


_USE_SIM_TIME = Argument("use_sim_time", "false", "true: follow /clock (a simulated arm started with "
                                                  "use_sim_time:=true)")

COLLECT = (
    Argument("arm", "PSM1", f"dVRK arm to move and record: {_arms()} (any case)"),
    Argument("trajectory_file", "",
             "trajectory or pose-grid file (absolute, relative to the working directory, or in the package share); "
             "empty: config/trajectories/psm_fourier.yaml for PSMx, config/trajectories/mtm_fourier.yaml for MTMx"),
    Argument("sim", "false", "true: also start a simulated arm publishing /clock; every node uses sim time"),
    Argument("sim_rate", "100.0",
             "with sim: the simulated arm's state rate (Hz): 100 as the dVRK bridge's default; 1000 as the -p 0.001 a "
             "lab asks its console for in an identification run (docs/lab-procedure.md)"),
    Argument("home_arm", None, "true: the player powers the arm on and homes it (state_command enable, home) before "
                               "it plays; default: the value of sim", default_from="sim"),
    Argument("autostart", "true", "true: play trajectory_file, then end the launch with the player's status; false: "
                                  "the player waits for /<arm>/play_trajectory action goals"),
    Argument("output_directory", "recordings", "directory that receives the bag (relative to the working directory)"),
)

GRAVITY_COMPENSATION = (
    Argument("arm", "MTML", f"dVRK arm to compensate: {_arms()} (any case; a gc file for "
                            f"{', '.join(n for s in mlse_arms() for n in s.names)}, an identified model for any)"),
    Argument("parameter_file", None, "gc-<ARM>-<serial>.json of the dVRK or an identified-model JSON (required)"),
    Argument("blend", "velocity",
             "a gc file's two directions: velocity (the dVRK console's law) or travel (each joint held with the "
             "branch its cable arrived on: docs/gravity-compensation.md, the drift test); overrides the blend of "
             "config/gravity_compensation.yaml"),
    _USE_SIM_TIME,
)

IDENTIFY = (
    Argument("output_directory", "identification",
             "the only directory /identify writes into (relative to the working directory)"),
    Argument("data_directory", "", "where a request's data files must be; empty: any file this user can read"),
)

SIM = (
    Argument("arm", "PSM1", f"dVRK arm to simulate: {_arms()} (any case)"),
    Argument("publish_rate", "100.0", "rate of /<arm>/measured_js and setpoint_js in Hz (up to 1000.0)"),
    Argument("initial_state", "DISABLED",
             "operating state at start: DISABLED (a freshly started console), ENABLED (powered, not homed), HOMED "
             "(ready), FAULT", choices=("DISABLED", "ENABLED", "HOMED", "FAULT")),
    Argument("dvrk_version", "2.4",
             "dVRK version simulated: the built-in MTM gravity compensation is on at start in 2.4, off in 2.3",
             choices=("2.3", "2.4")),
    Argument("use_sim_time", "false", "true: the simulated arm publishes /clock and every node uses sim time"),
)

GC_CALIBRATION = (
    Argument("arm", "MTML", f"dVRK arm to calibrate: {_arms()} (any case; an MTM's gc file, a PSM's or an ECM's "
                            "kinematic_gc file)"),
    Argument("serial", None, "the arm's serial number: the file is gc-<arm>-<serial>.json"),
    Argument("sim", "false", "true: also start a simulated arm publishing /clock (every node uses sim time), homed "
                             "by the job"),
    Argument("home_arm", None, "true: the job powers the arm on and homes it before it moves; default: the value of "
                               "sim", default_from="sim"),
    Argument("grid_file", "", "pose grid (absolute, relative to the working directory, or in the package share); "
                              "empty: config/grids/<arm>_gc_grid.yaml"),
    Argument("output_directory", "gc_calibration",
             "directory for the bag, the gc file, the report and the logs (relative to the working directory)"),
    Argument("hold_poses", "5", "poses held with the new gc file (0: no hold test)"),
    Argument("hold_time", "2.0", "seconds each pose is held"),
    Argument("pose_stride", "1", "play every k-th pose of each sweep (a shorter run: 3, 5)"),
    Argument("sweep_stride", "1", "play every k-th auxiliary value of each joint's sweeps"),
    Argument("orders", "", 'polynomial orders of joints 1-6 ("4,1,4,4,4,4"), "auto" (cross-validation); empty: the '
                           "fit's default"),
    Argument("parameter_file", "", "PSM, ECM: the identified model (/identify, SDP) the holds refit; required there"),
    Argument("refit_holds", "24", "PSM, ECM: static holds recorded for the refit"),
    Argument("hold_only", "false", "PSM, ECM: only the hold test with the arm's compensation (after a console "
                                   "restart with the new file)"),
)


@dataclass(frozen=True)
class LaunchFile:
    """``launch/<name>.launch.py``: its arguments and its plan."""

    name: str
    arguments: tuple[Argument, ...]
    plan: Callable[[dict[str, str]], list[PlannedNode]]


#: what each node is, in the launch's messages about its exit
NODE_ROLES = {
    "simulated_arm": "the simulated arm",
    "trajectory_player": "the trajectory player",
    "recorder": "the recorder",
    "identification_service": "the identification service",
    "gravity_compensation": "the gravity compensation",
    "gc_safety_net": "the safety net of the gravity compensation",
    "gc_calibration": "the gc calibration",
}

#: launch/<name>.launch.py -> its arguments and plan.
LAUNCH_FILES: dict[str, LaunchFile] = {f.name: f for f in (
    LaunchFile("collect", COLLECT, collect_plan),
    LaunchFile("gc_calibration", GC_CALIBRATION, gc_calibration_plan),
    LaunchFile("gravity_compensation", GRAVITY_COMPENSATION, gravity_compensation_plan),
    LaunchFile("identify", IDENTIFY, identify_plan),
    LaunchFile("sim", SIM, sim_plan),
)}


def launch_file(name: str) -> LaunchFile:
    """The launch file ``name`` (``collect``; ``collect.launch.py`` too)."""
    stem = name.removesuffix(".py").removesuffix(".launch")
    if stem not in LAUNCH_FILES:
        raise LaunchArgumentError(f"unknown launch file {name!r}: expected one of {', '.join(LAUNCH_FILES)}")
    return LAUNCH_FILES[stem]


def launch_plan(name: str, given: list[str], overrides: dict[str, dict] | None = None) -> list[PlannedNode]:
    """The nodes of ``launch/<name>.launch.py`` for ``name:=value`` words; ``overrides``: extra parameters
    per executable (tests: a short homing time)."""
    file = launch_file(name)
    nodes = file.plan(parse_launch_arguments(file.arguments, given))
    if overrides:
        from dataclasses import replace

        nodes = [replace(n, parameters={**n.parameters, **overrides.get(n.node, {})}) for n in nodes]
    return nodes
