"""Listen to a live arm for a few seconds and report (``dvrk-ident arm-check``): subscriptions only (the node has no
publisher on any of the arm's topics), so nothing can reach the arm. The report is :mod:`dvrk_ident_ros.arm.check`'s."""
from __future__ import annotations

import time

import rclpy
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import JointState

from dvrk_ident_ros.arm.check import ArmObservation, ArmReport
from dvrk_ident_ros.arm.state import OperatingStatus
from dvrk_ident_ros.ros.messages import crtk_messages
from dvrk_ident_ros.ros.qos import CONTROL_STATE_QOS, EVENT_QOS

#: s: a state not fresh at the end of the listening is given this long to come back before it is reported stale
SECOND_LOOK = 1.0
#: s: the longest the listener drains what arrived before it reports (messages queued while it was not scheduled)
DRAIN_FOR = 0.5


def check_arm(arm: str, duration: float = 2.0, wait: float = 5.0) -> ArmReport:
    """Subscribe to ``/<ARM>/operating_state``, ``measured_js``, ``jaw/measured_js`` (PSM) and
    ``gravity_compensation/setpoint_js`` (MTM) in a private context: wait up to ``wait`` s for the first
    measured_js (discovery takes a second or more on a busy host), listen ``duration`` s, take what is still
    queued; the report."""
    msgs = crtk_messages()
    observation = ArmObservation(arm, crtk_available=msgs is not None)
    name = observation.arm
    context = rclpy.Context()
    rclpy.init(context=context)
    node = executor = None
    try:
        node = rclpy.create_node("dvrk_ident_arm_check", context=context, enable_rosout=False,
                                 start_parameter_services=False)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)

        callbacks = [0]  # messages taken, every topic (the drain stops when a call takes none)

        def counted(callback):
            def call(msg) -> None:
                callbacks[0] += 1
                callback(msg)
            return call

        def on_measured(msg: JointState) -> None:
            observation.on_measured(msg.header.stamp.sec, msg.header.stamp.nanosec, msg.position, msg.name,
                                    time.monotonic(), time.time())

        node.create_subscription(JointState, f"/{name}/measured_js", counted(on_measured), CONTROL_STATE_QOS)
        if msgs is not None:
            node.create_subscription(msgs.OperatingState, f"/{name}/operating_state", counted(
                lambda m: observation.on_status(OperatingStatus(str(m.state), bool(m.is_homed), bool(m.is_busy)))),
                EVENT_QOS)
        if observation.spec.jaw:
            node.create_subscription(JointState, f"/{name}/jaw/measured_js", counted(lambda m: observation.on_jaw(
                m.header.stamp.sec, m.header.stamp.nanosec, m.position)), CONTROL_STATE_QOS)
        if observation.spec.builtin_gravity_compensation:
            node.create_subscription(JointState, f"/{name}/gravity_compensation/setpoint_js",
                                     counted(lambda m: observation.on_builtin(m.header.stamp.sec,
                                                                              m.header.stamp.nanosec, m.effort)),
                                     CONTROL_STATE_QOS)
        spin = executor.spin_once

        def spin_until(end: float, done=lambda: False) -> None:
            while (remaining := end - time.monotonic()) > 0 and context.ok() and not done():
                spin(timeout_sec=min(remaining, 0.05))

        def drain() -> None:
            """Take what is queued already (what arrived while this process was busy or not scheduled): until a
            call finds nothing to do."""
            end = time.monotonic() + DRAIN_FOR
            while time.monotonic() < end:
                before = callbacks[0]
                spin(timeout_sec=0.0)
                if callbacks[0] == before:
                    return

        spin_until(time.monotonic() + wait, lambda: observation.heard > 0)
        if observation.heard == 0:
            return observation.report(wait, time.monotonic())
        drain()  # the backlog of the discovery is not in the window
        observation.begin()
        listening = time.monotonic()
        spin_until(listening + duration)
        drain()
        if not observation.fresh(time.monotonic()):  # a hiccup (of the arm or of this process) or a silent arm
            spin_until(time.monotonic() + SECOND_LOOK, lambda: observation.fresh(time.monotonic()))
        now = time.monotonic()
        return observation.report(now - listening, now)
    finally:
        if executor is not None:
            executor.shutdown()
        if node is not None:
            node.destroy_node()
        context.try_shutdown()
