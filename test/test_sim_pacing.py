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


# -- the wall-clock path (no /clock): late periods caught up, stalls counted, long stops dropped ---------------

def test_wall_clock_periods_on_absolute_deadlines():
    from dvrk_ident_ros.sim.pacing import WallClockSchedule

    clock = FakeClock()
    schedule = WallClockSchedule(0.01, max_lag=0.5, stall=0.05, clock=clock)
    assert schedule.wait() == pytest.approx(0.01)
    for k in range(1, 101):  # each wake-up 0.3 ms late: the deadlines stay on the grid, nothing drifts
        clock.now = 100.0 + 0.01 * k + 0.0003
        assert schedule.wait() <= 0.0
        assert schedule.due() == pytest.approx(0.01)
    assert schedule.elapsed == pytest.approx(1.0)
    assert schedule.wait() == pytest.approx(0.01 - 0.0003)
    assert (schedule.late_periods, schedule.stalls, schedule.drops) == (0, 0, 0)


def test_wall_clock_lag_is_caught_up_in_one_integration_and_a_stall_is_counted():
    from dvrk_ident_ros.sim.pacing import WallClockSchedule

    clock = FakeClock()
    schedule = WallClockSchedule(0.01, max_lag=0.5, stall=0.05, clock=clock)
    clock.now += 0.035  # the 10 ms period is 25 ms late: two whole periods more, published once
    assert schedule.due() == pytest.approx(0.03)
    assert (schedule.late_periods, schedule.stalls) == (2, 0)
    clock.now += 0.12  # not scheduled for 0.12 s: a stall, caught up all the same
    assert schedule.due() == pytest.approx(0.12)  # the next period and the 11 whole ones it is late by
    assert schedule.stalls == 1 and schedule.stalled == pytest.approx(0.115)
    assert schedule.elapsed == pytest.approx(0.15)  # the wall time (0.155 s) to within a period: nothing lost
    assert schedule.drops == 0 and schedule.worst_lag == pytest.approx(0.115)
    assert "1 stalls over 50 ms" in schedule.summary() and "0 over 0.5 s dropped" in schedule.summary()


def test_wall_clock_long_stop_is_dropped_and_the_stamps_stay_on_the_wall_clock():
    from dvrk_ident_ros.sim.pacing import WallClockSchedule

    clock = FakeClock()
    schedule = WallClockSchedule(0.01, max_lag=0.5, stall=0.05, clock=clock)
    clock.now += 2.01  # stopped for 2 s
    assert schedule.due() == pytest.approx(0.01)  # one period simulated, the rest dropped
    assert (schedule.drops, schedule.stalls) == (1, 1) and schedule.dropped == pytest.approx(2.0)
    # the origin moved on: the state just published stands for now, the next period is due in 10 ms
    assert schedule.origin + schedule.elapsed == pytest.approx(clock.now)
    assert schedule.wait() == pytest.approx(0.01)
    assert "2.000 s not simulated" in schedule.summary()


def test_wall_clock_schedule_refuses_bad_settings():
    from dvrk_ident_ros.sim.pacing import WallClockSchedule

    for period, lag in ((0.0, 0.5), (float("inf"), 0.5), (0.01, -1.0)):
        with pytest.raises(DvrkIdentError):
            WallClockSchedule(period, lag)


def test_wall_clock_delay_shifts_the_deadlines_not_the_stamps():
    from dvrk_ident_ros.sim.pacing import WallClockSchedule

    clock = FakeClock()
    schedule = WallClockSchedule(0.01, max_lag=0.5, stall=0.05, delay=0.002, clock=clock)
    assert schedule.wait() == pytest.approx(0.012)  # the period ending at 100.01 is simulated at 100.012
    clock.now = 100.012
    assert schedule.due() == pytest.approx(0.01) and schedule.late_periods == 0
    assert schedule.origin + schedule.elapsed == pytest.approx(100.01)  # its stamp: the instant it stands for
    clock.now = 103.0  # stopped: dropped, the delay kept
    schedule.due()
    assert schedule.drops == 1 and schedule.origin + schedule.elapsed == pytest.approx(103.0 - 0.002)
    with pytest.raises(DvrkIdentError):
        WallClockSchedule(0.01, 0.5, delay=-0.001)
