"""The transport's floor for the latency benchmark: one hop, no answer.

Subscribes ``/<ARM>/measured_js`` (the gravity-compensation node's QoS and
executor) and records, for every sample, receive time minus header stamp (the
probe stamps with CLOCK_MONOTONIC, which both processes read). At exit it
prints one line ``one-hop latency: n N p50 X p99 Y max Z`` (ms). A round trip
through any node costs at least two such hops.
"""
import sys
import time

import numpy as np
from sensor_msgs.msg import JointState

from dvrk_ident_ros.ros.process import run
from dvrk_ident_ros.ros.qos import CONTROL_STATE_QOS


def make_node():
    import rclpy

    node = rclpy.create_node("hop_receiver")
    arm = node.declare_parameter("arm", "MTML").value
    latencies = np.zeros(1_000_000)
    count = [0]

    def receive(msg: JointState) -> None:
        now = time.monotonic_ns()
        if count[0] < latencies.size:
            latencies[count[0]] = now - (msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec)
            count[0] += 1

    def close() -> None:
        ms = latencies[:count[0]] * 1e-6
        if ms.size:
            print(f"one-hop latency: n {ms.size} p50 {np.percentile(ms, 50):.3f} p99 {np.percentile(ms, 99):.3f} "
                  f"max {ms.max():.3f}", flush=True)

    node.create_subscription(JointState, f"/{arm}/measured_js", receive, CONTROL_STATE_QOS)
    node.close = close
    return node


if __name__ == "__main__":
    sys.exit(run(make_node, executor="events"))
