"""The compensation's supervisor (ROS-free): ramp-in, period, deadline, late samples, fades, the hand-over and
its hysteresis, the final fade; the dVRK's own compensation's flag: found, taken over, yielded, handed back; the
health the ROS tools show."""
from __future__ import annotations

import numpy as np
import pytest

from dvrk_ident_ros.gc.runtime.health import ERROR, OK, WARN, compensation_health
from dvrk_ident_ros.gc.runtime.supervisor import (
    BuiltinCompensation,
    CompensationState,
    CompensationSupervisor,
    SupervisorSettings,
)


def _feed(sup: CompensationSupervisor, stamps, arrivals=None) -> list[float]:
    arrivals = stamps if arrivals is None else arrivals
    return [sup.on_state(a, s) for a, s in zip(arrivals, stamps, strict=True)]


def test_ramp_in_follows_the_stamps_then_active():
    sup = CompensationSupervisor(SupervisorSettings(ramp_in_time=1.0))
    assert sup.state == CompensationState.STOPPED
    scales = _feed(sup, [100.0 + 0.005 * k for k in range(300)])
    assert scales[0] == 0.0 and sup.state == CompensationState.ACTIVE
    assert scales[100] == pytest.approx(0.5) and scales[200] == 1.0


def test_the_period_is_the_publishers_nominal_one_even_when_it_skips_periods():
    """A publisher falling behind (every other interval 3 periods: stamps 10, 30, 10, 30 ms apart): the
    nominal period stays 10 ms, so the watchdog's threshold does not drift up with the load."""
    sup = CompensationSupervisor(SupervisorSettings(ramp_in_time=0.0))
    stamps = [0.0]
    for k in range(60):
        stamps.append(stamps[-1] + (0.01 if k % 2 else 0.03))
    _feed(sup, stamps)
    assert sup.update_period() == pytest.approx(0.01)


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


def test_a_sample_repeating_the_last_stamp_is_no_fresh_sample():
    """A sample whose stamp repeats the last one's (the arm's loop stalled behind a live bridge) is one the node
    skips: the watchdog, armed by the last fresh sample, goes stale on time."""
    sup = CompensationSupervisor(SupervisorSettings(ramp_in_time=0.0))
    stamps = [20.0 + 0.01 * k for k in range(50)]
    _feed(sup, stamps, arrivals=[5.0 + 0.01 * k for k in range(50)])
    assert sup.repeats(stamps[-1]) and sup.repeats(stamps[-1] - 3e-6)  # the bridge's stamp, converted anew
    assert not sup.repeats(stamps[-1] + 0.01) and not sup.repeats(stamps[-2])
    assert sup.is_stale(5.0 + 0.01 * 49 + 0.0901)  # the repeats, skipped, re-armed nothing
    sup.interrupt()  # a new run (the arm not ready in between): nothing to repeat
    assert not sup.repeats(stamps[-1])


def _simulate(sup: CompensationSupervisor, arrivals, end: float) -> list[tuple[float, str, float | None]]:
    """The node's event loop in miniature: samples at ``arrivals`` (stamps = arrivals), the watchdog fired as the
    node arms it (``deadline`` after each commanded sample, then ``next_in`` after each tick), until ``end``.
    Events: (time, "answer" | "fade" | "hand_over" | "wait", scale). A hand-over releases the arm; after it a
    sample is commanded from only once ``may_resume``."""
    events: list[tuple[float, str, float | None]] = []
    samples = iter(sorted(arrivals))
    sample = next(samples, None)
    timer: float | None = None
    while True:
        due = [t for t in (sample, timer) if t is not None and t <= end]
        if not due:
            return events
        if sample is not None and (timer is None or sample <= timer):
            t, sample = sample, next(samples, None)
            if sup.state in (CompensationState.RAMP_IN, CompensationState.ACTIVE):
                scale = sup.on_state(t, t)
            else:
                sup.on_sample(t, t)
                if not (sup.state == CompensationState.FADING_OUT or sup.holding or sup.may_resume(t)):
                    events.append((t, "wait", None))
                    continue
                scale = sup.command(t, t)
            sup.update_period()
            events.append((t, "answer", scale))
            timer = t + sup.deadline()
        else:
            t = timer
            tick = sup.tick(t)
            if tick.command:
                events.append((t, "fade", sup.scale))
            if tick.hand_over:
                events.append((t, "hand_over", None))
                sup.release()
            timer = None if tick.next_in is None else t + tick.next_in


def _stream(t0: float, t1: float, period: float = 0.01) -> list[float]:
    return [t0 + period * k for k in range(round((t1 - t0) / period))]


def _kinds(events, kind: str) -> list[tuple[float, str, float | None]]:
    return [e for e in events if e[1] == kind]


