"""The gravity_compensation node across processes: one servo_jf per measured_js (same stamp),
ramp-in, rejected samples, the steady-clock watchdog's fade-out, the hand-over at exit, bad starts."""
from __future__ import annotations

import math
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from helpers.processes import output_of, running
from helpers.ros_probe import Probe

from dvrk_ident_ros.gc.law import CompensationLaw
from dvrk_ident_ros.gc.params import GcParameters

ARM = "MTML"
MEASURED, SERVO_JF, BUILTIN = f"/{ARM}/measured_js", f"/{ARM}/servo_jf", f"/{ARM}/use_gravity_compensation"
DIAGNOSTICS = "/gravity_compensation/diagnostics"
NAMES = ["outer_yaw", "shoulder_pitch", "elbow_pitch", "wrist_platform", "wrist_pitch", "wrist_yaw", "wrist_roll"]
STAMP_BASE = 1000  # s: the test's measured_js stamps start here, far from the node's wall-clock stamps
STAMP_STEP = 5_000_000  # ns between two test stamps
RAMP_IN, ACTIVE, FADING_OUT, STOPPED = 0, 1, 2, 3  # GravityCompensationDiagnostics.STATE_*


def _gc_file(tmp_path, spread: float = 0.02, seed: int = 1) -> tuple[str, GcParameters]:
    """A synthetic MTML gc file: small parameters (torques well inside +-1 N m) or, with a larger
    ``spread``, some torques beyond the limits so that the clamp shows."""
    rng = np.random.default_rng(seed)
    theta_pos = rng.normal(0.0, spread, 40)
    theta_neg = theta_pos.copy()
    theta_neg[10:] += rng.normal(0.0, spread / 2, 30)  # direction-dependent polynomials, shared gravity
    params = GcParameters(arm=ARM, serial="test", theta_pos=theta_pos, theta_neg=theta_neg,
                          upper_limit=np.array([1.0] * 7), lower_limit=np.array([-1.0] * 7))
    path = tmp_path / f"gc-{ARM}-test.json"
    params.save(path)
    return str(path), params


def _gc_node(parameter_file: str, *params: str, arm: str = ARM) -> list[str]:
    cmd = [sys.executable, "-m", "dvrk_ident_ros.nodes.gravity_compensation", "--ros-args", "-p", f"arm:={arm}",
           "-p", f"parameter_file:={parameter_file}"]
    for p in params:
        cmd += ["-p", p]
    return cmd


def _stamp_key(stamp) -> int:
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def _stamp(k: int):
    from builtin_interfaces.msg import Time

    ns = STAMP_BASE * 1_000_000_000 + k * STAMP_STEP
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def _state(k: int, q, qd):
    from sensor_msgs.msg import JointState

    msg = JointState(name=NAMES[:len(q)], position=[float(x) for x in q], velocity=[float(x) for x in qd])
    msg.header.stamp = _stamp(k)
    return msg


class _Harness:
    """The test's side: measured_js out; servo_jf, use_gravity_compensation (and diagnostics) in."""

    def __init__(self, rclpy_context, name: str, diagnostics: bool = False):
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Bool

        from dvrk_ident.msg import GravityCompensationDiagnostics
        from dvrk_ident_ros.nodes.common import STATE_QOS

        self.probe = Probe(rclpy_context, name)
        self.measured = self.probe.node.create_publisher(JointState, MEASURED, STATE_QOS)
        self.servo_jf = self.probe.collect(JointState, SERVO_JF)
        self.builtin = self.probe.collect(Bool, BUILTIN)
        self.diagnostics = self.probe.collect(GravityCompensationDiagnostics, DIAGNOSTICS) if diagnostics else None

    def wait_ready(self, proc) -> None:
        topics = [SERVO_JF, BUILTIN] + ([DIAGNOSTICS] if self.diagnostics is not None else [])
        assert self.probe.wait_for_graph(proc, publishers=topics, subscribers=[self.measured]), \
            f"the node did not come up:\n{output_of(proc)}"

    def stream(self, messages, rate: float, on_sent=None) -> list[float]:
        """Publish ``messages`` at ``rate`` Hz, spinning in between; the wall time (time.time()) of each."""
        sent = []
        start = time.monotonic()
        for k, msg in enumerate(messages):
            self.measured.publish(msg)
            sent.append(time.time())
            if on_sent is not None:
                on_sent(k)
            deadline = start + (k + 1) / rate
            while (remaining := deadline - time.monotonic()) > 0:
                self.probe.executor.spin_once(timeout_sec=remaining)
        return sent

    def answers(self) -> dict[int, list]:
        """servo_jf messages by stamp (the node stamps each answer with the sample's stamp)."""
        out: dict[int, list] = {}
        for _, msg in self.servo_jf:
            out.setdefault(_stamp_key(msg.header.stamp), []).append(msg)
        return out

    def close(self) -> None:
        self.probe.close()


