"""Start and stop node processes in tests (SIGINT, as ROS expects)."""
from __future__ import annotations

import contextlib
import signal
import subprocess
from collections.abc import Iterator, Sequence


@contextlib.contextmanager
def running(cmd: Sequence[str], env: dict[str, str], timeout: float = 10.0) -> Iterator[subprocess.Popen]:
    """Run ``cmd`` for the duration of the block; SIGINT it afterwards and reap it."""
    proc = subprocess.Popen(list(cmd), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def output_of(proc: subprocess.Popen) -> str:
    """What a finished process printed (for assertion messages)."""
    if proc.poll() is None or proc.stdout is None:
        return "(still running)"
    return proc.stdout.read()
