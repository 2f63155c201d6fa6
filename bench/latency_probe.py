"""Measure measured_js -> servo_jf latency of a node in another process.

The probe publishes ``/<ARM>/measured_js`` at ``rate`` from a thread paced on
the monotonic clock, each message carrying its send time (CLOCK_MONOTONIC,
only this process reads it) in the header stamp. One sample a period, as an
arm's loop: woken late, the thread goes on to the next slot instead of sending
the missed ones in a burst (two samples at one pose within the node's repeat
tolerance are, to the node, one sample published twice). The node under test answers
on ``/<ARM>/servo_jf`` with the stamp of the sample it answers, so
latency = receive time - stamp, and an unanswered stamp is a lost answer.

As the bridge does, it can publish beside each measured_js the arm's
``setpoint_js`` and the readings of its own gravity compensation
(``gravity_compensation/setpoint_js``, all-zero effort: off), just before it:
a node that subscribes them takes those callbacks first. A gravity compensation
commands only once it has read that the arm's own is off (without readings it
waits a moment to decide there are none): the samples before the first answer
are the node's start, not lost answers (``warmup``).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np


@dataclass
class LatencyResult:
    sent: int  # samples from the first answered one on
    answered: int
    latencies: np.ndarray  # s
    unanswered: list[int]  # indices (in sending order) of the samples never answered, from the first answered one
    warmup: int = 0  # samples sent before the first answered one
    sent_ns: np.ndarray | None = None  # every sample's send time (its stamp), monotonic ns, in sending order
    late_wakes: int = 0  # times the probe woke more than half a period late and skipped to the next slot

    def close_to_previous(self, within: float) -> int:
        """How many unanswered samples were sent less than ``within`` s after the sample before them."""
        if self.sent_ns is None:
            return 0
        gaps = np.diff(self.sent_ns) * 1e-9
        return sum(1 for k in self.unanswered if k > 0 and gaps[k - 1] < within)

    def percentile(self, p: float) -> float:
        return float(np.percentile(self.latencies, p)) if self.latencies.size else float("nan")


def probe(arm: str, duration: float, rate: float = 1000.0, joints: int = 7, settle: float = 1.0,
          pose: list[float] | None = None, setpoint: bool = True, readings: bool = True,
          holding_effort: list[float] | None = None) -> LatencyResult:
    import gc

    import rclpy
    from builtin_interfaces.msg import Time
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Bool

    from dvrk_ident_ros.ros.messages import crtk_messages
    from dvrk_ident_ros.ros.qos import EVENT_QOS, STATE_QOS

    gc.collect()
    gc.disable()  # the probe's own collector pauses must not count as the node's latency
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("latency_probe", context=context)
    pub = node.create_publisher(JointState, f"/{arm}/measured_js", STATE_QOS)
    # as the bridge does, the arm's setpoint_js every period too (``setpoint``), published just before
    # measured_js: a node that subscribes it answers measured_js after that callback
    setpoint_pub = node.create_publisher(JointState, f"/{arm}/setpoint_js", STATE_QOS) if setpoint else None
    readings_pub = (node.create_publisher(JointState, f"/{arm}/gravity_compensation/setpoint_js", STATE_QOS)
                    if readings else None)
    received: dict[int, float] = {}

    def on_answer(msg: JointState) -> None:
        received.setdefault(msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec, time.monotonic_ns())

    node.create_subscription(JointState, f"/{arm}/servo_jf", on_answer, STATE_QOS)
    # as the dVRK does: the compensation commands only once it can turn the arm's own compensation off
    node.create_subscription(Bool, f"/{arm}/use_gravity_compensation", lambda msg: None, 10)
    # and only to an arm that says it is ENABLED, homed and idle (transient_local: the node gets it late too)
    crtk = crtk_messages()
    if crtk is not None:
        state_pub = node.create_publisher(crtk.OperatingState, f"/{arm}/operating_state", EVENT_QOS)
        state_pub.publish(crtk.OperatingState(state="ENABLED", is_homed=True, is_busy=False))
    try:  # the lowest-latency executor (Kilted; Jazzy from rclpy 7.1.4); Humble has none
        from rclpy.experimental import EventsExecutor as ProbeExecutor
    except ImportError:
        from rclpy.executors import SingleThreadedExecutor as ProbeExecutor
    executor = ProbeExecutor(context=context)
    executor.add_node(node)
    sent: list[int] = []
    skipped = [0]  # times the publisher woke more than half a period late and went on to the next slot
    stop = threading.Event()
    q = list(pose or [0.0] * joints)

    def publish() -> None:
        msg = JointState()
        msg.position = q
        msg.velocity = [0.0] * joints
        msg.effort = [0.0] * joints
        # the arm's setpoint_js: its PID's effort holding it at the pose (what the node's fit check compares)
        held = JointState(position=q, velocity=[0.0] * joints, effort=list(holding_effort or [0.0] * joints))
        period = 1e9 / rate
        # wait for the node under test to be matched (discovery), then stream
        deadline = time.monotonic() + 10.0
        while pub.get_subscription_count() == 0 and time.monotonic() < deadline and not stop.is_set():
            time.sleep(0.01)
        time.sleep(settle)
        start = time.monotonic_ns()
        k = 0
        while not stop.is_set():
            target = start + k * period
            now = time.monotonic_ns()
            # woken late (now past the slot, or the slot too close after a late sample): on to the next slot, as
            # an arm's loop publishes one sample a period, never a catching-up burst
            late = False
            while now > target + period / 2 or (sent and target < sent[-1] + period / 2):
                k, late = k + 1, True
                target = start + k * period
            skipped[0] += late
            if target > now:
                time.sleep((target - now) * 1e-9)
            now = time.monotonic_ns()
            msg.header.stamp = Time(sec=now // 1_000_000_000, nanosec=now % 1_000_000_000)
            if readings_pub is not None:
                readings_pub.publish(msg)  # all-zero effort: the arm's own compensation is off
            if setpoint_pub is not None:
                held.header.stamp = msg.header.stamp
                setpoint_pub.publish(held)
            pub.publish(msg)
            sent.append(now)
            k += 1
            if (now - start) * 1e-9 >= duration:
                break
        stop.set()

    thread = threading.Thread(target=publish, daemon=True)
    thread.start()
    while not stop.is_set():
        executor.spin_once(timeout_sec=0.05)
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.05)
    thread.join(timeout=1.0)
    executor.shutdown(timeout_sec=1.0)
    node.destroy_node()
    context.try_shutdown()
    gc.enable()
    first = next((k for k, s in enumerate(sent) if s in received), len(sent))
    lat = np.array([(received[s] - s) * 1e-9 for s in sent[first:] if s in received])
    return LatencyResult(len(sent) - first, int(lat.size), lat,
                         [k for k, s in enumerate(sent) if k >= first and s not in received], first,
                         np.array(sent, dtype=np.int64), skipped[0])