@pytest.mark.ros
def test_every_sample_is_answered_once_with_its_stamp(ros_env, rclpy_context, tmp_path):
    path, params = _gc_file(tmp_path, spread=0.1)  # big enough that the clamp at +-1 N m shows
    law = CompensationLaw(params)
    rng = np.random.default_rng(7)
    count = 300
    q = rng.uniform(-0.6, 0.6, (count, 7))
    qd = rng.uniform(-0.3, 0.3, (count, 7))  # across the dead band and the saturation of the blend
    expected = {_stamp_key(_stamp(k)): list(law.compute(q[k], qd[k], 1.0)) for k in range(count)}
    h = _Harness(rclpy_context, "gc_test_answers")
    with running(_gc_node(path, "ramp_in_time:=0.0"), ros_env) as proc:
        h.wait_ready(proc)
        assert not h.builtin, "use_gravity_compensation was sent before any state arrived"
        h.stream([_state(k, q[k], qd[k]) for k in range(count)], rate=300.0)
        assert h.probe.spin_until(lambda: len(set(h.answers()) & set(expected)) == count, 10.0, proc), \
            f"{len(set(h.answers()) & set(expected))} of {count} samples answered"
        h.probe.spin_for(0.1)
        assert proc.poll() is None, output_of(proc)
    answers = h.answers()
    h.close()
    for key, effort in expected.items():
        assert len(answers[key]) == 1, f"stamp {key}: {len(answers[key])} servo_jf"
        sent = np.array(answers[key][0].effort)
        assert sent.shape == (7,) and np.all(np.isfinite(sent))
        assert np.all(sent <= params.upper_limit) and np.all(sent >= params.lower_limit)
        assert np.allclose(sent, effort, atol=1e-9), (key, sent, effort)
    clamped = np.abs(np.array(list(expected.values()))) == 1.0
    assert clamped.any() and not clamped.all(), "the test's parameters should make some (not all) torques clamp"
    # the answers stamped with the node's own clock (watchdog fade-out after a hiccup of this process) aside,
    # nothing else was sent
    assert all(key >= 10**18 for key in set(answers) - set(expected)), "servo_jf with a stamp nobody sent"
    assert h.builtin and h.builtin[0][1].data is False, [m.data for _, m in h.builtin]
    first_answer = min(t for t, m in h.servo_jf if _stamp_key(m.header.stamp) in expected)
    assert h.builtin[0][0] <= first_answer + 0.5, "use_gravity_compensation false came late"


@pytest.mark.ros
def test_ramp_in(ros_env, rclpy_context, tmp_path):
    path, params = _gc_file(tmp_path)
    q, qd = np.array([0.1, 0.3, -0.2, 0.4, -0.3, 0.2, 0.0]), np.zeros(7)
    full = np.array(CompensationLaw(params).compute(q, qd, 1.0))
    assert np.all(np.abs(full) < 1.0) and np.max(np.abs(full)) > 0.1  # unclamped, large enough to see
    count = 300  # 1.5 s of stamps at 5 ms: the 1 s ramp and then full compensation
    h = _Harness(rclpy_context, "gc_test_ramp", diagnostics=True)
    with running(_gc_node(path, "ramp_in_time:=1.0"), ros_env) as proc:
        h.wait_ready(proc)
        h.stream([_state(k, q, qd) for k in range(count)], rate=200.0)
        keys = {_stamp_key(_stamp(k)) for k in range(count)}

        def complete() -> bool:
            return keys <= set(h.answers()) and keys <= {_stamp_key(d.header.stamp) for _, d in h.diagnostics}

        assert h.probe.spin_until(complete, 10.0, proc), output_of(proc)
    answers = h.answers()
    diagnostics = {_stamp_key(d.header.stamp): d for _, d in h.diagnostics}
    h.close()
    scales = np.array([diagnostics[_stamp_key(_stamp(k))].ramp_scale for k in range(count)])
    states = [diagnostics[_stamp_key(_stamp(k))].state for k in range(count)]
    efforts = np.array([answers[_stamp_key(_stamp(k))][0].effort for k in range(count)])
    assert scales[0] < 0.02 and states[0] == RAMP_IN
    assert scales[-1] == 1.0 and states[-1] == ACTIVE
    # rising with the stamps (1 s of stamps = 200 samples); a dip after a scheduling hiccup of this
    # process (watchdog fade-out for a few ms, then the ramp continues) stays small
    assert np.all(np.diff(scales) > -0.05), np.diff(scales).min()
    nominal = np.minimum(1.0, np.arange(count) * STAMP_STEP * 1e-9 / 1.0)
    assert np.max(np.abs(scales - nominal)) < 0.1
    first_active = states.index(ACTIVE)
    assert set(states[:first_active]) == {RAMP_IN} and 180 <= first_active <= 230, first_active
    # the torques are the full torques times the scale
    assert np.allclose(efforts, scales[:, None] * full, atol=1e-9)
    assert np.all(np.abs(efforts[:20]) <= 0.1 * np.abs(full) + 1e-12), "early torques not a small fraction"
    assert np.allclose(efforts[-1], full, atol=1e-12)
    d = diagnostics[_stamp_key(_stamp(count - 1))]
    assert (d.model_kind, d.parameter_source) == ("mlse", path)
    assert np.allclose(d.total_torque, full) and not any(d.saturated) and d.compute_time < 0.01


