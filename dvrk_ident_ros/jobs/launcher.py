"""Start and stop the package's nodes as processes, without ros2launch (ROS-free).

What ``ros2 launch`` does for a lab with a full ROS 2 install, reduced to what
the demo, the integration tests, the benchmarks and ``dvrk-ident launch`` need
on a machine with only the PyPI wheels: ``python -m dvrk_ident_ros.nodes.<node>
--ros-args --params-file config/<node>.yaml -p name:=value``, output to a log
file, SIGINT to stop (as ROS expects), a deadline on every wait.

:class:`LaunchPlan` is a launch file's group of nodes: when a *required* node
exits, or any node exits non-zero, the others get SIGINT (SIGKILL only after
their stop timeout), and the plan's status is non-zero when a node failed,
the required node's status first: what launch/*.launch.py do with their exit
handlers (dvrk_ident_ros/jobs/launch_support.py).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from dvrk_ident_ros.errors import DvrkIdentError
from dvrk_ident_ros.model.description import config_directory


def _value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_value(v) for v in value) + "]"
    if value == "":
        return "''"  # rcl reads the value as YAML: an empty one is no value at all (it refuses "-p name:=")
    return str(value)


class NodeProcess:
    """One node in its own process; ``stop()`` sends SIGINT and waits for the exit."""

    def __init__(self, node: str, parameters: dict | None = None, *, log_dir: Path, env: dict[str, str] | None = None,
                 name: str | None = None, module: str | None = None, node_name: str | None = None,
                 echo: TextIO | None = None, new_session: bool = False):
        """``node``: a node of this package (``dvrk_ident_ros.nodes.<node>``) or any ``module`` run with -m.

        ``name``: the log file's name; ``node_name``: the ROS node name (``-r __node:=``, as a launch file's
        ``name=``); ``echo``: also copy every output line, prefixed ``[name]``, to this stream (as
        ``output="screen"``); ``new_session``: the node does not get the terminal's Ctrl-C, its owner
        forwards it (a :class:`LaunchPlan`).
        """
        self.node = node
        self.name = name or node_name or node
        params_file = config_directory() / f"{node}.yaml"
        cmd = [sys.executable, "-m", module or f"dvrk_ident_ros.nodes.{node}", "--ros-args"]
        if params_file.is_file():
            cmd += ["--params-file", str(params_file)]
        if node_name:
            cmd += ["-r", f"__node:={node_name}"]
        for key, value in (parameters or {}).items():
            cmd += ["-p", f"{key}:={_value(value)}"]
        self.command = cmd
        self.interrupted = False  # stop() sent SIGINT
        self.killed = False  # stop() had to kill it
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = log_dir / f"{self.name}.log"
        self._log = open(self.log_path, "w")
        self._echo_thread: threading.Thread | None = None
        self.process = subprocess.Popen(cmd, stdout=self._log if echo is None else subprocess.PIPE,
                                        stderr=subprocess.STDOUT, env=env or dict(os.environ),
                                        start_new_session=new_session)
        if echo is not None:
            self._echo_thread = threading.Thread(target=self._copy_output, args=(echo,), daemon=True)
            self._echo_thread.start()

    def _copy_output(self, stream: TextIO) -> None:
        if self.process.stdout is None:
            raise DvrkIdentError(f"{self.name}: started without a pipe: nothing to echo")
        for raw in self.process.stdout:
            line = raw.decode(errors="replace")
            try:
                self._log.write(line)
                self._log.flush()
                stream.write(f"[{self.name}] {line}")
                stream.flush()
            except (ValueError, OSError):  # the log closed by stop() after a late line, or the console gone
                pass

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def wait(self, timeout: float) -> int:
        """Wait for the node to exit on its own; DvrkIdentError after ``timeout`` s."""
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise DvrkIdentError(f"{self.name} did not finish within {timeout:.0f} s (log: {self.log_path})") from exc

    def interrupt(self) -> None:
        """Send SIGINT (once) if the node still runs."""
        if self.process.poll() is None and not self.interrupted:
            self.interrupted = True
            self.process.send_signal(signal.SIGINT)

    def stop(self, timeout: float = 15.0) -> int:
        """SIGINT, then SIGKILL after ``timeout`` s; the exit status."""
        if self.process.poll() is None:
            self.interrupt()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.killed = True
                self.process.kill()
                self.process.wait()
        if self._echo_thread is not None:
            self._echo_thread.join(timeout=2.0)
        if not self._log.closed:
            self._log.close()
        return self.process.returncode

    def tail(self, lines: int = 5) -> str:
        if not self._log.closed:
            self._log.flush()
        text = self.log_path.read_text(errors="replace").strip().splitlines()
        return "\n".join(text[-lines:])

    def __enter__(self) -> NodeProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def ros_environment(domain_id: int | None = None, *, isolated: bool = True) -> dict[str, str]:
    """This process's environment for the nodes, the package importable.

    ``isolated`` (tests, demo, benchmarks): an own ROS domain (``domain_id``, default from the pid), localhost
    only. ``isolated=False`` (``dvrk-ident launch`` / ``run`` for a lab): the user's ROS settings as they are.
    """
    from dvrk_ident_ros.environment import ensure_ament_prefix_path

    ensure_ament_prefix_path()
    env = dict(os.environ)
    if isolated:
        env["ROS_DOMAIN_ID"] = str(domain_id if domain_id is not None else 1 + os.getpid() % 100)
        localhost_only(env)
        env.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")])
    env["PYTHONUNBUFFERED"] = "1"
    return env


#: What an isolated run sets; :func:`isolation_variables` hands them to this process's own clients.
ISOLATION_VARIABLES = ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_LOCALHOST_ONLY", "RMW_IMPLEMENTATION")


def localhost_only(env: dict[str, str]) -> None:
    """Discovery on this machine only, unless ``env`` says otherwise: ``ROS_AUTOMATIC_DISCOVERY_RANGE`` (Iron
    and later); Humble has only ``ROS_LOCALHOST_ONLY``, set there alone (later distributions warn that it is
    deprecated)."""
    from dvrk_ident_ros.data.recording import detect_ros_distro

    env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    if detect_ros_distro(env) == "humble":
        env.setdefault("ROS_LOCALHOST_ONLY", "1")


def isolation_variables(env: dict[str, str]) -> dict[str, str]:
    """The isolation of :func:`ros_environment`'s ``env``, for ``os.environ`` (this process's own clients)."""
    return {k: env[k] for k in ISOLATION_VARIABLES if k in env}


def wait_for(predicate, timeout: float, what: str, poll: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise DvrkIdentError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(poll)


@dataclass(frozen=True)
class PlannedNode:
    """A node of a :class:`LaunchPlan`: as a launch file's ``Node(...)`` plus its exit handler."""

    node: str
    parameters: dict = field(default_factory=dict)
    name: str | None = None  # ROS node name (and log file name); default: ``node``
    required: bool = False  # its exit ends the plan
    stop_timeout: float = 15.0  # s between SIGINT and SIGKILL when the plan stops it
    module: str | None = None

    @property
    def label(self) -> str:
        return self.name or self.node


