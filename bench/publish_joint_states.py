"""Publish sensor_msgs/JointState at a fixed rate (loop paced on absolute deadlines) for the recorder benchmark.

    python -m bench.publish_joint_states [--topic /PSM1/measured_js] [--rate 1000] [--duration 60] [--joints 7]

Waits for a subscriber, publishes ``rate * duration`` messages (position[0] is
the sequence number), waits until all are acknowledged and prints
``published <n>`` and the largest lateness against the schedule.
"""
from __future__ import annotations

import argparse
import sys
import time

import rclpy
from rclpy.duration import Duration
from sensor_msgs.msg import JointState

from dvrk_ident_ros.ros.qos import STATE_QOS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topic", default="/PSM1/measured_js")
    parser.add_argument("--rate", type=float, default=1000.0, help="Hz")
    parser.add_argument("--duration", type=float, default=60.0, help="s")
    parser.add_argument("--joints", type=int, default=7)
    parser.add_argument("--wait", type=float, default=30.0, help="s to wait for a subscriber")
    opts = parser.parse_args(argv)
    rclpy.init()
    node = rclpy.create_node("joint_state_benchmark_publisher")
    pub = node.create_publisher(JointState, opts.topic, STATE_QOS)
    deadline = time.monotonic() + opts.wait
    while pub.get_subscription_count() < 1:
        if time.monotonic() > deadline:
            print(f"no subscriber on {opts.topic} after {opts.wait} s", flush=True)
            return 1
        time.sleep(0.05)
    time.sleep(1.0)  # let the subscriber's side of discovery finish too
    clock = node.get_clock()
    msg = JointState()
    msg.name = [f"joint{j + 1}" for j in range(opts.joints)]
    rest = [0.0] * (opts.joints - 1)
    msg.velocity = [0.0] * opts.joints
    msg.effort = [0.0] * opts.joints
    count = round(opts.rate * opts.duration)
    period_ns = round(1e9 / opts.rate)
    start = time.monotonic_ns()
    late_ns = k = 0
    print("publishing", flush=True)
    try:
        for k in range(count):
            due = start + k * period_ns
            now = time.monotonic_ns()
            if now < due:
                time.sleep((due - now) * 1e-9)
            else:
                late_ns = max(late_ns, now - due)
            msg.header.stamp = clock.now().to_msg()
            msg.position = [float(k), *rest]
            pub.publish(msg)
    except KeyboardInterrupt:
        count = k
    elapsed = (time.monotonic_ns() - start) * 1e-9
    acked = pub.wait_for_all_acked(Duration(seconds=10))
    print(f"published {count} in {elapsed:.2f} s, largest lateness {late_ns * 1e-6:.2f} ms, "
          f"all acknowledged: {acked}", flush=True)
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