@pytest.mark.ros
def test_bad_samples_are_rejected_and_the_node_lives_on(ros_env, rclpy_context, tmp_path):
    path, _ = _gc_file(tmp_path)
    rng = np.random.default_rng(3)
    count = 480
    q, qd = rng.uniform(-0.3, 0.3, 7), np.zeros(7)
    nan_q = q.copy()
    nan_q[0] = math.nan
    # three faulty samples, sent in addition to the valid stream (the valid rate stays regular, so the
    # watchdog sees no gap), more than 1 s apart so that each gets its own (throttled) warning
    faulty = {20: _state(10_000, nan_q, qd), 250: _state(10_001, q[:6], qd[:6]),
              470: _state(10_002, q, np.zeros(8))}
    h = _Harness(rclpy_context, "gc_test_faults")
    with running(_gc_node(path, "ramp_in_time:=0.0"), ros_env) as proc:
        h.wait_ready(proc)
        h.stream([_state(k, q, qd) for k in range(count)], rate=200.0,
                 on_sent=lambda k: h.measured.publish(faulty[k]) if k in faulty else None)
        valid = {_stamp_key(_stamp(k)) for k in range(count)}
        assert h.probe.spin_until(lambda: valid <= set(h.answers()), 10.0, proc), \
            f"{len(valid & set(h.answers()))} of {count} valid samples answered:\n{output_of(proc)}"
        h.probe.spin_for(0.2)
        assert proc.poll() is None, output_of(proc)
    out = output_of(proc)
    answers = h.answers()
    h.close()
    assert not {_stamp_key(m.header.stamp) for m in faulty.values()} & set(answers), "a faulty sample was answered"
    assert all(len(answers[key]) == 1 for key in valid)
    for reason in ("position[0] is nan", "6 positions, expected 7", "8 velocities, expected 7"):
        assert "measured_js rejected" in out and reason in out, f"no warning about {reason!r}:\n{out}"
    assert f"answered {count} samples, rejected 3" in out, out
    assert proc.returncode == 0, out


