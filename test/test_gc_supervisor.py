"""The compensation's supervisor (ROS-free): ramp-in, period, deadline, stale, fade-out."""
from __future__ import annotations

import pytest

from dvrk_ident_ros.gc.supervisor import (
    ACTIVE,
    FADING_OUT,
    RAMP_IN,
    STOPPED,
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


@pytest.mark.parametrize(("settings", "message"), [
    ({"stale_periods": 1.0}, "stale_periods 1.0: expected more than 1 period"),
    ({"ramp_in_time": -0.1}, "ramp_in_time -0.1"),
    ({"fade_out_time": float("nan")}, "fade_out_time nan"),
])
def test_settings_the_watchdog_cannot_work_with_are_refused(settings, message):
    from dvrk_ident_ros.errors import DvrkIdentError

    with pytest.raises(DvrkIdentError, match=message):
        SupervisorSettings(**settings)
