"""Test helper: publish GravityCompensationDiagnostics on /test/gc_diagnostics at 20 Hz.

The message carries a recognisable pattern derived from a sequence number so
the receiving process can check every field made it across.
"""
import sys

import rclpy
from spin import spin_until_interrupted

from dvrk_ident.msg import GravityCompensationDiagnostics
from dvrk_ident_ros.gc.runtime.supervisor import CompensationState


def make_message(seq: int) -> GravityCompensationDiagnostics:
    msg = GravityCompensationDiagnostics()
    msg.header.frame_id = f"seq{seq}"
    msg.name = [f"j{i}" for i in range(7)]
    msg.gravity_torque = [0.1 * i + seq for i in range(7)]
    msg.disturbance_torque = [-0.01 * i for i in range(7)]
    msg.blend_weight = [0.5] * 7
    msg.total_torque = [g + d for g, d in zip(msg.gravity_torque, msg.disturbance_torque, strict=True)]
    msg.saturated = [i == 3 for i in range(7)]
    msg.state = CompensationState.ACTIVE
    msg.ramp_scale = 1.0
    msg.parameter_source = "gc-MTML-00000.json"
    msg.model_kind = "mlse"
    return msg


def main() -> int:
    rclpy.init()
    node = rclpy.create_node("diagnostics_test_publisher")
    pub = node.create_publisher(GravityCompensationDiagnostics, "/test/gc_diagnostics", 10)
    seq = [0]

    def tick() -> None:
        pub.publish(make_message(seq[0]))
        seq[0] += 1

    node.create_timer(0.05, tick)
    return spin_until_interrupted(node)


if __name__ == "__main__":
    sys.exit(main())
