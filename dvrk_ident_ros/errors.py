"""The package's exception hierarchy, every class of it here.

Every error the package raises derives from :class:`DvrkIdentError` and names what is at fault (file, field,
joint, limit), so a node can catch it at its boundary, report it in one line and keep running; the ones a
caller acts on carry their values as attributes (:class:`LimitError`, :class:`StepFailedError`)::

    DvrkIdentError
    +-- DescriptionError            an arm description
    +-- DataError                   a recording or data file
    +-- SolverError                 an estimator or optimiser
    +-- SafetyError                 a command the arm must not get
    |   +-- LimitError              ... beyond a joint's position, speed or torque limit (joint, value, limits)
    |   +-- ArmNotReadyError        ... to an arm that is not ENABLED and homed
    +-- EnvironmentSetupError       the ROS 2 environment or the installation
    +-- ParameterValueError         a node parameter's value
    +-- PathRefusedError            a path an /identify request may not touch
    +-- LaunchArgumentError         a launch argument's value
    +-- JobError                    a job of the command line or of a node
        +-- CalibrationRefusedError ... cannot start with its settings: nothing moved (exit status 2)
        +-- StepFailedError         ... a step failed (status: the job's exit status)
        +-- NodeFailedError         ... a node of a launch exited non-zero (the launch fails)
"""
from __future__ import annotations

import math


class DvrkIdentError(Exception):
    """Base class of all dvrk_ident errors."""


class DescriptionError(DvrkIdentError):
    """An arm description (config/*.yaml) is missing, malformed or inconsistent."""


class DataError(DvrkIdentError):
    """A recording or data file is unreadable, incomplete or inconsistent."""


class SolverError(DvrkIdentError):
    """An estimator or optimiser failed or returned an unusable answer."""


class SafetyError(DvrkIdentError):
    """A command would violate a joint, velocity or torque limit."""


class EnvironmentSetupError(DvrkIdentError):
    """The ROS 2 environment or the installation is incomplete."""


class LimitError(SafetyError):
    """A command beyond a joint's limit: ``what`` (the command), ``joint`` (its name), ``value`` and the limits
    ``lower``, ``upper`` in the joint's units (a speed or torque limit is symmetric: lower = -upper)."""

    def __init__(self, message: str, *, what: str, joint: str, value: float, lower: float, upper: float):
        super().__init__(message)
        self.what, self.joint, self.value = what, joint, float(value)
        self.lower, self.upper = float(lower), float(upper)

    @property
    def excess(self) -> float:
        """How far beyond the nearer limit (> 0), in the joint's units."""
        return max(self.lower - self.value, self.value - self.upper, 0.0) if math.isfinite(self.value) else math.inf


class ArmNotReadyError(SafetyError):
    """A motion command reached an arm that is not ENABLED and homed: it is ignored."""


class ParameterValueError(DvrkIdentError):
    """A parameter value of the wrong type, out of its range or not one of its choices."""


class PathRefusedError(DvrkIdentError):
    """A request named a path it may not touch; the message names the rule."""


class LaunchArgumentError(DvrkIdentError):
    """A launch argument has a value the launch file cannot use."""


class JobError(DvrkIdentError):
    """A job (a calibration, a launch) could not start or did not finish."""


class CalibrationRefusedError(JobError):
    """A setting a calibration job cannot start with: nothing was moved (exit status 2)."""


class StepFailedError(JobError):
    """A step of a job failed; ``status`` is the job's exit status."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


class NodeFailedError(JobError):
    """A node of a launch exited with a non-zero status: the launch ends and ``ros2 launch`` exits non-zero."""
