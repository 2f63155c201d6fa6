"""Baseline for the latency benchmark: a bare rclpy node answering every JointState.

Subscribes ``/<ARM>/measured_js`` and publishes ``/<ARM>/servo_jf`` (effort =
position) at once, on the same executor and QoS as the gravity-compensation
node: the difference between the two is what our computation costs.
"""
import sys

from sensor_msgs.msg import JointState

from dvrk_ident_ros.ros.process import run
from dvrk_ident_ros.ros.qos import CONTROL_STATE_QOS, STATE_QOS


def make_node():
    import rclpy

    node = rclpy.create_node("echo")
    arm = node.declare_parameter("arm", "MTML").value
    pub = node.create_publisher(JointState, f"/{arm}/servo_jf", STATE_QOS)
    out = JointState()

    def answer(msg: JointState) -> None:
        out.header.stamp = msg.header.stamp
        out.effort = msg.position
        pub.publish(out)

    node.create_subscription(JointState, f"/{arm}/measured_js", answer, CONTROL_STATE_QOS)
    return node


if __name__ == "__main__":
    sys.exit(run(make_node, executor="events"))
