"""The compensation while the arm runs, ROS-free, decided here and published by the nodes: the law of
a gc file or an identified model (law.py, model_law.py, compensation.py), its supervisor (ramp-in,
watchdog, fades, hand-over), the take-over's checks and guard, the held effort and its fit check,
who owns the arm's effort (ownership.py), health, and the safety net's state. Of gc, it imports the
model only."""