@pytest.mark.ros
def test_watchdog_fades_out_and_hands_over(ros_env, rclpy_context, tmp_path):
    path, params = _gc_file(tmp_path)
    fade_out_time, stale_periods, rate = 0.3, 3.0, 200.0
    q, qd = np.array([0.1, 0.3, -0.2, 0.4, -0.3, 0.2, 0.0]), np.zeros(7)
    full = np.array(CompensationLaw(params).compute(q, qd, 1.0))
    count = 200
    h = _Harness(rclpy_context, "gc_test_watchdog")
    with running(_gc_node(path, "ramp_in_time:=0.0", f"fade_out_time:={fade_out_time}",
                          f"stale_periods:={stale_periods}", "fade_out_period:=0.001"), ros_env) as proc:
        h.wait_ready(proc)
        sent = h.stream([_state(k, q, qd) for k in range(count)], rate=rate)
        last_sent = sent[-1]
        assert h.probe.spin_until(lambda: any(m.data for _, m in h.builtin), 5.0, proc), \
            f"no use_gravity_compensation true after the stream stopped:\n{output_of(proc)}"
        h.probe.spin_for(0.5)
        assert proc.poll() is None, output_of(proc)
    out = output_of(proc)
    ours = {_stamp_key(_stamp(k)) for k in range(count)}
    # the fade-out ends with one all-zero command, published before the hand-over (the two topics may
    # arrive here in either order): nothing may follow it
    final = next((i for i, (_, m) in enumerate(h.servo_jf) if _stamp_key(m.header.stamp) not in ours
                  and all(e == 0.0 for e in m.effort)), len(h.servo_jf))
    after_stop = h.servo_jf[final + 1:]
    h.close()
    # the watchdog's commands carry the node's wall-clock stamp; those before the last sample was sent
    # would be a fade-out after a hiccup of this process, with the stream still running
    fade = [m for _, m in h.servo_jf if _stamp_key(m.header.stamp) not in ours
            and _stamp_key(m.header.stamp) * 1e-9 > last_sent]
    assert fade, f"no fade-out commands:\n{out}"
    fade_times = np.array([_stamp_key(m.header.stamp) * 1e-9 for m in fade])
    engagement = fade_times[0] - last_sent
    print(f"\nwatchdog engagement: {1e3 * engagement:.1f} ms after the last sample was sent "
          f"(nominal {1e3 * (stale_periods - 1) / rate:.0f}-{1e3 * stale_periods / rate:.0f} ms); "
          f"fade-out {1e3 * (fade_times[-1] - fade_times[0]):.0f} ms over {len(fade)} commands")
    assert 0.8 * (stale_periods - 1) / rate <= engagement < 0.05, f"engagement after {1e3 * engagement:.1f} ms"
    efforts = np.array([m.effort for m in fade])
    assert efforts.shape[1] == 7 and np.all(np.isfinite(efforts))
    magnitude = np.abs(efforts) @ np.abs(full) / (full @ full)  # the scale the torques carry
    assert magnitude[0] > 0.8, "the fade-out does not start from the full torques"
    assert np.all(np.diff(magnitude) <= 1e-12), "the torques do not fall monotonically"
    assert np.allclose(efforts, magnitude[:, None] * full, atol=1e-9), "the fade-out scales the last torques"
    assert np.all(efforts[-1] == 0.0), efforts[-1]
    assert not np.any(np.all(efforts[:-1] == 0.0, axis=1)), "zero commands before the end of the fade-out"
    duration = fade_times[-1] - fade_times[0]
    assert 0.8 * fade_out_time <= duration <= fade_out_time + 0.15, f"fade-out took {duration:.3f} s"
    assert [m.data for _, m in h.builtin] == [False, True]
    assert not after_stop, f"{len(after_stop)} servo_jf after the hand-over"
    assert "stale" in out and "fading out" in out and "compensation stopped" in out, out


@pytest.mark.ros
def test_diagnostics_report_the_fade_out(ros_env, rclpy_context, tmp_path):
    path, _ = _gc_file(tmp_path)
    q, qd = np.array([0.1, 0.3, -0.2, 0.4, -0.3, 0.2, 0.0]), np.zeros(7)
    h = _Harness(rclpy_context, "gc_test_diagnostics", diagnostics=True)
    with running(_gc_node(path, "ramp_in_time:=0.0", "fade_out_time:=0.2"), ros_env) as proc:
        h.wait_ready(proc)
        h.stream([_state(k, q, qd) for k in range(100)], rate=200.0)
        assert h.probe.spin_until(lambda: any(m.data for _, m in h.builtin), 5.0, proc), output_of(proc)
        h.probe.spin_until(lambda: any(d.state == STOPPED for _, d in h.diagnostics), 1.0, proc)
    states = [d.state for _, d in h.diagnostics]
    h.close()
    assert FADING_OUT in states and states[-1] == STOPPED, sorted(set(states))


def _interrupted(ros_env, rclpy_context, tmp_path, name: str, signal_at: int | None, count: int):
    """Stream ``count`` samples at 200 Hz, SIGINT the node after sample ``signal_at`` (None: once all are
    answered); check the hand-over and return the process and its output."""
    path, _ = _gc_file(tmp_path)
    q, qd = np.array([0.1, 0.3, -0.2, 0.4, -0.3, 0.2, 0.0]), np.zeros(7)
    h = _Harness(rclpy_context, name)
    with running(_gc_node(path, "ramp_in_time:=0.0"), ros_env) as proc:
        h.wait_ready(proc)
        h.stream([_state(k, q, qd) for k in range(count)], rate=200.0,
                 on_sent=lambda k: proc.send_signal(signal.SIGINT) if k == signal_at else None)
        if signal_at is None:  # every sample answered, then SIGINT: the node is fading out when it is told to stop
            keys = {_stamp_key(_stamp(k)) for k in range(count)}
            assert h.probe.spin_until(lambda: keys <= set(h.answers()), 5.0, proc), output_of(proc)
            proc.send_signal(signal.SIGINT)
        assert h.probe.spin_until(lambda: proc.poll() is not None, 10.0), "the node did not exit on SIGINT"
        h.probe.spin_for(0.3)
    out = output_of(proc)
    h.close()
    assert h.servo_jf, out
    last = h.servo_jf[-1][1]
    assert list(last.effort) == [0.0] * 7, f"the last servo_jf is not a zero effort: {list(last.effort)}\n{out}"
    answered = sum(1 for _, m in h.servo_jf if _stamp_key(m.header.stamp) < 10**18 and any(m.effort))
    assert answered >= (count if signal_at is None else signal_at) - 5, f"only {answered} samples answered"
    assert h.builtin and h.builtin[-1][1].data is True, [m.data for _, m in h.builtin]
    assert h.builtin[-1][0] >= h.servo_jf[-1][0] - 0.05  # the hand-over follows the zero command
    assert "exit: answered" in out, out
    return proc, out