@dataclass(frozen=True)
class NodeExit:
    """How one node of a plan ended."""

    name: str
    required: bool
    returncode: int
    stopped: bool  # the plan sent it SIGINT before it exited
    killed: bool  # ... and had to kill it
    log_path: Path

    @property
    def failed(self) -> bool:
        return self.killed or self.returncode != 0

    def describe(self) -> str:
        role = "required, " if self.required else ""
        if self.killed:
            how = "did not stop after SIGINT: killed"
        elif self.returncode < 0:
            how = f"killed by signal {-self.returncode}"
        else:
            how = f"{'stopped, ' if self.stopped else ''}exit status {self.returncode}"
        return f"{self.name} ({role}{how}; log {self.log_path})"


def exit_status(returncode: int) -> int:
    """A process exit status for a node's return code: a death by signal N is 128 + N, as in a shell."""
    return 128 - returncode if returncode < 0 else returncode


@dataclass(frozen=True)
class PlanResult:
    """The end of a :class:`LaunchPlan`: its status (0: every node ended well) and each node's exit."""

    status: int
    reason: str
    exits: list[NodeExit]

    def report(self) -> str:
        lines = [f"{self.reason}; status {self.status}"]
        lines += [f"  {e.describe()}" for e in self.exits]
        return "\n".join(lines)


