"""Issue 18 acceptance (compensation under load): the gravity_compensation node on the wall-clock simulated
MTML at 100 Hz (the bridge's default; dVRK 2.4, so the built-in compensation is on at start) for
DVRK_IDENT_BENCH_GC_OUTAGE_SECONDS (default 60) with two busy processes loading the machine, then Ctrl-C.

What reaches the arm is counted here, as a lab would see it: ``/MTML/use_gravity_compensation`` must go
false once at start and true once at exit (after the SIGINT), never in between; ``servo_jf`` at the state's
rate (per second: the maximum next to the measured_js the same second). Printed: the node's stale events,
late samples, max gap and hand-overs (its /diagnostics report and exit line), and the fade on SIGINT: the
time from the signal to the hand-over message, against ``fade_out_time``.
DVRK_IDENT_BENCH_GC_OUTAGE_STALE_PERIODS sets the node's watchdog (e.g. 3, the old default: a twitchy watchdog,
still no hand-over); DVRK_IDENT_BENCH_GC_OUTAGE_LOGS keeps the nodes' logs in that directory.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from dvrk_ident_ros.jobs.launcher import NodeProcess, isolation_variables, ros_environment

ARM = "MTML"
RATE = 100.0  # Hz, the arm's state (the dVRK bridge's default, -p 0.01)
BUSY = 2  # busy processes loading the machine
FADE_OUT_TIME = 0.5  # s, the node's default


def _gc_file(directory: Path) -> Path:
    """The file a lab's calibration makes of the simulated MTML, in-process: the shipped grid at the demo's
    strides (every 10th pose of every 2nd sweep) on the noisy simulated arm, fitted by MLSE as ``dvrk-ident gc
    fit`` fits it. (The arm's gravity alone lets its wrist sag and the take-over guard stops it.)"""
    from dvrk_ident_ros.excitation.files import load_grid
    from dvrk_ident_ros.excitation.playback import GridPlayback
    from dvrk_ident_ros.gc.fitting.fits import FITS
    from dvrk_ident_ros.gc.fitting.gc_file import gc_parameters
    from dvrk_ident_ros.model.description import config_directory
    from dvrk_ident_ros.sim.arm import SimulatedArm
    from dvrk_ident_ros.sim.config import load_sim_config
    from dvrk_ident_ros.sim.experiments import collect_pose_grid

    arm = SimulatedArm(load_sim_config("mtm"), ARM, seed=7)
    grid = load_grid(config_directory() / "grids" / "mtml_gc_grid.yaml", arm=ARM)
    data = collect_pose_grid(arm, GridPlayback(grid, arm.checker, pose_stride=10, sweep_stride=2), trim=(0, 0))
    return gc_parameters(FITS["mlse"](data, None), data, ARM, "bench", "bench gc_outage").save(
        directory / f"gc-{ARM}-bench.json")


class _Observer:
    """The bench's side: what reaches the arm and what the node reports, with receipt times (monotonic)."""

    def __init__(self) -> None:
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Bool

        from dvrk_ident.msg import GravityCompensationDiagnostics

        rclpy.init()
        self.node = rclpy.create_node("bench_gc_outage")
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        deep = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=5000, reliability=ReliabilityPolicy.RELIABLE)
        self.flag: list[tuple[float, bool]] = []
        self.servo_jf: list[float] = []
        self.measured: list[float] = []
        self.reports: list[tuple[float, object]] = []
        self.scale: list[tuple[float, float]] = []  # the node's scale with every command (~/diagnostics)
        sub = self.node.create_subscription
        sub(Bool, f"/{ARM}/use_gravity_compensation", lambda m: self.flag.append((time.monotonic(), m.data)), deep)
        sub(JointState, f"/{ARM}/servo_jf", lambda m: self.servo_jf.append(time.monotonic()), deep)
        sub(JointState, f"/{ARM}/measured_js", lambda m: self.measured.append(time.monotonic()), deep)
        sub(DiagnosticArray, "/diagnostics", lambda m: self.reports.append((time.monotonic(), m)), 10)
        sub(GravityCompensationDiagnostics, "/gravity_compensation/diagnostics",
            lambda m: self.scale.append((time.monotonic(), m.ramp_scale)), deep)

    def spin_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            self.executor.spin_once(timeout_sec=min(remaining, 0.05))

    def spin_until(self, condition, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                return False
            self.executor.spin_once(timeout_sec=0.02)
        return True

    def close(self) -> None:
        import rclpy

        self.node.destroy_node()
        rclpy.try_shutdown()


def _per_second(times: list[float], start: float, end: float) -> np.ndarray:
    edges = np.arange(start, end + 1e-9, 1.0)
    return np.histogram(times, bins=edges)[0] if len(edges) > 1 else np.zeros(0)


def _report_values(report) -> dict[str, str]:
    if report is None or not report.status:
        return {}
    return {kv.key: kv.value for kv in report.status[0].values}


def run() -> bool:
    duration = float(os.environ.get("DVRK_IDENT_BENCH_GC_OUTAGE_SECONDS", "60"))
    stale_periods = os.environ.get("DVRK_IDENT_BENCH_GC_OUTAGE_STALE_PERIODS")  # default: the node's
    parameters = {"arm": ARM} | ({"stale_periods": float(stale_periods)} if stale_periods else {})
    env = ros_environment(101)  # outside the tests' 1..100 (from their pid): no other arm on this domain
    os.environ.update(isolation_variables(env))
    print(f"  simulated {ARM}, wall clock, {RATE:g} Hz, dVRK 2.4 (built-in compensation on at start); "
          f"gravity_compensation with its defaults"
          + (f" but stale_periods {float(stale_periods):g}" if stale_periods else "")
          + f" for {duration:.0f} s, {BUSY} busy processes; then SIGINT")
    busy: list[subprocess.Popen] = []
    observer = _Observer()
    ok = True
    try:
        with tempfile.TemporaryDirectory() as tmp:
            logs = Path(os.environ.get("DVRK_IDENT_BENCH_GC_OUTAGE_LOGS") or tmp)  # kept where one is given
            gc_file = _gc_file(logs)
            # the node first, seen by this observer before the arm exists: its first "off" is counted here too
            gc = NodeProcess("gravity_compensation", parameters | {"parameter_file": str(gc_file)}, log_dir=logs,
                             env=env)
            try:
                topics = (f"/{ARM}/use_gravity_compensation", f"/{ARM}/servo_jf")
                if not observer.spin_until(lambda: all(observer.node.count_publishers(t) for t in topics), 30.0):
                    print(f"  the node did not come up: {gc.tail()}")
                    return False
                observer.spin_for(0.5)  # discovery both ways
                with NodeProcess("simulated_arm", {"arm": ARM, "initial_state": "HOMED", "dvrk_version": "2.4",
                                                   "publish_rate": RATE}, log_dir=logs, env=env) as sim:
                    if not observer.spin_until(lambda: len(observer.servo_jf) > 0, 30.0):
                        print(f"  the node never commanded: {gc.tail()}\n  {sim.tail()}")
                        return False
                    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(BUSY)]
                    start = time.monotonic()
                    observer.spin_for(duration)
                    end = time.monotonic()
                    before = list(observer.flag)
                    last_report = observer.reports[-1][1] if observer.reports else None
                    sent_before = len(observer.servo_jf)
                    gc.process.send_signal(signal.SIGINT)
                    signalled = time.monotonic()
                    observer.spin_until(lambda: len(observer.flag) > len(before), FADE_OUT_TIME + 5.0)
                    status = gc.process.wait(timeout=15.0)
                    observer.spin_for(0.3)
                    load = os.getloadavg()[0]
            finally:
                gc.stop()
            log = gc.log_path.read_text(errors="replace")
            sim_log = sim.log_path.read_text(errors="replace").strip().splitlines()
    finally:
        for p in busy:
            p.kill()
            p.wait()
        observer.close()

    flags = [value for _, value in observer.flag]
    handed = [(at, value) for at, value in observer.flag if at > signalled]
    fade = handed[0][0] - signalled if handed else float("nan")
    scale = next((x for at, x in reversed(observer.scale) if at <= signalled), 0.0)  # a stale fade may be under way
    fade_commands = sum(1 for at in observer.servo_jf[sent_before:] if at > signalled)
    jf = _per_second(observer.servo_jf, start, end)
    js = _per_second(observer.measured, start, end)
    values = _report_values(last_report)
    exit_line = next((line for line in log.splitlines() if "exit:" in line), "")
    warnings = [line for line in log.splitlines() if "WARN" in line]

    def counted(name: str) -> str:
        m = re.search(rf"{name} (\d+)", exit_line)
        return m.group(1) if m else "?"

    print(f"  use_gravity_compensation as the arm got it: {flags} ({len(before)} before the SIGINT)")
    average = sum(1 for t in observer.servo_jf if start <= t < end) / (end - start)
    print(f"  servo_jf: {average:.1f} Hz on average over the run, per second min {jf.min() if jf.size else 0} max "
          f"{jf.max() if jf.size else 0} (measured_js the same seconds: min {js.min() if js.size else 0} max "
          f"{js.max() if js.size else 0})")
    print(f"  node (its last /diagnostics report before the SIGINT): stale events {values.get('stale events', '?')}, "
          f"late samples {values.get('late samples', '?')}, max gap "
          f"{1e3 * float(values.get('max gap (s)', 'nan')):.0f} ms, hand-overs {values.get('hand-overs', '?')}, "
          f"fade commands {values.get('fade commands', '?')}")
    print(f"  node exit line: {exit_line.split('exit: ', 1)[-1] if exit_line else '(none)'}")
    print(f"  SIGINT: hand-over (use_gravity_compensation true) {fade:.3f} s after the signal (scale {scale:.2f} at "
          f"the signal, fade_out_time {FADE_OUT_TIME:g} s), {fade_commands} servo_jf in between; exit status {status}")
    print(f"  warnings logged by the node: {len(warnings)} in {duration + 1:.0f} s")
    print(f"  the machine: load average {load:.1f} over the last minute ({BUSY} of it this bench's busy processes); "
          f"the simulated arm: {sim_log[-1].split(': ', 1)[-1] if sim_log else '(no log)'}")
    for line in warnings[:6]:
        print(f"    {line[:200]}")
    checks = {
        "use_gravity_compensation false once at start, true once at exit": flags == [False, True] and
        [v for _, v in before] == [False] and [v for _, v in handed] == [True],
        "no hand-over while running": values.get("hand-overs") == "0" and counted("hand-overs") == "0",
        "fade on SIGINT over scale x fade_out_time (0.7x to +1 s), then the hand-over":
        0.7 * scale * FADE_OUT_TIME <= fade <= FADE_OUT_TIME + 1.0,
        "servo_jf never faster than the state (per second, +30 %)": bool(jf.size) and
        int(jf.max()) <= 1.3 * RATE,
        "exit status 0": status == 0,
    }
    for what, passed in checks.items():
        print(f"  {'ok  ' if passed else 'FAIL'} {what}")
        ok &= passed
    return bool(ok)


if __name__ == "__main__":
    sys.exit(0 if run() else 1)
