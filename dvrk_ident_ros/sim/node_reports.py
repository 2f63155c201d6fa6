"""What the simulated arm's node reports (ROS-free): the throttled "arm not ready" warnings and, in its final log
line, how late the streamed setpoints were obeyed."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

NOT_READY_EVERY = 2.0  # s: at most one "arm not ready" warning per command topic in this time


class NotReadyWarnings:
    """One warning per command topic per NOT_READY_EVERY; the ones held back are counted into the next."""

    def __init__(self) -> None:
        self._said_at: dict[str, float] = {}
        self._held_back: dict[str, int] = {}

    def warning(self, topic: str, now: float, reason: Callable[[], str]) -> str | None:
        """The warning for a command on ``topic`` ignored at ``now`` (monotonic s), or None (held back);
        ``reason()``: why the arm is not ready, asked only for a warning."""
        if now - self._said_at.get(topic, -math.inf) < NOT_READY_EVERY:
            self._held_back[topic] = self._held_back.get(topic, 0) + 1
            return None
        more = self._held_back.pop(topic, 0)
        self._said_at[topic] = now
        return (f"{topic}: ignored, arm not ready: {reason()}"
                + (f" (+{more} more since the last report)" if more else ""))


def servo_summary(lateness: Sequence[float], servo_timing: str, stale: int, publish_failures: int) -> str:
    """The end of the final log line: how late after their stamps (``stamp``) or after the instant they reached
    the arm (``arrival``: this simulator's command thread) the streamed setpoints were obeyed (``lateness``, s),
    and the state samples the middleware refused."""
    late = np.asarray(lateness)
    failures = f"; {publish_failures} state samples not published" if publish_failures else ""
    if late.size == 0:
        return failures
    if servo_timing == "stamp":
        return (f"; {late.size} servo_jp obeyed {1e3 * np.median(late):.1f} ms after their stamps (median; p99 "
                f"{1e3 * np.percentile(late, 99):.1f} ms, max {1e3 * late.max():.1f} ms), "
                f"{stale} stale" + failures)
    # on arrival: 0 when the physics reached the instant the setpoint reached the arm after it was served
    return (f"; {late.size} servo_jp taken on arrival, {100 * np.mean(late > 0):.1f} % after the instant they "
            f"reached the arm (by median {1e3 * np.median(late):.1f} ms; p99 {1e3 * np.percentile(late, 99):.1f} "
            f"ms, max {1e3 * late.max():.1f} ms: this simulator's command thread)" + failures)


def startup_line(arm: str, model: str, dvrk_version: str, parameter_file: str, status: str, builtin_on: bool,
                 console_chain: str | None, publish_rate: float, physics_rate: float, clock_rate: float | None,
                 real_time_factor: float, servo_timing: str) -> str:
    """The node's first log line: the arm, its state and compensation (``console_chain``: the console's chain,
    None without), its rates (``clock_rate`` None: wall-clock time) and how it takes servo_jp."""
    return (f"simulated {arm} ({model}, dVRK {dvrk_version}, true parameters {parameter_file}): "
            f"{status}, built-in gravity compensation {'on' if builtin_on else 'off'}"
            + (f" (the console's chain {console_chain})" if console_chain is not None else "")
            + f"; state at {publish_rate:g} Hz, physics at {physics_rate:g} Hz, "
            + (f"publishing /clock at {clock_rate:g} Hz (real-time factor {real_time_factor or 'max'})"
               if clock_rate is not None else "wall-clock time")
            + f"; servo_jp taken {'on arrival' if servo_timing == 'arrival' else 'at its stamp'}")