class LaunchPlan:
    """A group of nodes started and stopped together, with the exit rules of the package's launch files.

    The plan ends when a required node exits, when any node exits non-zero, when :meth:`request_stop`
    is called (e.g. from a SIGINT handler) or, for :meth:`wait` with a timeout, after it (then
    DvrkIdentError). It then sends SIGINT to every node still running (once; the nodes run in their own
    session, so a terminal's Ctrl-C reaches them only through the plan), waits up to each node's
    ``stop_timeout`` and kills what is left. Status: the exit status of the first failed node, a
    required node first; 1 for a node that had to be killed; 0 when none failed.
    """

    def __init__(self, name: str, nodes: list[PlannedNode], *, log_dir: Path, env: dict[str, str] | None = None,
                 echo: TextIO | None = None):
        if not nodes:
            raise DvrkIdentError(f"{name}: a plan without nodes")
        self.name = name
        self.nodes = list(nodes)
        self.log_dir = Path(log_dir)
        self.env = env
        self.echo = echo
        self.processes: dict[str, NodeProcess] = {}
        self._stop = threading.Event()
        self._stop_reason = ""
        self._ended: list[str] = []  # node labels in the order their exit was seen

    def start(self) -> None:
        """Start every node, in order (as a launch file does)."""
        for planned in self.nodes:
            if planned.label in self.processes:
                raise DvrkIdentError(f"{self.name}: two nodes named {planned.label}")
            self.processes[planned.label] = NodeProcess(
                planned.node, planned.parameters, log_dir=self.log_dir, env=self.env, name=planned.label,
                module=planned.module, node_name=planned.name, echo=self.echo, new_session=True)

    def request_stop(self, reason: str = "stop requested") -> None:
        """End the plan from another thread or a signal handler: the nodes get SIGINT."""
        self._stop_reason = self._stop_reason or reason
        self._stop.set()

    def _exited(self) -> list[PlannedNode]:
        done = []
        for planned in self.nodes:
            process = self.processes[planned.label]
            if process.process.poll() is not None:
                if planned.label not in self._ended:
                    self._ended.append(planned.label)
                done.append(planned)
        return done

    def _end_reason(self) -> str | None:
        for planned in self._exited():
            code = self.processes[planned.label].process.returncode
            if code != 0:
                return f"{self.name}: {planned.label} exited with status {exit_status(code)}"
            if planned.required:
                return f"{self.name}: {planned.label} finished"
        if self._stop.is_set():
            return f"{self.name}: {self._stop_reason}"
        return None

    def wait(self, timeout: float | None = None, poll: float = 0.05) -> PlanResult:
        """Wait for the plan's end (see the class), stop the nodes, return the result."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while (reason := self._end_reason()) is None:
            if deadline is not None and time.monotonic() > deadline:
                self.stop()
                raise DvrkIdentError(f"{self.name} did not end within {timeout:.0f} s (logs: {self.log_dir})")
            self._stop.wait(poll)
        return self._finish(reason)

    def stop(self) -> None:
        """SIGINT to every node still running, at once; then wait for each, killing after its stop timeout."""
        for process in self.processes.values():
            process.interrupt()
        for planned in self.nodes:
            running = self.processes.get(planned.label)
            if running is not None:
                running.stop(planned.stop_timeout)
                if planned.label not in self._ended:
                    self._ended.append(planned.label)

    def _finish(self, reason: str) -> PlanResult:
        self.stop()
        exits = []
        for label in self._ended:
            planned = next(p for p in self.nodes if p.label == label)
            process = self.processes[label]
            exits.append(NodeExit(label, planned.required, process.process.returncode, process.interrupted,
                                  process.killed, process.log_path))
        failed = [e for e in exits if e.failed]
        first = next((e for e in failed if e.required), failed[0] if failed else None)
        status = 0 if first is None else 1 if first.killed else exit_status(first.returncode) or 1
        return PlanResult(status, reason, exits)

    def run(self, timeout: float | None = None) -> PlanResult:
        """:meth:`start`, then :meth:`wait`; the nodes are stopped whatever happens."""
        try:
            self.start()
            return self.wait(timeout)
        finally:
            self.stop()

    def __enter__(self) -> LaunchPlan:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
