"""The whole gravity job on one arm. An MTM: play the pose grid, record it, fit gc-<ARM>-<SN>.json, hold the
arm with it and report the drift (dvrk_ident_ros/jobs/gc_calibration.py). A PSM or an ECM: static holds, the
identified gravity refitted to them, the console's kinematic_gc file, the hold test in position mode
(dvrk_ident_ros/jobs/console_calibration.py). This node reads its parameters and gives the job the arm's
topics. Exit status: 0 done, 2 refused before any motion, else the failed step's."""
from __future__ import annotations

import math
import signal
import sys
import time
from pathlib import Path

import numpy as np
import rclpy
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.signals import SignalHandlerOptions

from dvrk_ident_ros.arm.player_phase import PlayerPhase
from dvrk_ident_ros.arm.registry import arm_spec, canonical_arm
from dvrk_ident_ros.errors import CalibrationRefusedError, DvrkIdentError, StepFailedError
from dvrk_ident_ros.jobs.collection import REFUSED
from dvrk_ident_ros.jobs.console_calibration import (
    ConsoleCalibration,
    ConsoleCalibrationSettings,
    console_settings,
)
from dvrk_ident_ros.jobs.gc_calibration import Calibration, settings_from_parameters
from dvrk_ident_ros.jobs.launcher import ros_environment, wait_for
from dvrk_ident_ros.node_help import node_help, wants_help
from dvrk_ident_ros.parameters.gc_calibration import SCHEMA
from dvrk_ident_ros.parameters.settings import GcCalibrationSettings
from dvrk_ident_ros.ros.clients import ArmClient
from dvrk_ident_ros.ros.messages import crtk_messages
from dvrk_ident_ros.ros.parameters import declare_parameters

STATE_FRESH = 0.5  # s: a valid measured_js older than this is no sign of a ready arm, nor of a reached pose
#: rad: a pose is reached when a fresh state is this close to it on every joint, or, once the arm said its move
#: ended (goal_reached true: its trajectory is at the goal) and is idle, within SETTLED_TOLERANCE (about 3 deg:
#: a real arm's PID stops short of its setpoint; the drift is measured from wherever the hold begins)
REACH_TOLERANCE = 0.01
SETTLED_TOLERANCE = 0.05
READY_WAIT = 5.0  # s: a busy arm (its move ending) is waited for this long before the next move_jp
READ_WINDOW = 0.25  # s: a held pose is the mean of the measured positions over this window


