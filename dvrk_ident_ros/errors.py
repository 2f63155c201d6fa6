"""The package's exception hierarchy.

Every error the core raises on bad input derives from :class:`DvrkIdentError`
and names what is at fault (file, field, joint, limit), so a node can catch it
at its boundary, report it in one line and keep running.
"""
from __future__ import annotations


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
