"""What the package's launch files (launch/*.launch.py) share: argument conventions and exit statuses.

Launch files import it (``from dvrk_ident_ros.jobs.launch_support import launch_description``):
the package is on the Python path of a sourced workspace. :func:`launch_description` builds a launch file's
description from its entry in :mod:`dvrk_ident_ros.jobs.launch_plans` (its arguments, and an
``OpaqueFunction`` that runs its plan on their values and starts the plan's nodes, each with its exit
handler). The rules are plain functions (ROS-free, unit-tested without the ``launch`` package, which has no
wheel here); only :func:`launch_description` and :func:`exit_handler` build ``launch`` actions, importing
it when called.

- Arguments: booleans and arm names as ROS takes them, made canonical by the plans
  (:func:`dvrk_ident_ros.jobs.launch_plans.canonical_values`) before any node reads them.
- Exit statuses: every node of a launch file registers :func:`exit_handler`.
  A node that exits non-zero ends the launch with an error, so ``ros2 launch``
  exits non-zero; a *required* node (the one that does the launch's job) ends
  the launch when it exits, with status 0 when it succeeded.

How the non-zero status reaches the shell (ros2/launch, the same from Humble to
Kilted): an exception raised while an event is handled is caught by
``LaunchService.run_async`` (launch/launch/launch_service.py: ``except Exception
as exc: ... 'Caught exception in launch (see debug for traceback): ...'``), which
shuts the launch down (every process gets SIGINT, then SIGTERM after its
``sigterm_timeout``) and returns ``return_code = 1``; ``LaunchService.run()``
returns it, ros2launch's ``launch_a_launch_file`` returns ``launch_service.run()``
(ros2launch/api/api.py) and ``ros2 launch`` exits with it. ``OnProcessExit``
calls a callable ``on_exit`` as ``on_exit(event, context)`` with the
``ProcessExited`` event, whose ``returncode`` is the process's exit status
(launch/launch/event_handlers/on_process_exit.py, events/process/process_exited.py).
"""
from __future__ import annotations

from dvrk_ident_ros.errors import NodeFailedError


def exit_outcome(what: str, process: str, returncode: int | None, required: bool) -> str | None:
    """What a launch does when one of its nodes exits.

    Non-zero: raise :class:`NodeFailedError` (the launch ends with status 1). Zero: the reason to shut the
    launch down for a ``required`` node, None for another node (it may exit 0 while the launch stops).
    """
    name = f"{what} ({process})" if process else what
    if returncode:
        how = f"was killed by signal {-returncode}" if returncode < 0 else f"exited with status {returncode}"
        raise NodeFailedError(f"{name} {how}: the launch fails (the node's log above says why)")
    if required:
        return f"{what} finished"
    return None


class ExitCheck:
    """``OnProcessExit(on_exit=ExitCheck(...))``: :func:`exit_outcome` as launch actions."""

    def __init__(self, what: str, required: bool):
        self.what = what
        self.required = required

    def __call__(self, event, context=None):
        reason = exit_outcome(self.what, getattr(event, "process_name", ""), event.returncode, self.required)
        if reason is None:
            return None
        from launch.actions import LogInfo, Shutdown

        return [LogInfo(msg=f"{reason}: stopping the other nodes"), Shutdown(reason=reason)]


def exit_handler(node, what: str, required: bool = False):
    """Register :class:`ExitCheck` for ``node`` (a launch_ros ``Node``); ``required``: its exit ends the launch."""
    from launch.actions import RegisterEventHandler
    from launch.event_handlers import OnProcessExit

    return RegisterEventHandler(OnProcessExit(target_action=node, on_exit=ExitCheck(what, required)))


PACKAGE = "dvrk_ident"


def launch_description(name: str):
    """The ``LaunchDescription`` of ``launch/<name>.launch.py``: its declared arguments, then its plan run on
    their values when the launch starts (a plan that refuses stops the launch before any node starts)."""
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    from launch.launch_description import LaunchDescription
    from launch.substitutions import LaunchConfiguration

    from dvrk_ident_ros.jobs.launch_plans import launch_file

    file = launch_file(name)
    declared = [DeclareLaunchArgument(
        a.name, default_value=LaunchConfiguration(a.default_from) if a.default_from else a.default,
        description=a.description, choices=list(a.choices) or None) for a in file.arguments]

    def start(context):
        values = {a.name: str(context.launch_configurations[a.name]) for a in file.arguments}
        return launch_actions(file.plan(values))

    return LaunchDescription([*declared, OpaqueFunction(function=start)])


def launch_actions(nodes) -> list:
    """launch_ros ``Node`` actions for the plan's nodes (:class:`~dvrk_ident_ros.jobs.launcher.PlannedNode`):
    each with its parameter file (config/<node>.yaml of the package share) and then the plan's values, its exit
    handler registered before it starts."""
    from launch.substitutions import PathJoinSubstitution
    from launch_ros.actions import Node
    from launch_ros.substitutions import FindPackageShare

    from dvrk_ident_ros.jobs.launch_plans import NODE_ROLES

    handlers, started = [], []
    for planned in nodes:
        node = Node(package=PACKAGE, executable=planned.node, name=planned.label,
                    parameters=[PathJoinSubstitution([FindPackageShare(PACKAGE), f"config/{planned.node}.yaml"]),
                                dict(planned.parameters)],
                    output="screen", emulate_tty=True, sigterm_timeout=f"{planned.stop_timeout:g}")
        handlers.append(exit_handler(node, NODE_ROLES.get(planned.node, planned.node), required=planned.required))
        started.append(node)
    return [*handlers, *started]
