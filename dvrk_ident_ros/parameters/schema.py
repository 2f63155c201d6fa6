"""A node's parameters as data (ROS-free): name, type, default, one-line description, unit, range or
choices, and whether it may change while the node runs.

What generate_parameter_library does for C++ and Python nodes, in small: the nodes declare from it
(:func:`dvrk_ident_ros.ros.parameters.declare_parameters` builds the ``ParameterDescriptor``\\ s and refuses
bad values at start and at run time), ``--help`` prints it (:mod:`dvrk_ident_ros.node_help`), and the
tests check ``config/<node>.yaml`` against it. A value is checked here, whoever gives it.
"""
from __future__ import annotations

import array
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import TypeGuard

from dvrk_ident_ros.errors import ParameterValueError

#: The largest ROS integer parameter (int64): the open end of an integer range.
INT64_MAX = 2**63 - 1




class Kind(Enum):
    """A parameter's ROS type (the name ``ros2 param describe`` prints in lower case)."""

    BOOL = "bool"
    INTEGER = "integer"
    DOUBLE = "double"
    STRING = "string"
    DOUBLE_ARRAY = "double[]"
    STRING_ARRAY = "string[]"

    @property
    def is_array(self) -> bool:
        return self in (Kind.DOUBLE_ARRAY, Kind.STRING_ARRAY)


_PYTHON = {Kind.BOOL: bool, Kind.INTEGER: int, Kind.DOUBLE: float, Kind.STRING: str,
           Kind.DOUBLE_ARRAY: float, Kind.STRING_ARRAY: str}
_NAMES = {Kind.BOOL: "a bool (true or false)", Kind.INTEGER: "an integer", Kind.DOUBLE: "a number",
          Kind.STRING: "a string", Kind.DOUBLE_ARRAY: "a list of numbers", Kind.STRING_ARRAY: "a list of strings"}


def _is(value: object, kind: Kind) -> bool:
    """``value`` is of the Python type of ``kind`` (a bool is no number, an int is a double)."""
    python = _PYTHON[kind]
    if isinstance(value, bool):
        return python is bool
    if python is float:
        return isinstance(value, int | float)
    return isinstance(value, python)


def _is_sequence(value: object) -> TypeGuard[list | tuple | array.array]:
    """A list, tuple or array.array (what rclpy gives for a parameter array), not a string."""
    return isinstance(value, list | tuple | array.array)


def _number(value: float) -> str:
    return f"{value:g}"


