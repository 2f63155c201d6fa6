"""The simulated arm's stamps (ROS-free): the simulated time a stamp stands for, the instant a streamed command
reached the arm, and the operating-state events' strictly increasing stamps.

A stamp is ``origin + t_sim``: ``origin`` is SIM_EPOCH under /clock, on the wall clock the wall time of
simulated time 0 (the physics then runs behind it: sim/pacing.py).
"""
from __future__ import annotations

from collections.abc import Callable

from dvrk_ident_ros.arm.state import stamp_is_valid
from dvrk_ident_ros.sim.arm import SERVO_CLOCK

SIM_EPOCH = 1.0  # s: simulated time starts here (0 means "no time yet" to rclpy)
EVENT_STEP_NS = 1000  # ns: an event is stamped at least this long after the last one (and after its instant)
#: s: a command's delivery on one host (publisher to subscriber), added to its stamp as the instant it reached the
#: arm (servo_timing arrival)
DELIVERY = 0.0005
NS_PER_S = 1_000_000_000


def split_seconds(seconds: float) -> tuple[int, int]:
    """(sec, nanosec) of a stamp in seconds, rounded to the nanosecond."""
    sec, nanosec = divmod(round(seconds * 1e9), NS_PER_S)
    return sec, nanosec


class StampClock:
    """The node's stamps. ``simulated``: the node publishes /clock (stamps are simulated time); else the stamps
    are wall time and ``origin`` follows the wall-clock schedule."""

    def __init__(self, simulated: bool, origin: float = SIM_EPOCH) -> None:
        self.simulated = simulated
        self.origin = origin  # s: the stamp of simulated time 0
        self._last_event_ns = 0  # the last event's stamp

    def event(self, sim_time: float, wall_ns: Callable[[], int]) -> tuple[int, int]:
        """An event's stamp (sec, nanosec): its instant (under /clock the simulated time, EVENT_STEP_NS after the
        instant a command was taken at; on the wall clock ``wall_ns()``, as the physics runs behind), at least
        EVENT_STEP_NS after the last event's, so that two events never share a stamp."""
        if self.simulated:
            ns = round((self.origin + sim_time) * 1e9) + EVENT_STEP_NS
        else:
            ns = wall_ns()
        ns = max(ns, self._last_event_ns + EVENT_STEP_NS)
        self._last_event_ns = ns
        return ns // NS_PER_S, ns % NS_PER_S

    def command_time(self, sec: int, nanosec: int) -> float | None:
        """The simulated time a command's stamp stands for (None: no valid stamp, obey it at once)."""
        if not stamp_is_valid(sec, nanosec):
            return None
        return sec + 1e-9 * nanosec - self.origin

    def reception_time(self, served: float, stamp: float | None, sim_time: float) -> float:
        """The simulated instant a streamed command reached the arm, as a real arm's bridge takes it: its sender's
        stamp (simulated time ``stamp``, the instant it was published) plus DELIVERY, never after this process
        took it up (``served``, wall s, on the wall clock; under /clock ``sim_time``, the physics' time): so this
        simulator's own command-thread delay, which a real arm's C++ bridge does not have, is not the stream's.
        A stamp further than SERVO_CLOCK from that (another clock), or none: when it was taken up."""
        now = sim_time if self.simulated else served - self.origin
        if stamp is None or not -SERVO_CLOCK <= now - stamp <= SERVO_CLOCK:
            return now
        return min(stamp + DELIVERY, now)
