"""The simulated arm's physics (ROS-free): forward dynamics of the model with
"true" parameters, friction, springs, the MTM cable, a dVRK-like PID servo,
encoder quantisation and effort noise."""
