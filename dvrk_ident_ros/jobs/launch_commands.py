"""``dvrk-ident run <node>`` and ``dvrk-ident launch <file> name:=value ...``: the nodes and the launch
files where ``ros2 run`` and ``ros2 launch`` are absent (the project's virtual environment).

``run`` executes one node as ``ros2 run dvrk_ident <node>`` would (the arguments, ``--ros-args`` ones
included, go to the node; its exit status is the command's). ``launch`` runs the plan of a launch file
(:mod:`dvrk_ident_ros.jobs.launch_plans`, which ``launch/<file>.launch.py`` is built from) with
:class:`~dvrk_ident_ros.jobs.launcher.LaunchPlan`: the same arguments, nodes, names, parameters and exit
rules. The status is the launch's: non-zero when a node failed.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

from dvrk_ident_ros.jobs.launch_plans import LAUNCH_FILES, launch_file, launch_plan

#: The package's node executables (console scripts of setup.cfg besides dvrk-ident).
NODES = ("simulated_arm", "trajectory_player", "recorder", "identification_service", "gravity_compensation",
         "gc_safety_net", "gc_calibration")


def _log_directory(name: str) -> Path:
    """Where ``dvrk-ident launch`` keeps the nodes' logs: $ROS_LOG_DIR, else $ROS_HOME/log, else ~/.ros/log."""
    base = os.environ.get("ROS_LOG_DIR") or os.path.join(
        os.environ.get("ROS_HOME") or os.path.join(os.path.expanduser("~"), ".ros"), "log")
    return Path(base) / "dvrk_ident" / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"


def _show_arguments(name: str) -> None:
    print(f"Arguments of {name}.launch.py (pass them as NAME:=VALUE):")
    for a in launch_file(name).arguments:
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
    p.add_argument("file", help=f"launch file: {', '.join(LAUNCH_FILES)} (with or without .launch.py)")
    p.add_argument("arguments", nargs=argparse.REMAINDER, metavar="NAME:=VALUE", help="launch arguments")
    _add_launch_options(p)
    p.set_defaults(handler=_launch)


def _add_launch_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--show-args", action="store_true", help="list the launch file's arguments and exit")
    p.add_argument("--log-dir", default=None,
                   help="directory for the nodes' logs (default: ~/.ros/log/dvrk_ident/FILE-DATE-TIME)")
    p.add_argument("--quiet", action="store_true", help="the nodes' output only in the log files")