class ClientPort:
    """:class:`~dvrk_ident_ros.jobs.gc_calibration.ArmPort` over an :class:`ArmClient`."""

    def __init__(self, client: ArmClient):
        self.client = client

    def home(self, timeout: float) -> float:
        return self.client.home(timeout)

    def wait_ready(self, timeout: float) -> None:
        try:
            wait_for(lambda: self.client.operating.settled(time.monotonic()), timeout, f"{self.client.arm} to be ready")
        except DvrkIdentError as exc:
            raise DvrkIdentError(f"{exc}: {self.client.operating.reason()}") from exc

    def commandable(self) -> str:
        """Why no move_jp may be sent now ('' when it may): the arm not ENABLED, homed and idle for READY_SETTLE,
        or no fresh valid state (stamp-0 samples do not count)."""
        operating = self.client.operating
        if not operating.settled(time.monotonic()):
            return operating.reason() or f"{self.client.arm} ready only for a moment (READY_SETTLE)"
        if not self._fresh():
            age = self.client.state_age()
            return (f"no valid /{self.client.arm}/measured_js " + ("yet" if age is None else f"for {age:.1f} s")
                    + " (the arm is off, not homed or faulted, or its state stopped)")
        return ""

    def _fresh(self) -> bool:
        """A valid state arrived within STATE_FRESH s."""
        age = self.client.state_age()
        return age is not None and age <= STATE_FRESH

    def _reached(self, goal: np.ndarray, events_before: int) -> bool:
        """By a fresh state: within REACH_TOLERANCE, or within SETTLED_TOLERANCE once the arm said the move
        sent after its ``events_before``-th goal_reached event ended at its goal and the arm is idle."""
        if not self._fresh():
            return False
        error = float(np.max(np.abs(self.client.position() - goal)))
        ended = self.client.goal_events[events_before:]
        return error < REACH_TOLERANCE or (bool(ended) and ended[-1] and self.client.operating.ready
                                           and error < SETTLED_TOLERANCE)

    def reach(self, goal: np.ndarray, attempts: int = 3, timeout: float = 15.0) -> bool:
        """move_jp until the pose is reached (:meth:`_reached`; sent again: a late zero servo_jf of the
        previous compensation can leave the arm in effort mode, as the dVRK would). Each move_jp only to a
        ready arm (a busy one is waited for up to ``READY_WAIT`` s); else StepFailedError, nothing sent."""
        for _ in range(attempts):
            try:
                wait_for(lambda: not self.commandable(), READY_WAIT, f"{self.client.arm} to be ready")
            except DvrkIdentError:
                raise StepFailedError(f"{self.client.arm} cannot be moved to the next pose: {self.commandable()}; "
                                      "no move_jp sent") from None
            events_before = len(self.client.goal_events)
            self.client.move_jp(goal)
            try:
                wait_for(lambda before=events_before: self._reached(goal, before), timeout, "the pose")
                return True
            except DvrkIdentError:
                pass
        return False

    def begin_hold(self) -> None:
        self.client.first_effort_stamp = None
        self.client.history.clear()
        self.client.recording = True

    def effort_started(self) -> float | None:
        return self.client.first_effort_stamp

    def recorded_until(self) -> float:
        return self.client.recorded_until()

    def position_at(self, stamp: float) -> np.ndarray:
        return self.client.position_at(stamp)

    def end_hold(self) -> None:
        self.client.recording = False

    def rest(self, seconds: float) -> tuple[np.ndarray, np.ndarray]:
        """Wait ``seconds`` of the arm's state at rest; its measured position (the mean over the last
        READ_WINDOW s) and its setpoint then."""
        self.begin_hold()
        try:
            wait_for(lambda: self.recorded_until() > -math.inf, 10.0, "the arm's state")
            start = self.recorded_until()
            wait_for(lambda: self.recorded_until() >= start + seconds, seconds + 30.0,
                     f"{seconds:g} s of the arm's state")
        finally:
            self.end_hold()
        history = list(self.client.history)
        end = history[-1][0]
        measured = np.mean([q for t, q in history if t >= end - READ_WINDOW], axis=0)
        setpoint = self.client.setpoint
        if setpoint is None or setpoint.shape != measured.shape:
            raise DvrkIdentError(f"no /{self.client.arm}/setpoint_js of {measured.size} joints: the sag cannot be "
                                 "measured")
        return measured, setpoint.copy()

    def apply_kinematic_gc(self, path: Path, timeout: float = 10.0) -> str:
        """Give the file to this arm's simulated arm (its ``kinematic_gc`` parameter); "" when it took it, else
        why not (a dVRK console reads the file at start only: no node offers the parameter)."""
        node = self.client.node
        for name, namespace in node.get_node_names_and_namespaces():
            full = f"{namespace.rstrip('/')}/{name}"
            services = {service for service, _ in node.get_service_names_and_types_by_node(name, namespace)}
            if name == node.get_name() or f"{full}/get_parameters" not in services:
                continue
            request = GetParameters.Request(names=["arm", "kinematic_gc"])
            values = self._call(GetParameters, f"{full}/get_parameters", request, timeout)
            if (values is None or len(values.values) != 2 or values.values[1].type != ParameterType.PARAMETER_STRING
                    or values.values[0].string_value.upper() != self.client.arm):
                continue  # not a simulated arm, or another arm's
            value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=str(path))
            request = SetParameters.Request(parameters=[ParameterMsg(name="kinematic_gc", value=value)])
            answer = self._call(SetParameters, f"{full}/set_parameters", request, timeout)
            if answer is None:
                return f"{full} did not answer set_parameters within {timeout:g} s"
            result = answer.results[0]
            return "" if result.successful else f"{full} refused it: {result.reason}"
        return (f"no simulated {self.client.arm} offers kinematic_gc: a dVRK console reads the file at start "
                "only")

    def _call(self, kind, service: str, request, timeout: float):
        client = self.client.node.create_client(kind, service)
        try:
            if not client.wait_for_service(timeout_sec=timeout):
                return None
            future = client.call_async(request)
            deadline = time.monotonic() + timeout
            while not future.done() and time.monotonic() < deadline:
                time.sleep(0.01)
            return future.result() if future.done() else None
        finally:
            self.client.node.destroy_client(client)

    def progress(self) -> str | None:
        status = self.client.player_status
        if status is None or status.phase == PlayerPhase.IDLE:
            reason = self.client.operating.reason()
            return f"waiting for {reason}" if reason else None
        if not status.pose_count:
            return None
        played = min(round(status.progress * status.pose_count - 0.5) + 1, status.pose_count)
        return f"pose {played} of {status.pose_count}, {100 * status.progress:.0f} % played"


