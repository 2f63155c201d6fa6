"""The application layer: what a user runs, above the ROS-free core.

The ``dvrk-ident`` command line (:mod:`.cli` and the per-subject :mod:`.commands`),
the jobs it shares with ``/identify`` (:mod:`.jobs`), the demo, and the launcher
with what the launch files share. No rclpy at import time; the layer order is
checked by test/test_layers.py.
"""
