"""A node's parameters declared from its schema (dvrk_ident_ros/parameters): descriptors, ranges, run-time
changes refused with the reason."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    ParameterType,
    SetParametersResult,
)
from rclpy.exceptions import ParameterException
from rclpy.node import Node

from dvrk_ident_ros.errors import DvrkIdentError, ParameterValueError
from dvrk_ident_ros.parameters import Kind, NodeSchema, render
from dvrk_ident_ros.parameters import Parameter as SchemaParameter
from dvrk_ident_ros.parameters.schema import INT64_MAX

_ROS_TYPES = {Kind.BOOL: ParameterType.PARAMETER_BOOL, Kind.INTEGER: ParameterType.PARAMETER_INTEGER,
              Kind.DOUBLE: ParameterType.PARAMETER_DOUBLE, Kind.STRING: ParameterType.PARAMETER_STRING,
              Kind.DOUBLE_ARRAY: ParameterType.PARAMETER_DOUBLE_ARRAY,
              Kind.STRING_ARRAY: ParameterType.PARAMETER_STRING_ARRAY}


def parameter_descriptor(spec: SchemaParameter) -> ParameterDescriptor:
    """What ``ros2 param describe`` shows of a schema parameter: type, description (with its unit), range
    (rclpy enforces it; a strict lower bound is the on-set callback's) or choices, read-only."""
    unit = f" [{spec.unit}]" if spec.unit else ""
    descriptor = ParameterDescriptor(name=spec.name, description=spec.description + unit,
                                     additional_constraints=spec.constraints(), read_only=spec.read_only,
                                     dynamic_typing=spec.dynamic_typing)
    if not spec.dynamic_typing:
        descriptor.type = _ROS_TYPES[spec.kind]
    bounded = spec.minimum is not None or spec.maximum is not None
    if bounded and spec.kind is Kind.DOUBLE:
        low = -math.inf if spec.minimum is None else float(spec.minimum)
        high = math.inf if spec.maximum is None else float(spec.maximum)
        descriptor.floating_point_range = [FloatingPointRange(from_value=low, to_value=high, step=0.0)]
    elif bounded and spec.kind is Kind.INTEGER:
        low_int = -INT64_MAX - 1 if spec.minimum is None else int(spec.minimum)
        high_int = INT64_MAX if spec.maximum is None else int(spec.maximum)
        descriptor.integer_range = [IntegerRange(from_value=low_int, to_value=high_int, step=1)]
    return descriptor


def _ros_value(value):
    return list(value) if isinstance(value, tuple) else value


def declare_parameters(node: Node, schema: NodeSchema,
                       on_change: Mapping[str, Callable[[Any], None]] | None = None) -> dict[str, Any]:
    """Declare every parameter of ``schema`` on ``node``; their values as the node takes them.

    At start: ``-p x:=1`` for a double is taken as 1.0, and a value of
    the wrong type or out of range is a :class:`~dvrk_ident_ros.errors.DvrkIdentError` naming it (one
    ``error:`` line, exit status 2). Each value is read through a dynamically typed declaration, checked
    and converted by the schema, then declared again with its :func:`parameter_descriptor` (typed, ranged,
    read-only unless the schema says ``runtime``). A parameter without a default stays dynamically typed
    and read-only; an ``arm_dependent`` one is checked by the node against its arm.

    At run time an on-set callback refuses, with the reason, a value the schema refuses (rclpy refuses a
    wrong type, a value outside a range and a read-only parameter before it); a valid value of a ``runtime``
    parameter goes to ``on_change[name](value)`` at once, converted to the schema's type; the handler may
    refuse it by raising DvrkIdentError (the reason is the answer's). Every runtime parameter needs a handler.
    """
    handlers = dict(on_change or {})
    if set(handlers) != set(schema.runtime()):
        raise ValueError(f"{schema.node}: run-time handlers for {sorted(handlers)}, the schema's run-time "
                         f"parameters are {sorted(schema.runtime())}")
    values: dict[str, Any] = {}
    for spec in schema:
        try:
            if spec.dynamic_typing:
                raw = node.declare_parameter(spec.name, None, parameter_descriptor(spec)).value
            else:
                raw = node.declare_parameter(spec.name, _ros_value(spec.default),
                                             ParameterDescriptor(dynamic_typing=True)).value
        except ParameterException as exc:
            raise DvrkIdentError(f"parameter {spec.name}: {exc}") from exc
        if spec.arm_dependent:  # the node checks it against the arm (one value per joint)
            sequence = not isinstance(raw, bool | int | float | str) and raw is not None
            values[spec.name] = list(raw) if sequence else ([] if raw is None else raw)  # a scalar: refused there
            continue
        value = spec.coerce(raw)
        values[spec.name] = value
        if spec.dynamic_typing:
            continue
        node.undeclare_parameter(spec.name)
        try:
            node.declare_parameter(spec.name, _ros_value(value), parameter_descriptor(spec), ignore_override=True)
        except ParameterException as exc:
            raise DvrkIdentError(f"parameter {spec.name}: {exc}") from exc

    def on_set(parameters: list) -> SetParametersResult:
        changes = []
        for parameter in parameters:
            if parameter.name not in schema:
                continue  # use_sim_time and the like: rclpy's own
            spec = schema[parameter.name]
            if spec.read_only:
                return SetParametersResult(successful=False, reason=f"{spec.name} is read-only: it is read once "
                                           "at start (restart the node to change it)")
            try:
                spec.check(parameter.value)
            except ParameterValueError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
            changes.append((spec.name, spec.coerce(parameter.value)))  # typed as the schema says
        for name, value in changes:
            try:
                handlers[name](value)
            except DvrkIdentError as exc:  # the handler refused it: the parameter keeps its value
                node.get_logger().error(f"parameter {name} not set to {render(value)}: {exc}")
                return SetParametersResult(successful=False, reason=str(exc))
            node.get_logger().info(f"parameter {name} set to {render(value)}")
        return SetParametersResult(successful=True)

    node.add_on_set_parameters_callback(on_set)
    return values
