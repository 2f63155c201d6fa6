"""`dvrk-ident arm-check`: what a few seconds of a live arm's topics say about a lab's first run (arm/check.py,
ROS-free), then the command against the simulated arm (it only listens)."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest
from conftest import REPO_ROOT
from helpers.processes import output_of, running

from dvrk_ident_ros.arm.check import ArmObservation
from dvrk_ident_ros.arm.state import OperatingStatus

READY = OperatingStatus("ENABLED", True, False)
MTM_POSE = [0.1, 0.2, -0.3, 0.4, -0.5, 0.6, 0.7]
NAMES = ["outer_yaw", "shoulder_pitch", "elbow_pitch", "wrist_platform", "wrist_pitch", "wrist_yaw", "wrist_roll"]


def _stream(observation: ArmObservation, t0: float, seconds: float, rate: float = 100.0, offset: float = 0.004,
            repeat_after: float | None = None) -> float:
    """measured_js at ``rate``, arriving ``offset`` s after its stamp; from ``repeat_after`` s on, the last sample
    again (its stamp a few us off, as the bridge converts it). Returns the time of the last arrival."""
    k, now = 0, t0
    frozen = None
    while k / rate < seconds:
        now = t0 + k / rate
        stamp = now - offset
        position = [x + 1e-3 * k for x in MTM_POSE]
        if repeat_after is not None and k / rate >= repeat_after:
            frozen = frozen or (stamp, position)  # the first sample of the stall is still a new one
            stamp, position = frozen[0] + (k % 3 - 1) * 2e-6, frozen[1]
        sec = int(stamp)
        observation.on_measured(sec, round((stamp - sec) * 1e9), position, NAMES, now)
        k += 1
    return now


def test_a_ready_arm_at_100_hz_with_its_own_compensation_on():
    observation = ArmObservation("mtml")
    observation.on_status(READY)
    t0 = 1_795_000_000.0
    observation.on_builtin(1_795_000_000, 1, [0.2] * 7)
    end = _stream(observation, t0, 2.0)
    report = observation.report(2.0, end + 0.005)
    text = report.text()
    assert report.ready and report.reason == "" and text.startswith("MTML: ready"), text
    assert "measured_js: 200 samples in 2.0 s: 200 fresh, 100.0 Hz by its stamps" in text, text
    assert "stamps: 4.0 ms before arrival here" in text and "own gravity compensation: on" in text, text


def test_a_disabled_arm_a_stalled_loop_and_no_console_are_not_ready():
    disabled = ArmObservation("MTML")
    disabled.on_status(OperatingStatus("DISABLED", False, False))
    for k in range(50):
        disabled.on_measured(0, 0, [0.0] * 7, NAMES, 100.0 + 0.01 * k)
    report = disabled.report(0.5, 100.5)
    assert not report.ready and "DISABLED: power on and home it" in report.reason
    assert "50 with stamp 0 (invalid data" in report.text()

    stalled = ArmObservation("MTML")
    stalled.on_status(READY)
    end = _stream(stalled, 1_795_000_000.0, 2.0, repeat_after=1.0)
    report = stalled.report(2.0, end + 0.005)
    assert not report.ready and "repeats one stamp" in report.reason, report.text()
    assert "101 fresh" in report.text() and "99 repeating the last sample" in report.text(), report.text()

    silent = ArmObservation("MTML")
    report = silent.report(2.0, 10.0)
    assert not report.ready and "no /MTML/operating_state" in report.reason
    assert "measured_js: nothing heard in 2.0 s" in report.text()
    without_crtk = ArmObservation("MTML", crtk_available=False)
    assert "crtk_msgs is not installed" in without_crtk.report(2.0, 10.0).reason


def test_a_psm_without_its_tool_and_an_arm_on_another_clock():
    psm = ArmObservation("PSM1")
    psm.on_status(READY)
    for k in range(100):  # 7 raw joints: no tool engaged
        psm.on_measured(1_795_000_000, k * 10_000_000, [0.0] * 7, [], 50.0 + 0.01 * k)
    report = psm.report(1.0, 51.0)
    assert not report.ready and "7 positions" in report.reason and "tool engaged" in report.reason, report.text()
    assert "jaw/measured_js: no valid sample" in report.text()

    far = ArmObservation("MTMR")
    far.on_status(READY)
    end = _stream(far, 1_795_000_000.0, 1.0, offset=-2.5)  # stamped 2.5 s ahead of this computer's clock
    report = far.report(1.0, end + 0.005)
    assert report.ready and "stamps: 2500.0 ms ahead of this computer's clock" in report.text(), report.text()
    assert "another clock" in report.text()


def test_busy_a_slow_state_and_the_builtin_compensation_off():
    homing = ArmObservation("MTML")
    homing.on_status(OperatingStatus("ENABLED", True, True))
    end = _stream(homing, 1_795_000_000.0, 1.0, rate=20.0)
    homing.on_builtin(1_795_000_000, 1, [0.0] * 7)
    homing.on_builtin(0, 0, [0.3] * 7)  # stamp 0: no reading
    report = homing.report(1.0, end + 0.01)
    assert not report.ready and "busy" in report.reason, report.text()
    assert "20.0 Hz by its stamps (below 50 Hz" in report.text() and "own gravity compensation: off" in report.text()
    late = ArmObservation("MTML")
    late.on_status(READY)
    end = _stream(late, 1_795_000_000.0, 1.0)
    assert late.report(1.0, end + 0.15).ready and not late.report(1.0, end + 0.25).ready  # fresh within 0.2 s


def test_the_listening_window_counts_from_begin():
    observation = ArmObservation("MTML")
    observation.on_status(READY)
    _stream(observation, 1_795_000_000.0, 0.5)
    observation.begin()  # what the wait heard is not in the window
    end = _stream(observation, 1_795_000_000.5, 1.0)
    assert "measured_js: 100 samples in 1.0 s: 100 fresh" in observation.report(1.0, end + 0.005).text()


def test_unknown_arm_and_bad_duration_are_one_line_and_status_2():
    for args, message in ((["SUJ"], "unknown arm"), (["MTML", "--duration", "0"], "--duration 0"),
                          (["MTML", "--wait", "inf"], "--wait inf")):
        proc = subprocess.run([sys.executable, "-m", "dvrk_ident_ros.app.cli", "arm-check", *args], cwd=REPO_ROOT,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and message in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


@pytest.mark.ros
def test_arm_check_listens_to_the_simulated_arm_and_commands_nothing(ros_env, rclpy_context, monkeypatch):
    """The simulated PSM1, homed: ready (exit 0) with its rate and jaw. The listener creates no publisher at all
    (in process, every create_publisher recorded) and nothing reaches the arm's command topics meanwhile."""
    from helpers.ros_probe import Probe
    from rclpy.node import Node
    from sensor_msgs.msg import JointState

    from dvrk_ident_ros.ros.arm_probe import check_arm

    created: list[str] = []
    create_publisher = Node.create_publisher

    def recording(self, msg_type, topic, *args, **kwargs):
        created.append(topic)
        return create_publisher(self, msg_type, topic, *args, **kwargs)

    probe = Probe(rclpy_context, "arm_check_test")
    commands = [probe.collect(JointState, f"/PSM1/{topic}") for topic in ("servo_jp", "move_jp", "servo_jf")]
    states = probe.collect(JointState, "/PSM1/measured_js")
    sim = [sys.executable, "-m", "dvrk_ident_ros.nodes.simulated_arm", "--ros-args", "-p", "arm:=PSM1",
           "-p", "initial_state:=HOMED", "-p", "noise:=false"]
    with running(sim, ros_env) as proc:
        assert probe.spin_until(lambda: len(states) > 10, 40.0, proc), output_of(proc)
        start = time.monotonic()
        check = subprocess.run([sys.executable, "-m", "dvrk_ident_ros.app.cli", "arm-check", "psm1", "--duration",
                                "2", "--wait", "30"], cwd=REPO_ROOT, env=ros_env, capture_output=True, text=True,
                               timeout=90)
        elapsed = time.monotonic() - start
        monkeypatch.setattr(Node, "create_publisher", recording)
        in_process = check_arm("PSM1", duration=1.0, wait=30.0)
        monkeypatch.undo()
        probe.spin_for(0.2)
    probe.close()
    print(f"\n{check.stdout}(took {elapsed:.1f} s)")
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.startswith("PSM1: ready") and "Hz by its stamps" in check.stdout, check.stdout
    assert "jaw/measured_js:" in check.stdout and "no valid sample" not in check.stdout, check.stdout
    assert in_process.ready, in_process.text()
    assert set(created) <= {"/parameter_events"}, f"the listener created publishers: {created}"
    assert not any(commands), "arm-check published a command"
