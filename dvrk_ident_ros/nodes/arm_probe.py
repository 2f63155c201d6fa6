"""Listen to a live arm for a few seconds and report (``dvrk-ident arm-check``): subscriptions only, no publisher,
so nothing can reach the arm. The report is :mod:`dvrk_ident_ros.arm_check`'s."""
from __future__ import annotations

import time

import rclpy
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import JointState

from dvrk_ident_ros.arm_check import ArmObservation, ArmReport
from dvrk_ident_ros.arm_state import OperatingStatus
from dvrk_ident_ros.nodes.common import CONTROL_STATE_QOS, EVENT_QOS, crtk_messages


def check_arm(arm: str, duration: float = 2.0, wait: float = 5.0) -> ArmReport:
    """Subscribe to ``/<ARM>/operating_state``, ``measured_js``, ``jaw/measured_js`` (PSM) and
    ``gravity_compensation/setpoint_js`` (MTM) in a private context: wait up to ``wait`` s for the first
    measured_js (discovery takes a second or more on a busy host), then listen ``duration`` s; the report."""
    msgs = crtk_messages()
    observation = ArmObservation(arm, crtk_available=msgs is not None)
    name = observation.arm
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("dvrk_ident_arm_check", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    try:
        def on_measured(msg: JointState) -> None:
            observation.on_measured(msg.header.stamp.sec, msg.header.stamp.nanosec, msg.position, msg.name,
                                    time.time())

        node.create_subscription(JointState, f"/{name}/measured_js", on_measured, CONTROL_STATE_QOS)
        if msgs is not None:
            node.create_subscription(msgs.OperatingState, f"/{name}/operating_state", lambda m: observation.on_status(
                OperatingStatus(str(m.state), bool(m.is_homed), bool(m.is_busy))), EVENT_QOS)
        if observation.spec.jaw:
            node.create_subscription(JointState, f"/{name}/jaw/measured_js", lambda m: observation.on_jaw(
                m.header.stamp.sec, m.header.stamp.nanosec, m.position), CONTROL_STATE_QOS)
        if observation.spec.builtin_gravity_compensation:
            node.create_subscription(JointState, f"/{name}/gravity_compensation/setpoint_js",
                                     lambda m: observation.on_builtin(m.header.stamp.sec, m.header.stamp.nanosec,
                                                                      m.effort), CONTROL_STATE_QOS)
        def spin_until(end: float, done=lambda: False) -> None:
            while (remaining := end - time.monotonic()) > 0 and context.ok() and not done():
                executor.spin_once(timeout_sec=min(remaining, 0.05))

        spin_until(time.monotonic() + wait, lambda: observation.heard > 0)
        if observation.heard == 0:
            return observation.report(wait, time.time())
        spin_until(time.monotonic() + duration)
        return observation.report(duration, time.time())
    finally:
        executor.shutdown()
        node.destroy_node()
        context.try_shutdown()
