"""The take-over's checks (ROS-free): when a stopped compensation may take a ready arm, what it waits for and
says, when it turns the dVRK's own compensation off, as the node runs them on every valid sample at 100 Hz."""
from __future__ import annotations

from dvrk_ident_ros.gc.runtime.supervisor import BuiltinCompensation, CompensationSupervisor, SupervisorSettings
from dvrk_ident_ros.gc.runtime.takeover import (
    HANDOVER_SETTLE,
    NO_READINGS_AFTER,
    REPEAT_OFF_EVERY,
    SWITCH_OFF_TIME,
    Decision,
    TakeOverGate,
)

PERIOD = 0.01


class _Graph:
    """The ROS graph as the gate asks it, counting the questions."""

    def __init__(self, subscribed: bool = True, published: bool = True):
        self.subscribed, self.published = subscribed, published
        self.asked = {"flag": 0, "readings": 0}

    def flag(self) -> bool:
        self.asked["flag"] += 1
        return self.subscribed

    def readings(self) -> bool:
        self.asked["readings"] += 1
        return self.published


class _Run:
    """A gate with its supervisor and flag, and samples at 100 Hz from t = 0 as the node feeds them."""

    def __init__(self, *, disable_builtin: bool = True, has_builtin: bool = True, resume_after: float = 1.0,
                 graph: _Graph | None = None):
        self.sup = CompensationSupervisor(SupervisorSettings(resume_after=resume_after))
        self.builtin = BuiltinCompensation()
        self.gate = TakeOverGate("MTML", self.sup, self.builtin, disable_builtin=disable_builtin,
                                 has_builtin=has_builtin)
        self.graph = graph or _Graph()
        self.t = 0.0

    def sample(self, settled: bool = True) -> Decision:
        self.t += PERIOD
        self.sup.on_sample(self.t, self.t)
        return self.gate.decide(self.t, settled, self.graph.flag, self.graph.readings)

    def until(self, seconds: float, settled: bool = True) -> list[Decision]:
        return [self.sample(settled) for _ in range(round(seconds / PERIOD))]

    def reading(self, on: bool) -> bool:
        self.gate.reading_seen()
        return self.builtin.observe(on)


def test_an_arm_not_settled_is_not_taken_and_the_graph_is_not_asked():
    run = _Run()
    decisions = run.until(1.0, settled=False)
    assert all(d == Decision() for d in decisions)
    assert run.graph.asked == {"flag": 0, "readings": 0} and not run.builtin.owned


def test_nothing_subscribes_the_flag_the_node_waits_and_says_why():
    run = _Run(graph=_Graph(subscribed=False))
    run.reading(True)
    decisions = run.until(0.5)
    assert not any(d.start or d.send_off or d.take_over for d in decisions)
    assert all("nothing subscribes /MTML/use_gravity_compensation" in d.wait for d in decisions)
    assert run.graph.asked["readings"] == 0 and not run.builtin.owned
    # without disable_builtin the flag's subscriber is not asked about
    run = _Run(disable_builtin=False, graph=_Graph(subscribed=False))
    run.reading(False)
    assert run.sample().start and run.graph.asked["flag"] == 0


def test_dvrk_2_4_its_compensation_on_off_is_sent_and_repeated_the_node_starts_once_it_reads_off():
    run = _Run()
    run.reading(True)
    first = run.sample()
    assert first.take_over and first.send_off and not first.start and first.wait == ""  # off is on its way
    assert run.builtin.owned and run.builtin.found is True
    decisions = run.until(2.5)
    assert not any(d.start or d.take_over for d in decisions)
    waited = [d.wait for d in decisions if d.wait]
    assert waited and all("is on: waiting until it is off" in w for w in waited)
    switching = round(SWITCH_OFF_TIME / PERIOD)  # the arm takes a period or two: silent after each "off"
    assert not any(d.wait for d in decisions[:switching - 2]) and decisions[switching + 1].wait
    resent = [k for k, d in enumerate(decisions, 2) if d.send_off]  # sample numbers of the repeats
    assert [round(PERIOD * k, 2) for k in resent] == [round(REPEAT_OFF_EVERY * (i + 1) + PERIOD, 2)
                                                      for i in range(2)]
    assert run.reading(False) is False
    started = run.sample()
    assert started.start and not started.take_over and not started.send_off  # taken earlier: off already sent


