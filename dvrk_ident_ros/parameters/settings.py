"""The nodes' settings, typed and frozen: generated from the schemas (dvrk_ident_ros/parameters/
<node>.py) by `python -m dvrk_ident_ros.parameters.reference`; change the schema, not this file. A node
reads its parameters as ``<Node>Settings.from_values(declare_parameters(...))``: no value is cast in a
node."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


def _floats(value: Any) -> tuple[float, ...]:
    return tuple(float(x) for x in value)


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(x) for x in value)


def _optional(convert: Callable[[Any], T], value: Any) -> T | None:
    return None if value is None else convert(value)


@dataclass(frozen=True)
class SimulatedArmSettings:
    """The parameters of ``simulated_arm`` (docs/reference/parameters.md)."""

    arm: str
    publish_rate: float
    physics_rate: float
    publish_clock: bool
    real_time_factor: float
    clock_rate: float
    true_parameters: str
    config_file: str
    initial_position: tuple[float, ...]
    initial_state: str
    homing_time: float
    dvrk_version: str
    tool_engaged: bool
    fault_tracking_error: float
    servo_timing: str
    kinematic_gc: str
    noise: bool
    seed: int

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> SimulatedArmSettings:
        return cls(
            arm=str(values["arm"]),
            publish_rate=float(values["publish_rate"]),
            physics_rate=float(values["physics_rate"]),
            publish_clock=bool(values["publish_clock"]),
            real_time_factor=float(values["real_time_factor"]),
            clock_rate=float(values["clock_rate"]),
            true_parameters=str(values["true_parameters"]),
            config_file=str(values["config_file"]),
            initial_position=_floats(values["initial_position"]),
            initial_state=str(values["initial_state"]),
            homing_time=float(values["homing_time"]),
            dvrk_version=str(values["dvrk_version"]),
            tool_engaged=bool(values["tool_engaged"]),
            fault_tracking_error=float(values["fault_tracking_error"]),
            servo_timing=str(values["servo_timing"]),
            kinematic_gc=str(values["kinematic_gc"]),
            noise=bool(values["noise"]),
            seed=int(values["seed"]),
        )


@dataclass(frozen=True)
class TrajectoryPlayerSettings:
    """The parameters of ``trajectory_player`` (docs/reference/parameters.md)."""

    arm: str
    trajectory_file: str
    autostart: bool
    ready_timeout: float
    home_arm: bool
    stream_rate: float
    ramp_in_speed: float
    tracking_error_limit: object
    stale_timeout: float
    speed_scale: float
    periods: int
    pose_stride: int
    sweep_stride: int
    wait_for_recorder: bool
    recorder_timeout: float

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> TrajectoryPlayerSettings:
        return cls(
            arm=str(values["arm"]),
            trajectory_file=str(values["trajectory_file"]),
            autostart=bool(values["autostart"]),
            ready_timeout=float(values["ready_timeout"]),
            home_arm=bool(values["home_arm"]),
            stream_rate=float(values["stream_rate"]),
            ramp_in_speed=float(values["ramp_in_speed"]),
            tracking_error_limit=values["tracking_error_limit"],
            stale_timeout=float(values["stale_timeout"]),
            speed_scale=float(values["speed_scale"]),
            periods=int(values["periods"]),
            pose_stride=int(values["pose_stride"]),
            sweep_stride=int(values["sweep_stride"]),
            wait_for_recorder=bool(values["wait_for_recorder"]),
            recorder_timeout=float(values["recorder_timeout"]),
        )


@dataclass(frozen=True)
class RecorderSettings:
    """The parameters of ``recorder`` (docs/reference/parameters.md)."""

    arm: str
    output_directory: str
    bag_path: str
    record_setpoint: bool
    expect_player: bool
    gap_threshold: float
    extra_topics: tuple[str, ...] | None

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> RecorderSettings:
        return cls(
            arm=str(values["arm"]),
            output_directory=str(values["output_directory"]),
            bag_path=str(values["bag_path"]),
            record_setpoint=bool(values["record_setpoint"]),
            expect_player=bool(values["expect_player"]),
            gap_threshold=float(values["gap_threshold"]),
            extra_topics=_optional(_strings, values["extra_topics"]),
        )


@dataclass(frozen=True)
class IdentificationServiceSettings:
    """The parameters of ``identification_service`` (docs/reference/parameters.md)."""

    output_directory: str
    data_directory: str
    allow_queue: bool

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> IdentificationServiceSettings:
        return cls(
            output_directory=str(values["output_directory"]),
            data_directory=str(values["data_directory"]),
            allow_queue=bool(values["allow_queue"]),
        )


@dataclass(frozen=True)
class GravityCompensationSettings:
    """The parameters of ``gravity_compensation`` (docs/reference/parameters.md)."""

    arm: str
    parameter_file: str
    stale_periods: float
    handover_after: float
    resume_after: float
    ramp_in_time: float
    fade_out_time: float
    torque_limit_scale: float
    blend: str
    blend_travel: float
    fit_check: bool
    fit_probe: bool
    fit_tolerance: tuple[float, ...]
    fit_range_margin: float
    disable_builtin: bool
    publish_diagnostics: bool

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> GravityCompensationSettings:
        return cls(
            arm=str(values["arm"]),
            parameter_file=str(values["parameter_file"]),
            stale_periods=float(values["stale_periods"]),
            handover_after=float(values["handover_after"]),
            resume_after=float(values["resume_after"]),
            ramp_in_time=float(values["ramp_in_time"]),
            fade_out_time=float(values["fade_out_time"]),
            torque_limit_scale=float(values["torque_limit_scale"]),
            blend=str(values["blend"]),
            blend_travel=float(values["blend_travel"]),
            fit_check=bool(values["fit_check"]),
            fit_probe=bool(values["fit_probe"]),
            fit_tolerance=_floats(values["fit_tolerance"]),
            fit_range_margin=float(values["fit_range_margin"]),
            disable_builtin=bool(values["disable_builtin"]),
            publish_diagnostics=bool(values["publish_diagnostics"]),
        )


@dataclass(frozen=True)
class GcSafetyNetSettings:
    """The parameters of ``gc_safety_net`` (docs/reference/parameters.md)."""

    arm: str

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> GcSafetyNetSettings:
        return cls(
            arm=str(values["arm"]),
        )


@dataclass(frozen=True)
class GcCalibrationSettings:
    """The parameters of ``gc_calibration`` (docs/reference/parameters.md)."""

    arm: str
    serial: str
    parameter_file: str
    refit_holds: int
    hold_only: bool
    grid_file: str
    output_directory: str
    home_arm: bool
    pose_stride: int
    sweep_stride: int
    method: str
    orders: str
    effort: str
    hold_poses: int
    hold_time: float
    seed: int
    max_tip_drift: float
    collect_timeout: float

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> GcCalibrationSettings:
        return cls(
            arm=str(values["arm"]),
            serial=str(values["serial"]),
            parameter_file=str(values["parameter_file"]),
            refit_holds=int(values["refit_holds"]),
            hold_only=bool(values["hold_only"]),
            grid_file=str(values["grid_file"]),
            output_directory=str(values["output_directory"]),
            home_arm=bool(values["home_arm"]),
            pose_stride=int(values["pose_stride"]),
            sweep_stride=int(values["sweep_stride"]),
            method=str(values["method"]),
            orders=str(values["orders"]),
            effort=str(values["effort"]),
            hold_poses=int(values["hold_poses"]),
            hold_time=float(values["hold_time"]),
            seed=int(values["seed"]),
            max_tip_drift=float(values["max_tip_drift"]),
            collect_timeout=float(values["collect_timeout"]),
        )


#: Each node's settings class, by node name.
SETTINGS: dict[str, type] = {
    "simulated_arm": SimulatedArmSettings,
    "trajectory_player": TrajectoryPlayerSettings,
    "recorder": RecorderSettings,
    "identification_service": IdentificationServiceSettings,
    "gravity_compensation": GravityCompensationSettings,
    "gc_safety_net": GcSafetyNetSettings,
    "gc_calibration": GcCalibrationSettings,
}
