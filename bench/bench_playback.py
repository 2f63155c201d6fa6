"""Issue 18 acceptance (playback on the wall clock): the shipped MTM and PSM trajectories through the
trajectory player on the wall-clock simulated arms (real time, no /clock, as a real arm runs), 3 times
each in a row, at arm rates of 100 Hz (the bridge's default) and 1 kHz, with the machine loaded by busy
processes (DVRK_IDENT_BENCH_PLAYBACK_BUSY, default 2: issue 36's acceptance), the simulated arm taking a
streamed servo_jp as its ``servo_timing`` default says (arrival, as the dVRK) or as
DVRK_IDENT_BENCH_PLAYBACK_TIMING says (stamp: the gentler replay, the baseline).

Per run: whether it played to the end, the largest tracking error per joint (the player's own check:
measured position against the setpoint the arm had been sent at the state's stamp), and the stream's
timing (tick interval median and p99, missed periods, stalls with the time the trajectory was held);
per arm and rate, the simulated arm's own figures (state periods caught up late, stalls) and the worst
error per joint over the runs against the tracking limits of config/<arm>.yaml.

DVRK_IDENT_BENCH_PLAYBACK_RUNS (default 3), DVRK_IDENT_BENCH_PLAYBACK_RATES (default "100,1000") and
DVRK_IDENT_BENCH_PLAYBACK_ARMS (default "MTML,PSM1") shorten it; DVRK_IDENT_BENCH_PLAYBACK_LIMIT_SCALE
(e.g. 3) plays with the tracking limits that many times those of config/<arm>.yaml, to measure the
tracking without the limit cutting a run short (how the limits' margins were set). Each arm starts at its
home pose: the first run's ramp to the trajectory's start is long (about 70 s on the MTM at the default
0.2 rad/s); the whole bench takes about 10 minutes.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from dvrk_ident_ros.arm.registry import arm_spec
from dvrk_ident_ros.jobs.launcher import NodeProcess, ros_environment
from dvrk_ident_ros.model.description import load_description

ARMS = (("MTML", "mtm"), ("PSM1", "psm"))
RUN_TIMEOUT = 400.0  # s per run: the MTM's first run (70 s ramp + 3 periods of 10 s) with a wide margin
OUTCOME = re.compile(r"\]: \S+: (?P<message>.*?) \((?P<duration>[\d.]+) s, (?P<commands>\d+) commands")
LINE = re.compile(r"per joint (?P<joints>[\d. ]+); stream (?P<rate>[\d.]+) Hz: (?P<ticks>\d+) ticks, interval median "
                  r"(?P<median>[\d.]+) ms, p99 (?P<p99>[\d.]+) ms, max (?P<max>[\d.]+) ms; (?P<missed>\d+) periods "
                  r"missed, (?P<stalls>\d+) stalls \(trajectory held (?P<held>[\d.]+) s\)")


def _busy() -> subprocess.Popen:
    """One process that keeps a core busy."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def _final_line(log: str) -> str:
    lines = [line for line in log.splitlines() if "per joint" in line and "[trajectory_player]" in line]
    return lines[-1] if lines else ""


def _play(arm: str, trajectory: Path, logs: Path, env: dict[str, str], run: int, limits: list[float] | None) -> dict:
    start = time.monotonic()
    parameters = {"arm": arm, "trajectory_file": str(trajectory), "autostart": True, "wait_for_recorder": False}
    if limits is not None:
        parameters["tracking_error_limit"] = limits
    player = NodeProcess("trajectory_player", parameters, log_dir=logs, env=env, name=f"player_{arm}_{run}")
    try:
        code = player.wait(RUN_TIMEOUT)
    except Exception as exc:  # noqa: BLE001 - a run that hangs is reported, the bench goes on
        player.stop()
        return {"finished": False, "code": None, "seconds": time.monotonic() - start, "line": str(exc)}
    player.stop()
    line = _final_line(player.log_path.read_text(errors="replace"))
    result = {"finished": code == 0, "code": code, "seconds": time.monotonic() - start, "line": line}
    outcome = OUTCOME.search(line)
    result["message"] = outcome["message"] if outcome else ""
    match = LINE.search(line)
    if match:
        result.update(errors=np.array([float(x) for x in match["joints"].split()]),
                      median=float(match["median"]), p99=float(match["p99"]), worst=float(match["max"]),
                      missed=int(match["missed"]), stalls=int(match["stalls"]), held=float(match["held"]),
                      ticks=int(match["ticks"]))
    else:
        result["tail"] = player.tail(3)
    return result


