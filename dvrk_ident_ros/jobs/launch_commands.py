"""``dvrk-ident run <node>`` and ``dvrk-ident launch <file> name:=value ...``: the nodes and the launch
files where ``ros2 run`` and ``ros2 launch`` are absent (the project's virtual environment).

``run`` executes one node as ``ros2 run dvrk_ident <node>`` would (the arguments, ``--ros-args`` ones
included, go to the node; its exit status is the command's). ``launch`` runs the plan of a launch file
(:class:`~dvrk_ident_ros.jobs.launcher.LaunchPlan`): the same nodes, names, parameters and exit rules as
``launch/<file>.launch.py``, whose declared arguments (names, defaults, descriptions) it reads from the
file itself. The status is the launch's: non-zero when a node failed.
"""
from __future__ import annotations

import argparse
import ast
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dvrk_ident_ros.errors import DvrkIdentError, LaunchArgumentError
from dvrk_ident_ros.jobs.launch_support import canonical_values, trajectory_path

#: The package's node executables (console scripts of setup.cfg besides dvrk-ident).
NODES = ("simulated_arm", "trajectory_player", "recorder", "identification_service", "gravity_compensation",
         "gc_safety_net", "gc_calibration")


@dataclass(frozen=True)
class Argument:
    """A ``DeclareLaunchArgument`` of a launch file."""

    name: str
    default: str | None  # None: required (or default_from)
    description: str = ""
    choices: tuple[str, ...] = ()
    default_from: str | None = None  # the default is the value of this other argument


def _launch_file(name: str) -> Path:
    from dvrk_ident_ros.environment import find_share_directory

    share = find_share_directory()
    path = None if share is None else share / "launch" / f"{name}.launch.py"
    if path is None or not path.is_file():
        raise DvrkIdentError(f"launch file {name}.launch.py not found (is the package installed?)")
    return path


def _text(node: ast.expr) -> str:
    """A string written in a launch file: a literal, or an f-string with each computed part shown as "..."."""
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else "..." for v in node.values)
    return str(ast.literal_eval(node))


def declared_arguments(path: Path) -> list[Argument]:
    """The launch arguments a launch file declares, read from its source (``launch`` is not imported)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    configurations: dict[str, str] = {}  # variable -> launch configuration it holds
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call) and getattr(node.value.func, "id", "") == "LaunchConfiguration"
                and node.value.args and isinstance(node.value.args[0], ast.Constant)):
            configurations[node.targets[0].id] = node.value.args[0].value
    arguments = []
    calls = [n for n in ast.walk(tree)
             if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "DeclareLaunchArgument"]
    for node in sorted(calls, key=lambda n: (n.lineno, n.col_offset)):
        keywords = {k.arg: k.value for k in node.keywords}
        name = ast.literal_eval(node.args[0] if node.args else keywords["name"])
        default_node = keywords.get("default_value")
        default, default_from = None, None
        if isinstance(default_node, ast.Name):
            default_from = configurations[default_node.id]
        elif default_node is not None:
            default = ast.literal_eval(default_node)
        description = _text(keywords["description"]) if "description" in keywords else ""
        choices = tuple(ast.literal_eval(keywords["choices"])) if "choices" in keywords else ()
        arguments.append(Argument(name, default, description, choices, default_from))
    return arguments


def parse_launch_arguments(arguments: list[Argument], given: list[str]) -> dict[str, str]:
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


# -- the plans of the launch files (keep in step with launch/*.launch.py) ---------------------------------
def collect_plan(values: dict[str, str]):
    """collect.launch.py: [simulated arm,] recorder, trajectory player (required)."""
    from dvrk_ident_ros.jobs.launcher import PlannedNode

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


def gravity_compensation_plan(values: dict[str, str]):
    """gravity_compensation.launch.py: the safety net, the compensation node (required)."""
    from dvrk_ident_ros.jobs.launcher import PlannedNode

    values = {**values, **canonical_values(values, ("use_sim_time",), "arm")}
    arm = values["arm"]
    return [PlannedNode("gc_safety_net", {"arm": arm, "use_sim_time": _is_true(values["use_sim_time"])},
                        name=f"gc_safety_net_{arm}"),
            PlannedNode("gravity_compensation", {"arm": arm, "parameter_file": values["parameter_file"],
                                                 "blend": values["blend"],
                                                 "use_sim_time": _is_true(values["use_sim_time"])},
                        name=f"gravity_compensation_{arm}", required=True)]


def identify_plan(values: dict[str, str]):
    """identify.launch.py: the /identify service (required)."""
    from dvrk_ident_ros.jobs.launcher import PlannedNode

    return [PlannedNode("identification_service", {"output_directory": values["output_directory"],
                                                   "data_directory": values["data_directory"]},
                        name="identification_service", required=True)]


def sim_plan(values: dict[str, str]):
    """sim.launch.py: a simulated arm (required)."""
    from dvrk_ident_ros.jobs.launcher import PlannedNode

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


def gc_calibration_plan(values: dict[str, str]):
    """gc_calibration.launch.py: [simulated arm,] the safety net, the gravity job (required); an unknown arm, a grid
    found nowhere or a PSM without its parameter file is refused before any node starts."""
    from dvrk_ident_ros.errors import CalibrationRefusedError
    from dvrk_ident_ros.jobs.gc_calibration import check_job
    from dvrk_ident_ros.jobs.launcher import PlannedNode

    values = {**values, **canonical_values(values, ("sim", "home_arm", "hold_only"), "arm")}
    arm, sim = values["arm"], _is_true(values["sim"])
    try:
        resolved = check_job(arm, values["grid_file"], values["parameter_file"], _is_true(values["hold_only"]))
    except CalibrationRefusedError as exc:
        raise LaunchArgumentError(str(exc)) from exc
    nodes = []
    if sim:
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


#: launch/<name>.launch.py -> its plan.
PLANS: dict[str, Callable[[dict[str, str]], list]] = {
    "collect": collect_plan,
    "gc_calibration": gc_calibration_plan,
    "gravity_compensation": gravity_compensation_plan,
    "identify": identify_plan,
    "sim": sim_plan,
}


def launch_plan(name: str, given: list[str], overrides: dict[str, dict] | None = None):
    """The nodes of ``launch/<name>.launch.py`` for ``name:=value`` words; ``overrides``: extra parameters
    per executable (tests: a short homing time)."""
    if name not in PLANS:
        raise LaunchArgumentError(f"unknown launch file {name!r}: expected one of {', '.join(PLANS)}")
    nodes = PLANS[name](parse_launch_arguments(declared_arguments(_launch_file(name)), given))
    if overrides:
        from dataclasses import replace

        nodes = [replace(n, parameters={**n.parameters, **overrides.get(n.node, {})}) for n in nodes]
    return nodes


def _log_directory(name: str) -> Path:
    """Where ``dvrk-ident launch`` keeps the nodes' logs: $ROS_LOG_DIR, else $ROS_HOME/log, else ~/.ros/log."""
    base = os.environ.get("ROS_LOG_DIR") or os.path.join(
        os.environ.get("ROS_HOME") or os.path.join(os.path.expanduser("~"), ".ros"), "log")
    return Path(base) / "dvrk_ident" / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"


