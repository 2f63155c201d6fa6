"""What the package's launch files (launch/*.launch.py) share: argument conventions and exit statuses.

Launch files import it (``from dvrk_ident_ros.jobs.launch_support import ...``):
the package is on the Python path of a sourced workspace. The rules are plain
functions (ROS-free, unit-tested without the ``launch`` package, which has no
wheel here); only :func:`canonical_arguments`, :func:`resolve_trajectory` and
:func:`exit_handler` build ``launch`` actions, importing it when called.

- Booleans as ROS accepts them: true/false/1/0 in any case (what launch's
  ``IfCondition`` accepts), made "true"/"false" before any node reads them.
- Arm names in any case, made canonical (``psm1`` -> ``PSM1``) before node
  names and parameters use them; an unknown arm stops the launch with its reason.
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

from pathlib import Path

from dvrk_ident_ros.arm.registry import arm_spec, canonical_arm
from dvrk_ident_ros.errors import DataError, DvrkIdentError, LaunchArgumentError, NodeFailedError
from dvrk_ident_ros.files import resolve_package_file

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


def _configurations(context, names) -> dict[str, str]:
    return {name: str(context.launch_configurations[name]) for name in names}


def canonical_arguments(booleans: tuple[str, ...] = (), arm: str | None = None):
    """An ``OpaqueFunction`` that rewrites the named launch configurations to their canonical text
    (:func:`canonical_values`); place it after the arguments are declared, before anything reads them."""
    from launch.actions import OpaqueFunction, SetLaunchConfiguration

    def apply(context):
        names = list(booleans) + ([arm] if arm is not None else [])
        values = canonical_values(_configurations(context, names), booleans, arm)
        return [SetLaunchConfiguration(name, value) for name, value in values.items()]

    return OpaqueFunction(function=apply)


def resolve_trajectory(name: str = "trajectory_file", arm: str = "arm"):
    """An ``OpaqueFunction`` that sets the launch configuration ``name`` to the absolute path of
    :func:`trajectory_path`; a file found nowhere stops the launch before any node starts."""
    from launch.actions import LogInfo, OpaqueFunction, SetLaunchConfiguration

    def apply(context):
        values = _configurations(context, [name, arm])
        path = trajectory_path(canonical_arm(values[arm]), values[name])
        return [SetLaunchConfiguration(name, str(path)), LogInfo(msg=f"trajectory for {values[arm]}: {path}")]

    return OpaqueFunction(function=apply)
