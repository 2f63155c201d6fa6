"""The public interfaces work across processes (issue: package foundation)."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from helpers.processes import output_of, running

from dvrk_ident_ros.arm.player_phase import PlayerPhase
from dvrk_ident_ros.gc.runtime.supervisor import CompensationState

pytestmark = pytest.mark.ros
HELPERS = Path(__file__).parent / "helpers"


def test_custom_message_crosses_processes(ros_env, rclpy_context):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from dvrk_ident.msg import GravityCompensationDiagnostics

    received: list[GravityCompensationDiagnostics] = []
    node = rclpy.create_node("diagnostics_test_listener", context=rclpy_context)
    node.create_subscription(GravityCompensationDiagnostics, "/test/gc_diagnostics", received.append, 10)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    with running([sys.executable, str(HELPERS / "diagnostics_publisher.py")], ros_env) as proc:
        deadline = time.monotonic() + 20.0
        while len(received) < 3 and time.monotonic() < deadline and proc.poll() is None:
            executor.spin_once(timeout_sec=0.1)
    node.destroy_node()
    assert len(received) >= 3, f"no diagnostics received; publisher said:\n{output_of(proc)}"
    msg = received[-1]
    seq = int(msg.header.frame_id.removeprefix("seq"))
    assert list(msg.name) == [f"j{i}" for i in range(7)]
    assert list(msg.gravity_torque) == pytest.approx([0.1 * i + seq for i in range(7)])
    assert list(msg.total_torque) == pytest.approx([0.1 * i + seq - 0.01 * i for i in range(7)])
    assert list(msg.saturated) == [i == 3 for i in range(7)]
    assert msg.state == CompensationState.ACTIVE
    assert (msg.parameter_source, msg.model_kind) == ("gc-MTML-00000.json", "mlse")


def test_identify_service_across_processes(ros_env, rclpy_context):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from dvrk_ident.srv import Identify

    node = rclpy.create_node("identify_test_client", context=rclpy_context)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    client = node.create_client(Identify, "/identify")
    with running([sys.executable, str(HELPERS / "identify_test_server.py")], ros_env) as proc:
        assert client.wait_for_service(timeout_sec=20.0), f"/identify never appeared:\n{output_of(proc)}"
        request = Identify.Request(
            arm="psm", method="sdp", data_files=["a.bag", "b.bag", "c.bag"], data_format="bag",
            output_directory="/tmp/out",
        )
        future = client.call_async(request)
        executor.spin_until_future_complete(future, timeout_sec=20.0)
        bad = client.call_async(Identify.Request(arm="psm", method="nonsense"))
        executor.spin_until_future_complete(bad, timeout_sec=20.0)
    node.destroy_node()
    response = future.result()
    assert response is not None, "no response from /identify"
    assert response.success
    assert response.message == "psm/sdp/bag/3"
    assert response.result_file == "/tmp/out/params.yaml"
    assert list(response.relative_error) == pytest.approx([0.1, 0.2, 0.3])
    assert list(response.parameter_names) == ["m1", "L1xx"]
    assert list(response.parameter_values) == pytest.approx([1.5, -2.25])
    assert response.solver_status == "optimal"
    assert [(t.stage, t.seconds) for t in response.timings] == [("solve", 0.125)]
    assert bad.result() is not None and not bad.result().success


def test_named_states_are_the_message_constants():
    """PlayerPhase is PlayerStatus.PHASE_*, CompensationState is GravityCompensationDiagnostics.STATE_*: every
    member's value, no constant without a member and no member without a constant."""
    pytest.importorskip("rclpy")
    from dvrk_ident.msg import GravityCompensationDiagnostics, PlayerStatus

    for states, message, prefix in ((PlayerPhase, PlayerStatus, "PHASE_"),
                                    (CompensationState, GravityCompensationDiagnostics, "STATE_")):
        constants = {name.removeprefix(prefix): getattr(message, name)
                     for name in vars(type(message)) if name.startswith(prefix)}  # the generated class's constants
        assert constants == {member.name: member.value for member in states}, message.__name__


def test_action_and_status_messages_carry_what_the_nodes_send():
    """What the player, the recorder and the compensation put in their messages (every field they set, at the
    edges of its range: each phase and state, a negative sweep direction, a large count) comes back unchanged
    from the wire; a field that is missing or too narrow fails here."""
    pytest.importorskip("rclpy")
    from rclpy.serialization import deserialize_message, serialize_message

    from dvrk_ident.action import PlayTrajectory
    from dvrk_ident.msg import GravityCompensationDiagnostics, PlayerStatus, RecorderStatus

    result = PlayTrajectory.Result
    sent = [
        PlayTrajectory.Goal(trajectory_file="t.yaml", arm="PSM1", bag_path="b", speed_scale=0.5),
        result(outcome=result.OUTCOME_ARM_NOT_READY, message="MTML is DISABLED", bag_path="b", duration=2.5,
               max_tracking_error=0.02, commands_sent=2**31),
        RecorderStatus(recording=False, bag_path="b-FAILED", topics=["/PSM1/measured_js", "/PSM1/setpoint_js"],
                       message_counts=[2**40, 7], invalid_counts=[3, 0], gap_count=1, max_gap=0.25,
                       operating_state="ENABLED, homed", outcome="failed"),
    ]
    for phase in PlayerPhase:
        sent.append(PlayTrajectory.Feedback(progress=0.5, elapsed=1.25, phase=phase, pose_index=3, pose_count=9,
                                            max_tracking_error=0.02, tracking_error=[0.01, 0.02, 0.0]))
        sent.append(PlayerStatus(arm="PSM1", trajectory_file="t.yaml", phase=phase, progress=1.0, pose_index=3,
                                 pose_count=9, direction=-1))
    for state in CompensationState:
        sent.append(GravityCompensationDiagnostics(name=["j1", "j2"], total_torque=[0.5, -0.25],
                                                   saturated=[False, True], state=state, ramp_scale=0.5,
                                                   model_kind="dynamic", late_samples=2**31, max_gap=0.1))
    for msg in sent:
        back = deserialize_message(serialize_message(msg), type(msg))
        assert back == msg, msg
    assert [m.phase for m in sent if isinstance(m, PlayerStatus)] == list(PlayerPhase)
    outcomes = [getattr(result, name) for name in vars(type(result)) if name.startswith("OUTCOME_")]
    assert len(outcomes) == 7 and len(set(outcomes)) == len(outcomes)  # each outcome tells the client one thing


def test_nodes_fall_back_to_the_single_threaded_executor_without_the_events_executor(rclpy_context):
    """rclpy on Humble has no EventsExecutor: the nodes still run (with a warning), on the node's context."""
    from unittest import mock

    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from dvrk_ident_ros.ros.process import _events_executor

    node = rclpy.create_node("fallback_check", context=rclpy_context)
    try:
        with mock.patch.dict(sys.modules, {"rclpy.experimental": None}), \
                mock.patch.object(node, "get_logger") as logger:
            executor = _events_executor(node)
        assert isinstance(executor, SingleThreadedExecutor)
        assert executor.context is rclpy_context
        assert "SingleThreadedExecutor" in logger.return_value.warning.call_args[0][0]
        executor.shutdown()
    finally:
        node.destroy_node()