def _show_arguments(name: str) -> None:
    print(f"Arguments of {name}.launch.py (pass them as NAME:=VALUE):")
    for a in declared_arguments(_launch_file(name)):
        default = (f"default: {a.default!r}" if a.default is not None
                   else f"default: the value of {a.default_from}" if a.default_from else "required")
        choices = f"; one of {', '.join(a.choices)}" if a.choices else ""
        print(f"  {a.name}: {a.description} ({default}{choices})")


def _launch(args: argparse.Namespace) -> int:
    from dvrk_ident_ros.jobs.launcher import LaunchPlan, ros_environment

    name = args.file.removesuffix(".py").removesuffix(".launch")
    # the options may also come after the arguments (argparse gathers those into the remainder)
    late = argparse.ArgumentParser(prog=f"dvrk-ident launch {args.file}", add_help=False)
    _add_launch_options(late)
    options, words = late.parse_known_args(args.arguments)
    args.show_args = args.show_args or options.show_args
    args.quiet = args.quiet or options.quiet
    args.log_dir = options.log_dir or args.log_dir
    args.arguments = words
    if args.show_args:
        if name not in PLANS:
            raise LaunchArgumentError(f"unknown launch file {name!r}: expected one of {', '.join(PLANS)}")
        _show_arguments(name)
        return 0
    nodes = launch_plan(name, args.arguments)
    log_dir = Path(args.log_dir) if args.log_dir else _log_directory(name)
    plan = LaunchPlan(f"{name}.launch.py", nodes, log_dir=log_dir, env=ros_environment(isolated=False),
                      echo=None if args.quiet else sys.stdout)
    print(f"{name}.launch.py: {', '.join(n.label for n in nodes)} (logs in {log_dir})", file=sys.stderr, flush=True)
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in previous:  # the nodes run in their own session: the plan forwards Ctrl-C to each, once
        signal.signal(s, lambda signum, _frame: plan.request_stop(f"{signal.Signals(signum).name} received"))
    try:
        result = plan.run()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    print(result.report(), file=sys.stderr, flush=True)
    return result.status


def _run(args: argparse.Namespace) -> int:
    """Replace this process by the node (its exit status is the command's)."""
    from dvrk_ident_ros.jobs.launcher import ros_environment

    env = ros_environment(isolated=False)
    argv = [sys.executable, "-m", f"dvrk_ident_ros.nodes.{args.node}", *args.node_args]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, argv, env)
    return 0  # not reached


def add_run_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run one node (as `ros2 run dvrk_ident <node>`)",
                       description="Run one node of the package, as `ros2 run dvrk_ident NODE ...` does in a ROS "
                                   "workspace: e.g. dvrk-ident run simulated_arm --ros-args -p arm:=PSM2. "
                                   "`dvrk-ident run NODE --help` lists the node's parameters.")
    p.add_argument("node", choices=NODES)
    p.add_argument("node_args", nargs=argparse.REMAINDER, metavar="...",
                   help="arguments for the node (--help, --ros-args -p NAME:=VALUE ...)")
    p.set_defaults(handler=_run)


def add_launch_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("launch", help="run a launch file's nodes (as `ros2 launch dvrk_ident <file>.launch.py`)",
                       description="Run the nodes of launch/FILE.launch.py with the same names, parameters and exit "
                                   "rules, as `ros2 launch dvrk_ident FILE.launch.py NAME:=VALUE ...` does in a ROS "
                                   "workspace. Ctrl-C stops every node (SIGINT). The exit status is non-zero when a "
                                   "node failed (e.g. the trajectory player of collect).")
    p.add_argument("file", help=f"launch file: {', '.join(PLANS)} (with or without .launch.py)")
    p.add_argument("arguments", nargs=argparse.REMAINDER, metavar="NAME:=VALUE", help="launch arguments")
    _add_launch_options(p)
    p.set_defaults(handler=_launch)


def _add_launch_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--show-args", action="store_true", help="list the launch file's arguments and exit")
    p.add_argument("--log-dir", default=None,
                   help="directory for the nodes' logs (default: ~/.ros/log/dvrk_ident/FILE-DATE-TIME)")
    p.add_argument("--quiet", action="store_true", help="the nodes' output only in the log files")