def _arm_rate(arm: str, family: str, rate: float, runs: int, logs: Path, env: dict[str, str]) -> bool:
    trajectory = arm_spec(arm).trajectory
    description = load_description(family)
    names = list(description.dvrk_joint_names)
    limits = np.asarray(description.tracking_error, dtype=float)
    scale = float(os.environ.get("DVRK_IDENT_BENCH_PLAYBACK_LIMIT_SCALE", "0") or 0)
    played_limits = [float(x) for x in limits * scale] if scale > 0 else None
    if played_limits is not None:
        print(f"  {arm}: measuring with tracking limits x{scale:g}: {played_limits}")
    results = []
    timing = os.environ.get("DVRK_IDENT_BENCH_PLAYBACK_TIMING", "").strip().lower()
    sim_parameters: dict = {"arm": arm, "publish_rate": rate, "initial_state": "HOMED"}
    if timing:
        sim_parameters["servo_timing"] = timing
    with NodeProcess("simulated_arm", sim_parameters, log_dir=logs, env=env, name=f"sim_{arm}_{int(rate)}") as sim:
        time.sleep(3.0)  # imports, discovery
        for run in range(1, runs + 1):
            r = _play(arm, trajectory, logs, env, run, played_limits)
            results.append(r)
            what = "played to the end" if r["finished"] else f"did NOT finish (exit {r['code']}: {r.get('message')})"
            print(f"  {arm} at {rate:g} Hz, run {run}: {what} in {r['seconds']:.1f} s", flush=True)
            if "errors" in r:
                print("    max tracking error per joint: "
                      + ", ".join(f"{n} {e:.4f}" for n, e in zip(names, r["errors"], strict=True)))
                print(f"    stream: {r['ticks']} ticks, interval median {r['median']:.2f} ms, p99 {r['p99']:.2f} ms, "
                      f"max {r['worst']:.1f} ms; {r['missed']} periods missed, {r['stalls']} stalls "
                      f"(trajectory held {r['held']:.3f} s)")
            else:
                print(f"    {r['line'] or r.get('tail', '')}")
        sim.stop()
        summary = [line for line in sim.log_path.read_text(errors="replace").splitlines()
                   if "simulated on the wall clock" in line]
        print("    load average (1, 5, 15 min; 2 cores, each busy process counts 1): "
              + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
        print(f"    simulated {arm}: " + (summary[-1].split(": ", 1)[-1] if summary else sim.tail(2)))
    measured = [r["errors"] for r in results if "errors" in r]
    if measured:
        worst = np.max(measured, axis=0)
        print(f"  {arm} at {rate:g} Hz, worst over {len(measured)} runs (limit, limit/worst): "
              + ", ".join(f"{n} {w:.4f} ({lim:g}, x{lim / max(w, 1e-9):.1f})"
                          for n, w, lim in zip(names, worst, limits, strict=True)))
    return all(r["finished"] for r in results)


def run() -> bool:
    runs = int(os.environ.get("DVRK_IDENT_BENCH_PLAYBACK_RUNS", "3"))
    rates = [float(x) for x in os.environ.get("DVRK_IDENT_BENCH_PLAYBACK_RATES", "100,1000").split(",")]
    wanted = os.environ.get("DVRK_IDENT_BENCH_PLAYBACK_ARMS", "MTML,PSM1").upper().split(",")
    arms = [(arm, family) for arm, family in ARMS if arm in wanted]
    env = ros_environment(79)
    busy = [_busy() for _ in range(int(os.environ.get("DVRK_IDENT_BENCH_PLAYBACK_BUSY", "2")))]
    timing = os.environ.get("DVRK_IDENT_BENCH_PLAYBACK_TIMING", "") or "the simulated arm's default"
    print(f"  wall-clock simulated arms (no /clock), servo_jp timing {timing}, {runs} runs in a row per arm and "
          f"rate, the player with its defaults (stream 500 Hz), {len(busy)} busy processes loading the machine",
          flush=True)
    ok = True
    logs = Path(tempfile.mkdtemp(prefix="dvrk_ident_bench_playback_"))
    print(f"  node logs in {logs}", flush=True)
    try:
        for rate in rates:
            for arm, family in arms:
                ok &= _arm_rate(arm, family, rate, runs, logs / f"{arm}_{int(rate)}", env)
    finally:
        for process in busy:
            process.kill()
            process.wait()
    print(f"  every run played to the end: {ok}")
    return bool(ok)