@pytest.mark.ros
def test_sigint_sends_zero_effort_and_hands_over(ros_env, rclpy_context, tmp_path):
    # the arm's state stopped a moment ago (every sample answered): the node is fading out
    proc, out = _interrupted(ros_env, rclpy_context, tmp_path, "gc_test_exit", signal_at=None, count=100)
    assert proc.returncode == 0, out
    assert "Traceback" not in out, out


@pytest.mark.ros
def test_sigint_while_the_state_streams(ros_env, rclpy_context, tmp_path):
    # Ctrl-C while the dVRK keeps publishing: the hand-over must happen and the exit be clean
    proc, out = _interrupted(ros_env, rclpy_context, tmp_path, "gc_test_exit_streaming", signal_at=100, count=200)
    assert proc.returncode == 0, out
    assert "Traceback" not in out, out


@pytest.mark.ros
def test_bad_start_exits_with_status_2(ros_env, tmp_path):
    path, _ = _gc_file(tmp_path)
    truncated = tmp_path / "identified.json"
    truncated.write_text('{"format": "dvrk_ident.parameters/1", "arm": "mtm"}')
    for params, arm, extra, message in [
            (str(tmp_path / "missing.json"), ARM, [], "missing.json: cannot read"),
            (path, "MTMX", [], "unknown arm 'MTMX'"),
            (path, "MTMR", [], "gc parameters of MTML"),
            (str(truncated), ARM, [], "parameter file without description_hash"),
            (path, ARM, ["stale_periods:=1.0"], "stale_periods 1.0: expected more than 1 period")]:
        proc = subprocess.run(_gc_node(params, *extra, arm=arm), env=ros_env, capture_output=True, text=True,
                              timeout=30)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 2, out
        errors = [line for line in out.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and message in errors[0], out
        assert "Traceback" not in out, out


@pytest.mark.ros
def test_no_command_until_the_builtin_compensation_can_be_turned_off(ros_env, rclpy_context, tmp_path):
    """With nothing subscribed to use_gravity_compensation the 'off' would be lost and the arm would get its
    gravity twice: the node waits (and says so); once the arm's subscriber appears, 'off' is sent first."""
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Bool

    from dvrk_ident_ros.nodes.common import STATE_QOS

    path, _ = _gc_file(tmp_path)
    q, qd = np.array([0.1, 0.3, -0.2, 0.4, -0.3, 0.2, 0.0]), np.zeros(7)
    probe = Probe(rclpy_context, "gc_test_no_builtin_subscriber")
    measured = probe.node.create_publisher(JointState, MEASURED, STATE_QOS)
    servo_jf = probe.collect(JointState, SERVO_JF)
    with running(_gc_node(path, "ramp_in_time:=0.0"), ros_env) as proc:
        assert probe.wait_for_graph(proc, publishers=[SERVO_JF], subscribers=[measured]), output_of(proc)
        for k in range(100):
            measured.publish(_state(k, q, qd))
            probe.spin_for(0.005)
        probe.spin_for(0.2)
        assert not servo_jf, f"{len(servo_jf)} commands with the dVRK's compensation possibly on"
        builtin = probe.collect(Bool, BUILTIN)
        assert probe.wait_for_graph(proc, publishers=[BUILTIN]), output_of(proc)
        k = 100
        while not servo_jf and k < 400:
            measured.publish(_state(k, q, qd))
            probe.spin_for(0.005)
            k += 1
        probe.spin_for(0.1)
        assert servo_jf, output_of(proc)
        # sent before the first command (two topics: they may arrive in either order)
        assert builtin and builtin[0][1].data is False and abs(builtin[0][0] - servo_jf[0][0]) < 0.5, builtin
    out = output_of(proc)
    probe.close()
    assert "nothing subscribes /MTML/use_gravity_compensation: not commanding" in out, out
