"""Node ``gc_safety_net``: hands the arm back when its gravity compensation dies without doing it itself.

Started beside ``gravity_compensation`` by gravity_compensation.launch.py, gc_calibration.launch.py and
``dvrk-ident launch`` (the same plans). Its publishers (``/<ARM>/hold``, ``/<ARM>/use_gravity_compensation``)
exist from the start, so the arm has discovered them before they are needed. A thread reads the state the
compensation node leaves (:mod:`dvrk_ident_ros.gc.runtime.safety_net`) and waits on that node's pid; when the node
ends while its state says it owns the arm (a crash, SIGKILL, the OOM killer: a clean exit writes
``owned: false`` first), the net publishes ``hold`` (the arm's own PID holds it where it is, out of effort
mode and its last ``servo_jf``) and the dVRK's own compensation as the node found it. The same check runs
once more when the net itself is stopped (the launch stops it as soon as the compensation has ended).
"""
from __future__ import annotations

import sys
import threading
import time

from rclpy.node import Node
from std_msgs.msg import Bool, Empty

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.gc.runtime.safety_net import (
    NetState,
    ProcessWatch,
    hand_back,
    read_state,
    state_path,
    write_state,
    written_at,
)
from dvrk_ident_ros.parameters.gc_safety_net import SCHEMA as PARAMETERS
from dvrk_ident_ros.parameters.settings import GcSafetyNetSettings
from dvrk_ident_ros.ros.messages import check_arm_name
from dvrk_ident_ros.ros.parameters import declare_parameters
from dvrk_ident_ros.ros.process import run

#: s: how often the state file is read while no owning node is watched
READ_EVERY = 0.05
#: s: the longest a hand-back waits for the subscribers the graph knows to match the net's publishers (a net
#: started a moment before its node died, on a loaded host, may not be matched yet: a message sent then is lost)
MATCH_WAIT = 2.0


class GcSafetyNetNode(Node):
    def __init__(self) -> None:
        super().__init__("gc_safety_net")
        params = declare_parameters(self, PARAMETERS)
        settings = GcSafetyNetSettings.from_values(params)
        self.arm = check_arm_name(settings.arm)
        self.path = state_path(self.arm)  # where the compensation node of this arm and ROS domain writes
        self._hold = self.create_publisher(Empty, f"/{self.arm}/hold", 10)
        self._flag = self.create_publisher(Bool, f"/{self.arm}/use_gravity_compensation", 10)
        self._lock = threading.Lock()
        self._handled: set[int] = set()  # pids handed back already
        self._bad_file_said = False
        self._started = time.time()  # a state written before, whose node had ended, is a leftover
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="gc_safety_net", daemon=True)
        self._thread.start()
        self.get_logger().info(f"watching the gravity compensation of {self.arm} ({self.path})")

    def _read(self):
        try:
            return read_state(self.path)
        except DataError as exc:
            if not self._bad_file_said:
                self._bad_file_said = True
                self.get_logger().error(str(exc))
            return None

    def _watch(self) -> None:
        """Wait for the owning node's end; hand back when it ends while owning."""
        while not self._stop.is_set():
            state = self._read()
            if state is None or not state.owned or state.pid in self._handled:
                self._stop.wait(READ_EVERY)
                continue
            watch = ProcessWatch(state.pid)
            if watch.ended and (written_at(self.path) or 0.0) < self._started:
                watch.close()
                self._handled.add(state.pid)
                self.get_logger().warning(
                    f"{self.path} says pid {state.pid} owns {self.arm}, but it had ended before this net started: "
                    f"a leftover of a node no net watched; not handing back now (the arm may be in use). Check "
                    f"that {self.arm} is held and its own gravity compensation as it should be")
                continue
            try:
                while not self._stop.is_set() and not watch.wait(READ_EVERY):
                    now = self._read()
                    if now is None or not now.owned or now.pid != state.pid:
                        break  # handed back by the node itself, or another node took over
                if watch.ended:
                    self._hand_back(state.pid, time.monotonic())
            finally:
                watch.close()

    def _hand_back(self, pid: int, ended_at: float) -> None:
        with self._lock:
            if pid in self._handled:
                return
            state = self._read()  # as the node last left it
            if state is None or state.pid != pid:
                return
            action = hand_back(state)
            self._handled.add(pid)
            if action is None:
                return
            self._wait_matched(ended_at + MATCH_WAIT)
            self._hold.publish(Empty())
            if action.flag is not None:
                self._flag.publish(Bool(data=action.flag))
            write_state(self.path, NetState(state.arm, pid, False, state.restore_flag))  # handed back: by the net
            took = 1e3 * (time.monotonic() - ended_at)
            flag = "" if action.flag is None else f", the dVRK's own compensation back {'on' if action.flag else 'off'}"
        self.get_logger().error(
            f"the gravity compensation of {self.arm} (pid {pid}) ended without handing the arm back: /{self.arm}/hold "
            f"sent{flag} ({took:.1f} ms after its end was seen)")

    def _wait_matched(self, deadline: float) -> None:
        """Until every subscriber of hold and use_gravity_compensation the graph knows (at least one: the arm)
        has matched the net's publisher, or ``deadline`` (monotonic s)."""
        topics = ((self._hold, f"/{self.arm}/hold"), (self._flag, f"/{self.arm}/use_gravity_compensation"))
        while time.monotonic() < deadline:
            if all(pub.get_subscription_count() >= max(1, self.count_subscribers(topic)) for pub, topic in topics):
                return
            time.sleep(0.005)

    def close(self) -> None:
        """Stopped (the launch ends): one last check of the node, then the thread ends."""
        self._stop.set()
        self._thread.join(timeout=1.0)
        state = self._read()
        if state is not None and state.owned and state.pid not in self._handled:
            watch = ProcessWatch(state.pid)
            ended = watch.wait(0.0)
            watch.close()
            if ended:
                self._hand_back(state.pid, time.monotonic())
            time.sleep(0.05)  # let the middleware deliver it before the context goes


def main(args: list[str] | None = None) -> int:
    return run(GcSafetyNetNode, args)


if __name__ == "__main__":
    sys.exit(main())
