"""The safety net's core (gc/runtime/safety_net.py): the state the compensation node leaves, what the net does with
it, and how it sees a process end (a pidfd: at once, SIGKILL included)."""
from __future__ import annotations

import subprocess
import time

import pytest

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.gc.runtime.safety_net import (
    HandBack,
    NetState,
    ProcessWatch,
    hand_back,
    read_state,
    state_path,
    write_state,
)


def test_the_state_round_trips_and_a_missing_one_is_none(tmp_path):
    path = tmp_path / "net" / "state.json"
    assert read_state(path) is None
    for state in (NetState("MTML", 1234, True, True), NetState("PSM1", 99, False, None)):
        write_state(path, state)
        assert read_state(path) == state
    assert [p.name for p in path.parent.iterdir()] == ["state.json"]  # no temporary file left


@pytest.mark.parametrize("text", ["{", "[]", '{"arm": "MTML"}', '{"arm": "MTML", "pid": "x", "owned": true, '
                                                                   '"restore_flag": null}'])
def test_a_file_that_is_not_a_state_is_a_data_error(tmp_path, text):
    path = tmp_path / "state.json"
    path.write_text(text)
    with pytest.raises(DataError, match="not a safety-net state"):
        read_state(path)


def test_only_a_node_that_owned_the_arm_is_handed_back():
    assert hand_back(None) is None
    assert hand_back(NetState("MTML", 1, False, True)) is None  # handed back by the node itself
    assert hand_back(NetState("MTML", 1, True, True)) == HandBack(hold=True, flag=True)  # dVRK 2.4: found on
    assert hand_back(NetState("MTML", 1, True, False)) == HandBack(hold=True, flag=False)  # 2.3: found off
    assert hand_back(NetState("PSM1", 1, True, None)) == HandBack(hold=True, flag=None)  # no flag to restore


def test_the_path_is_per_arm_and_per_domain(monkeypatch, tmp_path):
    monkeypatch.setenv("ROS_HOME", str(tmp_path))
    monkeypatch.setenv("ROS_DOMAIN_ID", "42")
    assert state_path("MTML") == tmp_path / "dvrk_ident" / "gc_safety_net_MTML_domain42.json"
    assert state_path("MTML", "7") != state_path("MTMR", "7") != state_path("MTML")


def test_a_killed_process_is_seen_at_once():
    proc = subprocess.Popen(["sleep", "30"])
    watch = ProcessWatch(proc.pid)
    try:
        assert not watch.wait(0.05)
        proc.kill()
        start = time.monotonic()
        assert watch.wait(5.0)
        seen = time.monotonic() - start
        assert seen < 1.0, seen  # a pidfd turns readable when the process ends (not polled)
    finally:
        watch.close()
        proc.wait()
    gone = ProcessWatch(proc.pid)  # reaped: the pid no longer exists
    assert gone.wait(0.0)
    gone.close()
