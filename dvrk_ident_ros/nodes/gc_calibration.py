"""The whole gc job on one MTM: play the pose grid, record it, fit gc-<ARM>-<SN>.json, hold the arm with it
and report the drift (the sequence: dvrk_ident_ros/app/gc_calibration.py; this node reads its parameters
and gives the job the arm's topics). Exit status: 0 done, 2 refused before any motion, else the failed
step's."""
from __future__ import annotations

import signal
import sys
import time

import numpy as np
import rclpy
from rclpy.signals import SignalHandlerOptions

from dvrk_ident_ros.app.gc_calibration import (
    REFUSED,
    Calibration,
    CalibrationRefusedError,
    StepFailedError,
    settings_from_parameters,
)
from dvrk_ident_ros.app.launcher import ros_environment, wait_for
from dvrk_ident_ros.errors import DvrkIdentError
from dvrk_ident_ros.node_help import node_help, wants_help
from dvrk_ident_ros.nodes.clients import ArmClient
from dvrk_ident_ros.nodes.common import crtk_messages, declare_parameters
from dvrk_ident_ros.parameters.gc_calibration import SCHEMA
from dvrk_ident_ros.player_phase import PlayerPhase

STATE_FRESH = 0.5  # s: a valid measured_js older than this is no sign of a ready arm, nor of a reached pose
#: rad: a pose is reached when a fresh state is this close to it on every joint, or, once the arm said its move
#: ended (goal_reached true: its trajectory is at the goal) and is idle, within SETTLED_TOLERANCE (about 3 deg:
#: a real arm's PID stops short of its setpoint; the drift is measured from wherever the hold begins)
REACH_TOLERANCE = 0.01
SETTLED_TOLERANCE = 0.05
READY_WAIT = 5.0  # s: a busy arm (its move ending) is waited for this long before the next move_jp


class ClientPort:
    """:class:`~dvrk_ident_ros.app.gc_calibration.ArmPort` over an :class:`ArmClient`."""

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

    def progress(self) -> str | None:
        status = self.client.player_status
        if status is None or status.phase == PlayerPhase.IDLE:
            reason = self.client.operating.reason()
            return f"waiting for {reason}" if reason else None
        if not status.pose_count:
            return None
        played = min(round(status.progress * status.pose_count - 0.5) + 1, status.pose_count)
        return f"pose {played} of {status.pose_count}, {100 * status.progress:.0f} % played"


def _parameters(args: list[str] | None) -> tuple[dict, str]:
    """The node's parameters (the schema's checks) and its name, from --ros-args."""
    context = rclpy.Context()
    rclpy.init(args=args, context=context, signal_handler_options=SignalHandlerOptions.NO)
    try:
        node = rclpy.create_node("gc_calibration", context=context)
        try:
            values = declare_parameters(node, SCHEMA)
            values["use_sim_time"] = bool(node.get_parameter("use_sim_time").value)
            return values, node.get_name()
        finally:
            node.destroy_node()
    finally:
        context.try_shutdown()


def main(args: list[str] | None = None) -> int:
    if wants_help(list(sys.argv[1:] if args is None else args)):
        print(node_help("dvrk_ident_ros.nodes.gc_calibration"), flush=True)
        return 0
    try:
        values, name = _parameters(args)
        settings = settings_from_parameters(values)
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
