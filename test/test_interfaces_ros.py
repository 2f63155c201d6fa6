"""The public interfaces work across processes (issue: package foundation)."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from helpers.processes import output_of, running

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
    assert msg.state == GravityCompensationDiagnostics.STATE_ACTIVE
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


def test_action_and_status_types_are_complete():
    """The player's action and status messages carry what the later nodes need."""
    pytest.importorskip("rclpy")
    from dvrk_ident.action import PlayTrajectory
    from dvrk_ident.msg import PlayerStatus, RecorderStatus

    goal = PlayTrajectory.Goal(trajectory_file="t.yaml", arm="PSM1", bag_path="b", speed_scale=1.0)
    feedback = PlayTrajectory.Feedback(progress=0.5, tracking_error=[0.0] * 6)
    result = PlayTrajectory.Result(outcome=PlayTrajectory.Result.OUTCOME_ABORTED_TRACKING)
    assert (goal.arm, feedback.progress, result.outcome) == ("PSM1", 0.5, 2)
    assert PlayerStatus.PHASE_SAMPLING != PlayerStatus.PHASE_SETTLING
    assert RecorderStatus().message_counts == [] or len(RecorderStatus().message_counts) == 0


def test_nodes_fall_back_to_the_single_threaded_executor_without_the_events_executor(rclpy_context):
    """rclpy on Humble has no EventsExecutor: the nodes still run (with a warning), on the node's context."""
    from unittest import mock

    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from dvrk_ident_ros.nodes.common import _events_executor

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
