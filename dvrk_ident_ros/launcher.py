"""Start and stop the package's nodes as processes, without ros2launch (ROS-free).

What ``ros2 launch`` does for a lab with a full ROS 2 install, reduced to what
the demo, the integration tests and the benchmarks need on a machine with
only the PyPI wheels: ``python -m dvrk_ident_ros.nodes.<node> --ros-args
--params-file config/<node>.yaml -p name:=value``, output to a log file,
SIGINT to stop (as ROS expects), a deadline on every wait.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from dvrk_ident_ros.errors import DvrkIdentError
from dvrk_ident_ros.model.description import config_directory


def _value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_value(v) for v in value) + "]"
    return str(value)


class NodeProcess:
    """One node in its own process; ``stop()`` sends SIGINT and waits for the exit."""

    def __init__(self, node: str, parameters: dict | None = None, *, log_dir: Path, env: dict[str, str] | None = None,
                 name: str | None = None, module: str | None = None):
        """``node``: a node of this package (``dvrk_ident_ros.nodes.<node>``) or any ``module`` run with -m."""
        self.node = node
        self.name = name or node
        params_file = config_directory() / f"{node}.yaml"
        cmd = [sys.executable, "-m", module or f"dvrk_ident_ros.nodes.{node}", "--ros-args"]
        if params_file.is_file():
            cmd += ["--params-file", str(params_file)]
        for key, value in (parameters or {}).items():
            cmd += ["-p", f"{key}:={_value(value)}"]
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = log_dir / f"{self.name}.log"
        self._log = open(self.log_path, "w")
        self.process = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env or dict(os.environ))

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def wait(self, timeout: float) -> int:
        """Wait for the node to exit on its own; DvrkIdentError after ``timeout`` s."""
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise DvrkIdentError(f"{self.name} did not finish within {timeout:.0f} s (log: {self.log_path})") from exc

    def stop(self, timeout: float = 15.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
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


def ros_environment(domain_id: int | None = None) -> dict[str, str]:
    """This process's environment for the nodes: own domain, localhost only, the package importable."""
    from dvrk_ident_ros.environment import ensure_ament_prefix_path

    ensure_ament_prefix_path()
    env = dict(os.environ)
    env["ROS_DOMAIN_ID"] = str(domain_id if domain_id is not None else 1 + os.getpid() % 100)
    env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    env.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")])
    env["PYTHONUNBUFFERED"] = "1"
    return env


def wait_for(predicate, timeout: float, what: str, poll: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise DvrkIdentError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(poll)