def test_defaults_ride_out_the_jitter_of_a_100_hz_arm():
    """stale_periods 10: late after 90 ms at 100 Hz (25 ms, the old default, tripped on ordinary jitter)."""
    sup = CompensationSupervisor(SupervisorSettings())
    _simulate(sup, _stream(0.0, 1.0), 1.0)
    assert sup.period == pytest.approx(0.01)
    assert sup.stale_after() == pytest.approx(0.09) and sup.deadline() == pytest.approx(0.095)
    s = SupervisorSettings()
    assert (s.handover_after, s.resume_after, s.fade_out_time) == (1.0, 1.0, 0.5)


def test_a_late_sample_fades_and_resumes_without_a_hand_over():
    sup = CompensationSupervisor(SupervisorSettings(ramp_in_time=0.5, fade_out_time=0.5, stale_periods=10.0,
                                                    handover_after=1.0, resume_after=1.0))
    arrivals = _stream(0.0, 2.0) + _stream(2.3, 4.0)  # 100 Hz with one gap of 0.31 s (the last sample at 1.99)
    events = _simulate(sup, arrivals, 4.0)
    fades = _kinds(events, "fade")
    assert not _kinds(events, "hand_over") and sup.handovers == 0 and not sup.released
    assert sup.stale_events == 1 and sup.late_samples == 1 and sup.max_gap == pytest.approx(0.31)
    # the fade: from the deadline (95 ms after the last sample) on, one command per state period, falling
    times = [t for t, _, _ in fades]
    assert times[0] == pytest.approx(1.99 + 0.095 + 0.01)
    assert np.allclose(np.diff(times), 0.01) and times[-1] < 2.3
    scales = [x for _, _, x in fades]
    assert all(0.0 < x < 1.0 for x in scales) and np.all(np.diff(scales) < 0)
    # back: the ramp continues from where the fade got to (no restart from zero), at the ramp-in rate
    back = next(e for e in events if e[0] >= 2.3 and e[1] == "answer")
    assert back[2] == pytest.approx(scales[-1], abs=0.03) and back[2] > 0.5
    assert sup.state == CompensationState.ACTIVE and sup.scale == 1.0
    assert sup.stale_for(4.0) is None


def test_a_long_outage_hands_over_exactly_once_and_recovery_needs_resume_after():
    sup = CompensationSupervisor(SupervisorSettings(ramp_in_time=0.2, fade_out_time=0.5, stale_periods=10.0,
                                                    handover_after=1.0, resume_after=1.0))
    arrivals = _stream(0.0, 1.0) + _stream(4.0, 4.5) + _stream(4.7, 7.0)  # 3 s outage, then a late sample
    events = _simulate(sup, arrivals, 7.0)
    hand_overs = _kinds(events, "hand_over")
    assert len(hand_overs) == 1 and sup.handovers == 1
    assert hand_overs[0][0] == pytest.approx(0.99 + 1.0)  # handover_after after the last sample
    fades = [e for e in _kinds(events, "fade") if e[0] < 4.0]
    assert fades[-1][2] == 0.0 and all(x > 0.0 for _, _, x in fades[:-1])  # exactly 0 N m last
    assert fades[-1][0] == pytest.approx(0.99 + 0.095 + 0.5, abs=0.011)  # faded over fade_out_time
    assert not [e for e in events if hand_overs[0][0] < e[0] < 4.0]  # nothing while handed over
    # the state comes back at 4.0 with a gap at 4.5-4.7: resume_after counts from the last late sample
    waits = _kinds(events, "wait")
    answers_after = [e for e in _kinds(events, "answer") if e[0] >= 4.0]
    assert waits[0][0] == 4.0 and answers_after[0][0] == pytest.approx(4.7 + 1.0)
    assert answers_after[0][2] == 0.0  # ramps in from zero
    # (4.5-4.7: late, but not commanding: no stale event)
    assert sup.late_samples == 2 and sup.stale_events == 1 and sup.max_gap == pytest.approx(3.01)
    assert not sup.released and sup.state == CompensationState.ACTIVE


def test_a_hand_over_waits_for_the_fade_and_a_short_stall_while_holding_resumes_without_one():
    """handover_after shorter than the fade: the hand-over comes at the end of the fade (0 N m first); a sample
    after the fade but before handover_after resumes at once from zero, flag kept."""
    sup = CompensationSupervisor(SupervisorSettings(ramp_in_time=0.2, fade_out_time=0.5, stale_periods=10.0,
                                                    handover_after=0.2))
    events = _simulate(sup, _stream(0.0, 1.0), 3.0)
    (hand_over,) = _kinds(events, "hand_over")
    last_fade = _kinds(events, "fade")[-1]
    assert last_fade[2] == 0.0 and hand_over[0] == last_fade[0]
    sup = CompensationSupervisor(SupervisorSettings(ramp_in_time=0.2, fade_out_time=0.3, stale_periods=10.0,
                                                    handover_after=1.0))
    events = _simulate(sup, _stream(0.0, 1.0) + _stream(1.7, 2.5), 2.5)
    assert not _kinds(events, "hand_over") and _kinds(events, "fade")[-1][2] == 0.0
    back = next(e for e in events if e[0] >= 1.7)
    assert back[1] == "answer" and back[2] == 0.0 and sup.state == CompensationState.ACTIVE