def test_dvrk_2_3_its_compensation_off_taken_and_started_on_the_same_sample():
    run = _Run()
    run.reading(False)
    d = run.sample()
    assert d.start and d.take_over and d.send_off and run.builtin.found is False


def test_without_disable_builtin_the_node_never_sends_off_and_asks_the_person_to():
    run = _Run(disable_builtin=False)
    run.reading(True)
    decisions = run.until(2.5)
    assert decisions[0].take_over and not any(d.send_off for d in decisions)
    assert all("turn it off from the console" in d.wait for d in decisions)  # no off was sent: said at once
    run.reading(False)
    assert run.sample().start


def test_a_ready_arm_without_readings_waits_for_them_then_says_so():
    run = _Run()
    decisions = run.until(1.0)
    assert not any(d.start or d.take_over for d in decisions)
    silent = [d for d in decisions if not d.wait]
    assert len(silent) == round((NO_READINGS_AFTER + HANDOVER_SETTLE) / PERIOD)
    assert "no valid /MTML/gravity_compensation/setpoint_js while the arm is ready" in decisions[-1].wait
    assert run.graph.asked["readings"] == 1  # readable once the topic has a publisher: asked no more


def test_an_mtm_publishing_no_readings_is_warned_about_once_and_taken_a_psm_silently():
    run = _Run(graph=_Graph(published=False))
    decisions = run.until(1.0)
    started = [k for k, d in enumerate(decisions) if d.start]
    assert started and abs(started[0] - round(NO_READINGS_AFTER / PERIOD)) <= 1  # after the discovery race
    warned = [d.warn for d in decisions if d.warn]
    assert len(warned) == 1 and "publishes no /MTML/gravity_compensation/setpoint_js" in warned[0]
    assert "never turned back on" in warned[0] and decisions[started[0]].send_off
    assert run.builtin.hand_over() is None  # found unknown: nothing is published at the hand-over
    run = _Run(has_builtin=False, graph=_Graph(published=False))
    assert not any(d.warn for d in run.until(1.0))


def test_after_a_hand_over_the_gate_waits_for_fresh_state_and_a_reading_after_the_flag():
    run = _Run(resume_after=1.0)
    run.reading(False)
    assert run.sample().start
    run.builtin.hand_over()  # the node's hand-over after an outage
    run.sup.stop()
    run.sup.release()
    run.gate.flag_published(run.t)
    run.gate.not_ready()
    run.t += 2.0  # the outage: the next sample is late and freshness starts again
    run.reading(False)  # a reading from before the flag settled
    decisions = run.until(1.2)
    starts = [k for k, d in enumerate(decisions) if d.start]
    assert starts and PERIOD * (starts[0] + 1) >= 1.0, starts[:3]  # resume_after of fresh state
    waited = [d.wait for d in decisions[:starts[0]] if d.wait]
    assert waited and all("taking it again once its state has been fresh for resume_after 1 s" in w
                          for w in waited)
    assert decisions[starts[0]].take_over and decisions[starts[0]].send_off


def test_a_reading_just_after_the_hand_over_is_not_taken_as_the_arms_state():
    run = _Run(resume_after=0.0)
    run.reading(False)
    assert run.sample().start
    run.builtin.hand_over()
    run.sup.stop()
    run.sup.release()
    run.gate.flag_published(run.t)
    run.reading(False)
    decisions = run.until(0.5)
    starts = [k for k, d in enumerate(decisions) if d.start]
    assert starts and PERIOD * (starts[0] + 1) >= HANDOVER_SETTLE - 1e-9, starts[:3]


def test_yielded_to_teleoperation_the_gate_waits_silently_until_a_reading_says_off():
    run = _Run()
    run.reading(False)
    assert run.sample().start
    assert run.reading(False) is False
    assert run.reading(True) is True  # someone else turned it on: the node yields (says so itself)
    decisions = run.until(0.5)
    assert all(d == Decision() for d in decisions)
    run.reading(False)
    again = run.sample()
    assert again.start and again.take_over and again.send_off
