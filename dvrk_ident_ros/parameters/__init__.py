"""One parameter schema per node (ROS-free): :mod:`.schema` says what a parameter is, each node's module
lists its parameters. :func:`schema_of` finds a node's schema by the node's name."""
from __future__ import annotations

from dvrk_ident_ros.errors import ParameterValueError
from dvrk_ident_ros.parameters import (
    gc_calibration,
    gc_safety_net,
    gravity_compensation,
    identification_service,
    recorder,
    simulated_arm,
    trajectory_player,
)
from dvrk_ident_ros.parameters.schema import Kind, NodeSchema, Parameter, render

#: Every node's schema, by node (executable) name.
SCHEMAS: dict[str, NodeSchema] = {module.SCHEMA.node: module.SCHEMA for module in (
    trajectory_player, recorder, identification_service, gravity_compensation, simulated_arm, gc_calibration,
    gc_safety_net)}


def schema_of(node: str) -> NodeSchema | None:
    """The schema of the node named ``node`` (``dvrk_ident_ros.nodes.<node>`` also works), None if it has none."""
    return SCHEMAS.get(node.rsplit(".", 1)[-1])


__all__ = ["SCHEMAS", "Kind", "NodeSchema", "Parameter", "ParameterValueError", "render", "schema_of"]
