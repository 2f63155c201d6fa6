"""Parameters of the ``gc_safety_net`` node (full descriptions: config/gc_safety_net.yaml). It reads the state
the compensation node leaves in $ROS_HOME (else ~/.ros)/dvrk_ident/ (gc/runtime/safety_net.py: state_path)."""
from __future__ import annotations

from dvrk_ident_ros.parameters.schema import Kind, NodeSchema, Parameter

SCHEMA = NodeSchema("gc_safety_net", (
    Parameter("arm", Kind.STRING, "MTML", "dVRK arm whose gravity compensation the net watches (any case)"),
))
