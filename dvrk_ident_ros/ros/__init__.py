"""What the nodes and the package's ROS clients share (rclpy): QoS, messages, parameter declaration, the
process's main loop, the arm's operating state; the clients the CLI and the demo drive arms with."""
