"""The compensation's supervisor (ROS-free): ramp-in, period, deadline, stale, fade-out, stop; the dVRK's own
compensation's flag: found, taken over, yielded, handed back."""
from __future__ import annotations

import pytest

from dvrk_ident_ros.gc.supervisor import (
    ACTIVE,
    FADING_OUT,
    RAMP_IN,
    STOPPED,
    BuiltinCompensation,
    CompensationSupervisor,
    SupervisorSettings,
)


def _feed(sup: CompensationSupervisor, stamps, arrivals=None) -> list[float]:
    arrivals = stamps if arrivals is None else arrivals
    return [sup.on_state(a, s) for a, s in zip(arrivals, stamps, strict=True)]


def test_ramp_in_follows_the_stamps_then_active():
    sup = CompensationSupervisor(SupervisorSettings(ramp_in_time=1.0))
    assert sup.state == STOPPED
    scales = _feed(sup, [100.0 + 0.005 * k for k in range(300)])
    assert scales[0] == 0.0 and sup.state == ACTIVE
    assert scales[100] == pytest.approx(0.5) and scales[200] == 1.0


def test_period_from_stamps_not_from_a_burst_of_arrivals():
    """20 samples of a 200 Hz stream delivered at once: the period is still 5 ms, the deadline 12.5 ms."""
    sup = CompensationSupervisor(SupervisorSettings(ramp_in_time=0.0, stale_periods=3.0))
    stamps = [50.0 + 0.005 * k for k in range(20)]
    _feed(sup, stamps, arrivals=[7.0 + 1e-5 * k for k in range(20)])
    assert sup.update_period() == pytest.approx(0.005)
    assert sup.deadline() == pytest.approx(0.0125)
    last = 7.0 + 1e-5 * 19
    assert not sup.is_stale(last + 0.009)  # stale after stale_periods - 1 = 2 periods (10 ms)
    assert sup.is_stale(last + 0.0101)


def test_fade_out_then_stopped_and_resume_from_the_current_scale():
    sup = CompensationSupervisor(SupervisorSettings(ramp_in_time=1.0, fade_out_time=0.5))
    _feed(sup, [10.0 + 0.005 * k for k in range(300)])
    sup.begin_fade_out()
    assert sup.state == FADING_OUT and sup.stale_events == 1
    assert sup.fade_step(0.25) == pytest.approx(0.5)
    assert sup.on_state(20.0, 20.0) == pytest.approx(0.5) and sup.state == RAMP_IN  # no restart from zero
    sup.begin_fade_out()
    assert sup.fade_step(1.0) == 0.0 and sup.state == STOPPED
    assert not sup.is_stale(1e9)  # stopped: nothing to watch


def test_a_fade_for_a_reason_other_than_staleness_is_not_a_stale_event_and_stop_is_at_once():
    sup = CompensationSupervisor(SupervisorSettings(ramp_in_time=0.0, fade_out_time=0.5))
    _feed(sup, [10.0 + 0.005 * k for k in range(10)])
    assert sup.begin_fade_out(stale=False) and sup.state == FADING_OUT and sup.stale_events == 0
    assert not sup.begin_fade_out()  # already fading
    sup.stop()
    assert (sup.state, sup.scale) == (STOPPED, 0.0)
    assert sup.on_state(11.0, 11.0) == 1.0 and sup.state == ACTIVE  # ramp_in_time 0: at once
    sup.stop()
    assert not sup.begin_fade_out() and sup.state == STOPPED


def test_builtin_2_4_found_on_turned_off_then_handed_back_on():
    b = BuiltinCompensation()
    b.observe(True)  # dVRK 2.4: on by default
    assert not b.may_command(readable=True)  # not owned
    b.take_over()
    assert b.found is True and b.owned and not b.may_command(readable=True)  # still on: wait for off
    assert not b.observe(True)  # on until the arm processes the node's "off": not someone else's doing
    assert not b.observe(False) and b.may_command(readable=True)
    assert not b.observe(False)
    assert b.hand_over() is True and not b.owned and b.reading is None  # back on, as found; a fresh reading next


def test_builtin_2_3_found_off_stays_off():
    b = BuiltinCompensation()
    b.observe(False)
    b.take_over()
    assert b.found is False and b.may_command(readable=True)  # off already: command at once
    assert b.hand_over() is False


def test_builtin_turned_on_by_someone_else_is_yielded_not_fought_then_resumed_when_off():
    b = BuiltinCompensation()
    b.observe(True)
    b.take_over()
    b.observe(False)
    assert b.observe(True)  # teleoperation enabled: someone else turned it on
    assert b.yielded and not b.owned and not b.may_command(readable=True)
    assert not b.observe(True)  # said once
    assert b.hand_over() is None  # theirs now: the node leaves it alone (at exit too)
    assert not b.observe(False) and not b.yielded  # off again: the node may take over
    b.take_over()
    assert b.found is True and b.may_command(readable=True)  # found stays what it was before the first take-over
    assert b.hand_over() is True


def test_builtin_without_readings_is_never_assumed_on():
    b = BuiltinCompensation()
    b.take_over()  # a PSM (no gravity_compensation/setpoint_js): nothing could be read
    assert b.found is None and b.may_command(readable=False) and not b.may_command(readable=True)
    assert b.hand_over() is None  # publish nothing: it may have been off


def test_builtin_forgets_its_reading_when_the_arm_stops_being_ready():
    b = BuiltinCompensation()
    b.observe(True)
    b.forget()
    assert b.reading is None
    b.take_over()  # taken over without a reading (the node does not, where the arm publishes readings)
    assert b.found is None


@pytest.mark.parametrize(("settings", "message"), [
    ({"stale_periods": 1.0}, "stale_periods 1.0: expected more than 1 period"),
    ({"ramp_in_time": -0.1}, "ramp_in_time -0.1"),
    ({"fade_out_time": float("nan")}, "fade_out_time nan"),
])
def test_settings_the_watchdog_cannot_work_with_are_refused(settings, message):
    from dvrk_ident_ros.errors import DvrkIdentError

    with pytest.raises(DvrkIdentError, match=message):
        SupervisorSettings(**settings)
