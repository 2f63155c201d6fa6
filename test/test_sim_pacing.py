"""The simulator's real-time pacing: jitter is caught up, a stall slips instead of replaying at full speed."""
from __future__ import annotations

import pytest

from dvrk_ident_ros.errors import DvrkIdentError
from dvrk_ident_ros.sim.pacing import RealTimePacer


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_on_schedule_waits_until_due():
    clock = FakeClock()
    pacer = RealTimePacer(0.5, max_lag=0.02, clock=clock)
    clock.now += 0.01
    assert pacer.delay(0.01) == pytest.approx(0.01)  # 0.01 s simulated is due after 0.02 s at half speed
    assert pacer.slips == 0


def test_small_lag_is_caught_up():
    clock = FakeClock()
    pacer = RealTimePacer(1.0, max_lag=0.02, clock=clock)
    clock.now += 0.025  # 15 ms late for the 10 ms tick: within the allowed lag
    assert pacer.delay(0.01) == 0.0
    assert pacer.delay(0.02) == 0.0
    assert pacer.delay(0.03) == pytest.approx(0.005)  # caught up, the schedule is unchanged
    assert pacer.slips == 0


def test_stall_slips_instead_of_replaying():
    clock = FakeClock()
    pacer = RealTimePacer(1.0, max_lag=0.02, clock=clock)
    clock.now += 0.2  # the machine stalled 0.19 s after the 10 ms tick was due
    assert pacer.delay(0.01) == 0.0
    assert pacer.slips == 1 and pacer.slipped == pytest.approx(0.19)
    # the next tick is due one period after the late one, not at once
    assert pacer.delay(0.02) == pytest.approx(0.01)
    pacer.restart()
    assert pacer.slips == 0 and pacer.delay(0.0) == 0.0


def test_as_fast_as_possible_never_waits():
    clock = FakeClock()
    pacer = RealTimePacer(0.0, max_lag=0.0, clock=clock)
    assert pacer.delay(1e6) == 0.0 and pacer.slips == 0


@pytest.mark.parametrize("rtf, lag", [(-1.0, 0.01), (float("nan"), 0.01), (1.0, -0.1)])
def test_bad_settings_are_refused(rtf, lag):
    with pytest.raises(DvrkIdentError):
        RealTimePacer(rtf, lag)