def _parameters(args: list[str] | None) -> tuple[GcCalibrationSettings, bool, str]:
    """The node's parameters (the schema's checks), whether it uses sim time, and its name, from --ros-args."""
    context = rclpy.Context()
    rclpy.init(args=args, context=context, signal_handler_options=SignalHandlerOptions.NO)
    try:
        node = rclpy.create_node("gc_calibration", context=context)
        try:
            params = GcCalibrationSettings.from_values(declare_parameters(node, SCHEMA))
            return params, node.get_parameter("use_sim_time").value is True, node.get_name()
        finally:
            node.destroy_node()
    finally:
        context.try_shutdown()


def main(args: list[str] | None = None) -> int:
    if wants_help(list(sys.argv[1:] if args is None else args)):
        print(node_help("dvrk_ident_ros.nodes.gc_calibration"), flush=True)
        return 0
    try:
        params, use_sim_time, name = _parameters(args)
        arm = canonical_arm(params.arm)
        console = arm_spec(arm).console_gc is not None  # a PSM or an ECM: the console's own file
        settings = (console_settings(params, arm, use_sim_time) if console
                    else settings_from_parameters(params, use_sim_time))
    except (CalibrationRefusedError, DvrkIdentError) as exc:
        print(f"error: {exc}", flush=True)
        return REFUSED
    except Exception as exc:  # noqa: BLE001 - malformed --ros-args and the like
        print(f"error: cannot start: {exc}", flush=True)
        return REFUSED
    if crtk_messages() is None:  # before any node starts: the player would refuse, with less said
        print(f"error: crtk_msgs is not installed: the {settings.arm}'s operating state cannot be read, so nothing "
              "will be commanded (crtk_msgs is part of every dVRK workspace; outside one, `make setup` builds a "
              "stand-in)", flush=True)
        return REFUSED
    with ArmClient(settings.arm, name) as client:
        job: Calibration | ConsoleCalibration
        if isinstance(settings, ConsoleCalibrationSettings):
            job = ConsoleCalibration(settings, ClientPort(client), env=ros_environment(isolated=False),
                                     say=lambda line: print(line, flush=True))
        else:
            job = Calibration(settings, ClientPort(client), env=ros_environment(isolated=False),
                              say=lambda line: print(line, flush=True))
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, lambda signum, _frame: job.request_stop(f"{signal.Signals(signum).name} received"))
        start = time.monotonic()
        status = job.run()
    print(f"gc_calibration {settings.arm}: {'done' if status == 0 else f'failed (status {status})'} in "
          f"{time.monotonic() - start:.0f} s", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
