"""``dvrk-ident``: the package's command line, calling the same core as the nodes.

Each capability registers a sub-command in :data:`SUBCOMMANDS`; errors of the
:class:`~dvrk_ident_ros.errors.DvrkIdentError` family end the command with a
one-line message and exit status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from dvrk_ident_ros import __version__
from dvrk_ident_ros.app.commands.excitation import add_trajectory_commands
from dvrk_ident_ros.app.commands.export import add_export_commands
from dvrk_ident_ros.app.commands.gc import add_gc_commands
from dvrk_ident_ros.app.commands.identify import add_identify_commands
from dvrk_ident_ros.app.commands.model import add_model_commands
from dvrk_ident_ros.app.demo import add_demo_command
from dvrk_ident_ros.environment import Check, ensure_ament_prefix_path, run_checks
from dvrk_ident_ros.errors import DvrkIdentError
from dvrk_ident_ros.jobs.launch_commands import add_launch_command, add_run_command

Handler = Callable[[argparse.Namespace], int]


def _ros_distro_check() -> Check:
    """The ROS 2 distribution this runs on: the one ``make setup`` recorded in the venv (``.ros-distro``), else
    ``ROS_DISTRO`` (a sourced ROS set-up), else that of the installed rclpy (its major version); failed where
    two of these disagree (a venv of one distro with another's ROS set-up sourced, or mixed wheels)."""
    from dvrk_ident_ros.data.recording import detect_ros_distro

    record = Path(sys.prefix) / ".ros-distro"
    sources = {
        f"recorded in {record}": record.read_text(encoding="utf-8").strip().lower() if record.is_file() else "",
        "ROS_DISTRO": os.environ.get("ROS_DISTRO", "").strip().lower(),
        "the installed rclpy": detect_ros_distro({k: v for k, v in os.environ.items() if k != "ROS_DISTRO"}),
    }
    known = {source: distro for source, distro in sources.items() if distro}
    if not known:
        return Check("ros distro", True, "unknown (no ROS_DISTRO, no rclpy of a named distribution)")
    if len(set(known.values())) > 1:
        said = "; ".join(f"{distro} ({source})" for source, distro in known.items())
        return Check("ros distro", False, f"distributions disagree: {said}")
    return Check("ros distro", True, f"{next(iter(known.values()))} ({', '.join(known)})")


def _doctor(args: argparse.Namespace) -> int:
    """Check that the installation is complete (used at the end of ``make setup``)."""
    ensure_ament_prefix_path()
    checks = [*run_checks(), _ros_distro_check()]
    failed = [c for c in checks if not c.ok]
    if args.json:
        print(json.dumps([c.__dict__ for c in checks], indent=2))
    elif not args.quiet or failed:
        for c in checks:
            if not args.quiet or not c.ok:
                print(f"{'ok ' if c.ok else 'BAD'} {c.name:<20} {c.detail}")
    if failed:
        print(f"dvrk-ident doctor: {len(failed)} check(s) failed", file=sys.stderr)
        return 1
    return 0


def _add_doctor(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="check the installation (dependencies, interfaces, executables)")
    p.add_argument("--json", action="store_true", help="print the checks as JSON")
    p.add_argument("--quiet", action="store_true", help="print only failed checks")
    p.set_defaults(handler=_doctor)


def _arm_check(args: argparse.Namespace) -> int:
    """Listen to a live arm (or the simulated one) and say whether the nodes would command it; commands nothing."""
    for name in ("duration", "wait"):
        value = getattr(args, name)
        if not (math.isfinite(value) and value > 0):
            raise DvrkIdentError(f"--{name} {value}: expected a finite number of seconds > 0")
    ensure_ament_prefix_path()
    from dvrk_ident_ros.arm.registry import canonical_arm

    arm = canonical_arm(args.arm)  # an unknown arm: one line, status 2, before ROS starts
    try:
        from dvrk_ident_ros.ros.arm_probe import check_arm
    except ImportError as exc:
        raise DvrkIdentError(f"ROS 2 is not available here ({exc}): source the ROS set-up (or .venv/setup.bash)") \
            from exc

    report = check_arm(arm, args.duration, args.wait)
    if args.json:
        print(json.dumps({"arm": report.arm, "ready": report.ready, "reason": report.reason, "lines": report.lines},
                         indent=2))
    else:
        print(report.text())
    return 0 if report.ready else 1


def _add_arm_check(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("arm-check", help="listen to a live arm for a few seconds and say whether the nodes would "
                                         "command it (operating state, state rate, stamp 0, repeated samples, "
                                         "tool, clocks, the dVRK's own gravity compensation); commands nothing")
    p.add_argument("arm", help="MTML, MTMR, PSM1, PSM2, PSM3, ECM (any case; DVRK_IDENT_GENERATION=si: the Si "
                   "arms)")
    p.add_argument("--duration", type=float, default=2.0,
                   help="seconds to listen once the arm's measured_js is heard (default 2)")
    p.add_argument("--wait", type=float, default=5.0,
                   help="seconds to wait for the first measured_js (discovery; default 5)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=_arm_check)


#: Functions that add one sub-command each to the parser.
SUBCOMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [
    _add_doctor, _add_arm_check, add_model_commands, add_identify_commands, add_trajectory_commands, add_gc_commands,
    add_demo_command, add_run_command, add_launch_command, add_export_commands,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dvrk-ident",
        description="Identify dVRK arm dynamics and gravity compensation (ROS-free core).",
    )
    parser.add_argument("--version", action="version", version=f"dvrk-ident {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def run(args: argparse.Namespace) -> int:
    """Call the sub-command's handler; library errors become one line and status 2."""
    handler: Handler = args.handler
    try:
        return handler(args)
    except DvrkIdentError as exc:
        print(f"dvrk-ident {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `dvrk-ident model info ... | head`
        return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
