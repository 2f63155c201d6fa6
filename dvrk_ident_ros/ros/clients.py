"""Client side of the nodes for scripts (the demo, tests, benchmarks): call /identify,
read the arm's state and operating state, power on and home it, send move_jp, follow the
progress of the arm's player (its /dvrk_ident/<ARM>/player_status), in a private rclpy context."""
from __future__ import annotations

import math
import threading
import time
from collections import deque

import numpy as np
import rclpy
from rclpy.client import Client
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool

from dvrk_ident.msg import PlayerStatus
from dvrk_ident.srv import Identify
from dvrk_ident_ros.arm.registry import arm_spec, canonical_arm, player_status_topic
from dvrk_ident_ros.arm.samples import ArmSamples, SampleKind
from dvrk_ident_ros.data.interfaces import stamp_seconds
from dvrk_ident_ros.errors import DvrkIdentError
from dvrk_ident_ros.ros.arm_monitor import ArmStateMonitor
from dvrk_ident_ros.ros.messages import fill_joint_state
from dvrk_ident_ros.ros.qos import EVENT_QOS, STATE_QOS

#: state stamps kept to tell a compensation's answers from its own commands (2 s at 1 kHz)
STAMPS_KEPT = 2000


class ArmClient:
    """A small node in its own context, spun in a background thread."""

    def __init__(self, arm: str, name: str = "dvrk_ident_client"):
        arm = canonical_arm(arm)
        self.arm = arm
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.samples = ArmSamples(arm, arm_spec(arm))  # sorts each measured_js (valid, stamp 0, repeated, ...)
        self.state: tuple[float, np.ndarray, np.ndarray] | None = None
        self.states = 0
        self.node.create_subscription(JointState, f"/{arm}/measured_js", self._on_state, STATE_QOS)
        self._move = self.node.create_publisher(JointState, f"/{arm}/move_jp", 10)
        # the stamp of the first servo_jf that answers a state (a compensation node stamps it with the state it
        # answers; its own commands, a fade or a zero, carry its clock's time)
        self.first_effort_stamp: float | None = None
        self._state_stamps: deque[float] = deque(maxlen=STAMPS_KEPT)  # of the latest valid states
        self.last_effort: tuple[float, np.ndarray] | None = None  # (its stamp, effort) of the last servo_jf
        self.history: list[tuple[float, np.ndarray]] = []  # (state stamp, position) while recording
        self.recording = False
        self.setpoint: np.ndarray | None = None  # the position of the last setpoint_js
        self.node.create_subscription(JointState, f"/{arm}/setpoint_js", self._on_setpoint, STATE_QOS)
        self.node.create_subscription(JointState, f"/{arm}/servo_jf", self._on_effort, STATE_QOS)
        self.operating = ArmStateMonitor(self.node, arm)  # /<ARM>/operating_state, state_command
        # /<ARM>/goal_reached, in order: True when a move_jp ended at its goal, False when it was cut short (the
        # arm's last one, transient_local, arrives as the subscription matches)
        self.goal_events: list[bool] = []
        self.node.create_subscription(Bool, f"/{arm}/goal_reached", self._on_goal_reached, EVENT_QOS)
        self.player_status: PlayerStatus | None = None  # the last status of this arm's player
        self.node.create_subscription(PlayerStatus, player_status_topic(arm), self._on_player, 10)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while not self._stop.is_set() and self.context.ok():
            self.executor.spin_once(timeout_sec=0.05)

    def _on_state(self, msg: JointState) -> None:
        stamp, now = msg.header.stamp, time.monotonic()
        if self.samples.on_sample(stamp.sec, stamp.nanosec, msg.position, now) is not SampleKind.VALID:
            return  # stamp 0 (the arm not ready), the last sample again (its loop stalled), malformed: not fresh
        self.state = (now, np.asarray(msg.position, dtype=float), np.asarray(msg.effort, dtype=float))
        self.states += 1
        self._state_stamps.append(stamp_seconds(stamp))
        if self.recording:
            self.history.append((stamp_seconds(msg.header.stamp), self.state[1]))

    def _on_setpoint(self, msg: JointState) -> None:
        self.setpoint = np.asarray(msg.position, dtype=float)

    def _on_goal_reached(self, msg: Bool) -> None:
        self.goal_events.append(bool(msg.data))

    def _on_player(self, msg: PlayerStatus) -> None:
        self.player_status = msg  # the arm's own topic: only its player publishes there

    def home(self, timeout: float = 60.0) -> float:
        """Power on and home the arm as a lab does (state_command enable, then home); returns the seconds
        until it was ENABLED, homed and idle. A ready arm is left as it is; a FAULT or a PAUSED arm too
        (DvrkIdentError: a fault is for a person to look at and clear, a pause was a person's)."""
        self.operating.require()
        start = time.monotonic()
        deadline = start + timeout
        while self.operating.status is None:
            if time.monotonic() > deadline:
                raise DvrkIdentError(f"no /{self.arm}/operating_state within {timeout:.0f} s")
            time.sleep(0.02)
        if self.operating.settled(time.monotonic()):
            return 0.0
        status = self.operating.status
        if status.state in ("FAULT", "PAUSED"):
            raise DvrkIdentError(f"{self.arm} is {status.describe()}: not powered on nor homed automatically "
                                 f"({self.operating.reason()})")
        if status.state != "ENABLED" or not (status.is_homed or status.is_busy):  # else: homing or moving
            if status.state != "ENABLED":  # one command at a time: the bridge subscribes with depth 1
                self.operating.send("enable")
                while self.operating.status is None or self.operating.status.state != "ENABLED":
                    if time.monotonic() > deadline:
                        raise DvrkIdentError(f"{self.arm} not enabled after {timeout:.0f} s: "
                                             f"{self.operating.reason()}")
                    time.sleep(0.02)
            enabled = self.operating.status
            if enabled is not None and not (enabled.is_homed or enabled.is_busy):
                self.operating.send("home")
        while not self.operating.settled(time.monotonic()):  # ready, and for READY_SETTLE (common.py)
            if time.monotonic() > deadline:
                raise DvrkIdentError(f"{self.arm} not ready after {timeout:.0f} s: "
                                     f"{self.operating.reason() or 'ready only for a moment'}")
            time.sleep(0.02)
        return time.monotonic() - start

    def _on_effort(self, msg: JointState) -> None:
        stamp = stamp_seconds(msg.header.stamp)
        if self.first_effort_stamp is None and stamp in self._state_stamps:
            self.first_effort_stamp = stamp
        self.last_effort = (stamp, np.asarray(msg.effort, dtype=float))

    def position_at(self, when: float) -> np.ndarray:
        """The recorded position whose state stamp is closest to ``when`` (s; simulated time under /clock)."""
        times = np.array([t for t, _ in self.history])
        return self.history[int(np.argmin(np.abs(times - when)))][1]

    def recorded_until(self) -> float:
        """Stamp of the newest recorded state (-inf before any)."""
        return self.history[-1][0] if self.history else -math.inf

    def position(self, timeout: float = 10.0) -> np.ndarray:
        """The last valid measured position (waits up to ``timeout`` s for the first)."""
        deadline = time.monotonic() + timeout
        while self.state is None:
            if time.monotonic() > deadline:
                reason = self.samples.reason(time.monotonic(), timeout)
                raise DvrkIdentError(f"no valid /{self.arm}/measured_js within {timeout:.0f} s"
                                     + (f": {reason}" if reason else ""))
            time.sleep(0.02)
        return self.state[1].copy()

    def state_age(self) -> float | None:
        """s since the last fresh measured_js arrived (None before any; stamp-0 and repeated samples do not
        count)."""
        return None if self.state is None else time.monotonic() - self.state[0]

    def move_jp(self, q: np.ndarray) -> None:
        """Publish a move_jp; DvrkIdentError where crtk_msgs is absent (the arm's readiness is unknown: the
        caller checks :attr:`operating` before each move)."""
        self.operating.require()
        self._move.publish(fill_joint_state(JointState(), self.node.get_clock().now().to_msg(), [], q))

    def identify(self, timeout: float = 300.0, progress_every: float = 0.0, **fields) -> Identify.Response:
        """Call /identify and wait; with ``progress_every`` > 0, print the elapsed time that often."""
        client: Client = self.node.create_client(Identify, "/identify")  # not generic in Jazzy's rclpy
        if not client.wait_for_service(timeout_sec=20.0):
            raise DvrkIdentError("/identify is not available")
        future = client.call_async(Identify.Request(**fields))
        start = time.monotonic()
        last_print = start
        while not future.done():
            now = time.monotonic()
            if now - start > timeout:
                raise DvrkIdentError(f"/identify did not answer within {timeout:.0f} s")
            if progress_every > 0 and now - last_print >= progress_every:
                last_print = now
                print(f"      /identify {fields.get('method', '')} running: {now - start:.0f} s "
                      f"(at most {timeout:.0f} s)", flush=True)
            time.sleep(0.05)
        return future.result()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        self.node.destroy_node()
        self.context.try_shutdown()

    def __enter__(self) -> ArmClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