@dataclass(frozen=True)
class Parameter:
    """One parameter of a node.

    ``default`` None: not given unless set (the node then takes the value from elsewhere, e.g. the arm
    description); such a parameter is dynamically typed for ROS (a typed parameter must have a value)
    and read-only. ``minimum``/``maximum`` bound a number (each element of a list of numbers);
    ``exclusive_minimum`` makes the lower bound strict. ``choices``: the values a string may take
    (compared in upper case with ``ignore_case``). ``runtime``: may be set while the node runs and takes
    effect at once (the description says how); every other parameter is read-only once declared.
    ``expect``: the expectation in an error message, where the generated one would not say enough.
    ``arm_dependent``: not set = from the arm description; the node checks a given value against the arm
    (one per joint, its own message), so the start-time check here is the node's.
    """

    name: str
    kind: Kind
    default: bool | int | float | str | tuple | None
    description: str
    unit: str = ""
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    choices: tuple[str, ...] = ()
    ignore_case: bool = False
    runtime: bool = False
    expect: str = ""
    arm_dependent: bool = False
    numeric_text: bool = False  # a string that may be all digits (a serial number): -p serial:=41878 is "41878"

    @property
    def read_only(self) -> bool:
        return not self.runtime

    @property
    def dynamic_typing(self) -> bool:
        """Declared dynamically typed: only a parameter without a default (ROS needs a value to type it)."""
        return self.default is None

    def expectation(self) -> str:
        """What a valid value is, in words: "> 0", "1..2000 Hz", "(0, 1]", "one of 2.3, 2.4"."""
        if self.expect:
            return self.expect
        if self.choices:
            return "one of " + ", ".join(self.choices)
        unit = f" {self.unit}" if self.unit else ""
        low, high = self.minimum, self.maximum
        if low is not None and high is not None:
            if self.exclusive_minimum:
                return f"({_number(low)}, {_number(high)}]{unit}"
            return f"{_number(low)}..{_number(high)}{unit}"
        if low is not None:
            return f"{'>' if self.exclusive_minimum else '>='} {_number(low)}{unit}"
        if high is not None:
            return f"<= {_number(high)}{unit}"
        return _NAMES[self.kind]

    def constraints(self) -> str:
        """The constraints in one line (``ParameterDescriptor.additional_constraints``, ``--help``)."""
        if self.choices or self.minimum is not None or self.maximum is not None or self.expect:
            return self.expectation() + (" (case ignored)" if self.ignore_case else "")
        return ""

    def _error(self, value: object, expectation: str | None = None) -> ParameterValueError:
        shown = repr(value) if not isinstance(value, list) else "[" + ", ".join(map(repr, value)) + "]"
        unit = f" {self.unit}" if self.unit and isinstance(value, int | float) and not isinstance(value, bool) else ""
        return ParameterValueError(f"{self.name} {shown}{unit}: expected {expectation or self.expectation()}")

    def _check_number(self, value: float, whole: object) -> None:
        if not math.isfinite(value):
            raise self._error(whole, "a finite number")
        low, high = self.minimum, self.maximum
        if low is not None and (value < low or (self.exclusive_minimum and value == low)):
            raise self._error(whole)
        if high is not None and value > high:
            raise self._error(whole)

    def check(self, value: object) -> None:
        """Raise :class:`ParameterValueError` unless ``value`` (already of the ROS type) is valid."""
        if value is None:
            if self.default is None:
                return
            raise self._error(value, _NAMES[self.kind])
        if self.kind.is_array:
            if not _is_sequence(value) or not all(_is(v, self.kind) for v in value):
                raise self._error(value, _NAMES[self.kind])
            if self.kind is Kind.DOUBLE_ARRAY:
                for v in value:
                    self._check_number(float(v), list(value))
            return
        if not _is(value, self.kind):
            raise self._error(value, _NAMES[self.kind])
        if self.kind in (Kind.INTEGER, Kind.DOUBLE):
            self._check_number(float(value), value)  # type: ignore[arg-type]
        if self.choices:
            text = str(value).upper() if self.ignore_case else str(value)
            if text not in self.choices:
                raise self._error(value)

    def coerce(self, value: object) -> object:
        """The value as the node takes it at start: ``1`` for a double is 1.0, a list of integers for a list of
        doubles is a list of floats, a number given for a string with choices (``-p dvrk_version:=2.3``) is its
        text, an empty list (rcl types it as bytes) is []; then :meth:`check`."""
        if self.kind.is_array:
            if value is None or (not isinstance(value, str) and hasattr(value, "__len__")
                                 and len(value) == 0):
                value = []  # rcl types an empty list as a byte array
            if _is_sequence(value):  # rclpy gives array.array('d') for a double array
                value = [float(v) if self.kind is Kind.DOUBLE_ARRAY and _is(v, self.kind) else v
                         for v in value]
        elif self.kind is Kind.DOUBLE and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        elif (self.kind is Kind.STRING and (self.choices or (self.numeric_text and isinstance(value, int)))
              and isinstance(value, int | float) and not isinstance(value, bool)):
            value = str(value)
        self.check(value)
        return value

    def render_default(self) -> str:
        """The default as written on the command line (``-p name:=default``); "(not set)" for None."""
        if self.default is None:
            return "(not set: from the arm)" if self.arm_dependent else "(not set)"
        return render(self.default)


def render(value: object) -> str:
    """A value as written on the command line and in a parameter file."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value if value else '""'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(render(v) for v in value) + "]"
    return repr(value) if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class NodeSchema:
    """The parameters of one node, in the order ``--help`` and the parameter file list them."""

    node: str
    parameters: tuple[Parameter, ...]
    _by_name: dict[str, Parameter] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_name = {p.name: p for p in self.parameters}
        if len(by_name) != len(self.parameters):
            raise ValueError(f"{self.node}: a parameter is listed twice")
        object.__setattr__(self, "_by_name", by_name)

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self.parameters)

    def __getitem__(self, name: str) -> Parameter:
        return self._by_name[name]

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def defaults(self) -> dict[str, object]:
        return {p.name: p.default for p in self.parameters}

    def runtime(self) -> tuple[str, ...]:
        """The parameters that may change while the node runs."""
        return tuple(p.name for p in self.parameters if p.runtime)

    def table(self) -> str:
        """A Markdown table of the parameters (docs/reference/parameters.md)."""
        rows = ["| parameter | type | default | unit | range / choices | at run time | description |",
                "|---|---|---|---|---|---|---|"]
        for p in self.parameters:
            cells = [f"`{p.name}`", p.kind.value, f"`{p.render_default()}`", p.unit, p.constraints(),
                     "yes" if p.runtime else "no", p.description]
            rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
        return "\n".join(rows)
