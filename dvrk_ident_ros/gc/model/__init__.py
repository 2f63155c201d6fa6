"""The gc file's model, shared by fitting, validation and the run-time compensation: the gravity
regressor and its symbolic derivation (from an arm description or an identified model), gc JSON
(params.py), the dVRK console's kinematic_gc files (console_gc.py) and the cable's direction state
(travel.py)."""
