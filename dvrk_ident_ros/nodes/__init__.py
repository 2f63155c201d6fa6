"""Thin rclpy nodes: ROS messages and parameters in, core calls, messages out.

This is the only subpackage that imports rclpy.
"""
