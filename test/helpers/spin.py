"""Spin a helper node until SIGINT, then shut down cleanly."""
import rclpy
from rclpy.executors import ExternalShutdownException


def spin_until_interrupted(node) -> int:
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0