def test_the_final_fade_answers_samples_at_the_falling_scale_and_paces_itself_without_them():
    sup = CompensationSupervisor(SupervisorSettings(ramp_in_time=0.0, fade_out_time=0.5))
    _simulate(sup, _stream(0.0, 1.0), 1.0)
    assert sup.begin_final_fade(1.0) and sup.state == CompensationState.FADING_OUT and sup.final
    assert sup.deadline() == pytest.approx(0.015)  # the watchdog fills in at the state's rate
    assert sup.on_state(1.1, 1.1) == pytest.approx(0.8)  # a sample: no ramp back in
    tick = sup.tick(1.2)
    assert tick.command and not tick.hand_over and tick.next_in == pytest.approx(0.01)
    assert sup.scale == pytest.approx(0.6)
    assert sup.tick(1.6) == (True, False, None) and sup.scale == 0.0 and sup.state == CompensationState.STOPPED
    assert sup.stale_events == 0 and sup.handovers == 0
    stopped = CompensationSupervisor(SupervisorSettings())
    assert not stopped.begin_final_fade(0.0)  # nothing to fade


def test_a_gap_while_the_arm_was_not_ready_is_no_late_sample_and_resume_after_counts_from_ready():
    sup = CompensationSupervisor(SupervisorSettings(ramp_in_time=0.0, resume_after=1.0))
    _simulate(sup, _stream(0.0, 1.0), 1.0)
    sup.interrupt()
    sup.stop()
    sup.release()  # the node hands the flag back when the arm stops being ready
    assert sup.handovers == 1 and not sup.may_resume(5.0)
    sup.on_sample(5.0, 5.0)
    assert sup.late_samples == 0 and sup.max_gap < 0.011
    assert not sup.may_resume(5.9) and sup.resume_in(5.9) == pytest.approx(0.1)
    assert sup.may_resume(6.0)
    assert sup.command(6.0, 6.0) == 1.0 and not sup.released


def test_a_fade_for_a_reason_other_than_staleness_is_not_a_stale_event_and_stop_is_at_once():
    sup = CompensationSupervisor(SupervisorSettings(ramp_in_time=0.0, fade_out_time=0.5))
    _feed(sup, [10.0 + 0.005 * k for k in range(10)])
    assert sup.begin_final_fade(10.05) and sup.state == CompensationState.FADING_OUT and sup.stale_events == 0
    sup.stop()
    assert (sup.state, sup.scale) == (CompensationState.STOPPED, 0.0)
    assert sup.tick(11.0) == (False, False, None)
    assert not sup.is_stale(1e9)  # stopped: nothing to watch


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
    ({"handover_after": -1.0}, "handover_after -1.0"),
    ({"resume_after": -0.5}, "resume_after -0.5"),
])
def test_settings_the_watchdog_cannot_work_with_are_refused(settings, message):
    from dvrk_ident_ros.errors import DvrkIdentError

    with pytest.raises(DvrkIdentError, match=message):
        SupervisorSettings(**settings)


def test_health_levels_ok_when_compensating_warn_when_fading_or_clamped_error_when_an_outage_stopped_it():
    h = compensation_health("MTML", CompensationState.ACTIVE, 1.0)
    assert h.level == OK and h.message == "compensating MTML"
    h = compensation_health("MTML", CompensationState.RAMP_IN, 0.25)
    assert h.level == OK and "ramp-in" in h.message
    h = compensation_health("MTML", CompensationState.ACTIVE, 1.0, saturated=["wrist_pitch"])
    assert h.level == WARN and "wrist_pitch" in h.message
    h = compensation_health("MTML", CompensationState.FADING_OUT, 0.6, stale_for=0.2)
    assert h.level == WARN and "200 ms" in h.message and "fading" in h.message
    assert compensation_health("MTML", CompensationState.FADING_OUT, 0.6, final=True).level == WARN
    h = compensation_health("MTML", CompensationState.STOPPED, 0.0, stale_for=2.5, handed_over=True)
    assert h.level == ERROR and "2.5 s" in h.message and "handed back" in h.message
    assert compensation_health("MTML", CompensationState.STOPPED, 0.0, stale_for=0.7).level == ERROR
    h = compensation_health("MTML", CompensationState.STOPPED, 0.0, idle_reason="MTML is DISABLED", idle_expected=True)
    assert h.level == OK and "MTML is DISABLED" in h.message
    h = compensation_health("MTML", CompensationState.STOPPED, 0.0,
                            idle_reason="nothing subscribes use_gravity_compensation")
    assert h.level == WARN and "nothing subscribes" in h.message
