"""The simulated arm (ROS-free): forward dynamics of the model with "true" parameters,
friction, springs, the MTM cable, a dVRK-like PID servo, encoder and current
quantisation, effort noise, and the dVRK's operating state (enable, home, faults)."""
