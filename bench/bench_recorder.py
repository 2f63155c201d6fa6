"""Issue 8 acceptance: the recorder at 1 kHz for 60 s loses no message and the bag reads back with rosbags.

Two processes on domain 77 (localhost only): ``bench.publish_joint_states``
publishes 7-joint JointStates on /PSM1/measured_js, the recorder node records
them; the publisher puts the sequence number in position[0], so the bag shows
exactly which messages are missing. DVRK_IDENT_BENCH_RECORDER_SECONDS shortens
the run (default 60 s).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

from dvrk_ident_ros.data.bags import read_joint_states
from dvrk_ident_ros.environment import ensure_ament_prefix_path
from dvrk_ident_ros.jobs.launcher import localhost_only

REPO = Path(__file__).resolve().parent.parent
TOPIC = "/PSM1/measured_js"
RATE = 1000.0


def _environment() -> dict[str, str]:
    ensure_ament_prefix_path()
    env = dict(os.environ)
    env.update(ROS_DOMAIN_ID="77", RMW_IMPLEMENTATION="rmw_fastrtps_cpp",
               PYTHONUNBUFFERED="1", PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]))
    localhost_only(env)
    return env


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a running process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _stop(proc: subprocess.Popen, timeout: float = 20.0) -> str:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out or ""


def run() -> bool:
    duration = float(os.environ.get("DVRK_IDENT_BENCH_RECORDER_SECONDS", "60"))
    env = _environment()
    with tempfile.TemporaryDirectory() as tmp:
        bag = Path(tmp) / "bag"
        recorder = subprocess.Popen(
            [sys.executable, "-m", "dvrk_ident_ros.nodes.recorder", "--ros-args", "-p", "arm:=PSM1",
             "-p", f"bag_path:={bag}"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        publisher = subprocess.Popen(
            [sys.executable, "-m", "bench.publish_joint_states", "--topic", TOPIC, "--rate", str(RATE),
             "--duration", str(duration), "--joints", "7"],
            env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            first = publisher.stdout.readline()
            cpu0, wall0 = _cpu_seconds(recorder.pid), time.monotonic()
            pub_out, _ = publisher.communicate(timeout=duration + 120)
            cpu1, wall1 = _cpu_seconds(recorder.pid), time.monotonic()
        except (subprocess.TimeoutExpired, OSError) as exc:
            publisher.kill()
            print(f"  publisher or recorder failed: {exc}\n{_stop(recorder)}")
            return False
        finally:
            if publisher.poll() is None:
                publisher.kill()
        pub_out = first + pub_out
        time.sleep(1.0)  # every message is acknowledged: at most the reader queue (100) is left to write
        rec_out = _stop(recorder)
        print("  publisher: " + pub_out.strip().replace("\n", "\n  publisher: "))
        print("  recorder:  " + rec_out.strip().replace("\n", "\n  recorder:  "))
        published = int(pub_out.split("published ", 1)[1].split()[0]) if "published " in pub_out else -1
        if published <= 0 or recorder.returncode != 0:
            print(f"  FAILED: publisher sent {published}, recorder exit code {recorder.returncode}")
            return False
        try:
            t, q, _, _, _ = read_joint_states(bag, TOPIC)
        except Exception as exc:  # noqa: BLE001 - report any read failure as the verdict
            print(f"  the bag does not read back: {exc}")
            return False
        seq = np.unique(q[:, 0].astype(np.int64))
        lost = published - int(np.count_nonzero((seq >= 0) & (seq < published)))
        info = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
        custom = info.get("custom_data") or {}
        size = sum(f.stat().st_size for f in bag.iterdir())
        period = np.diff(t)
        print(f"  {'messages published':<40} {published}")
        print(f"  {'messages in the bag (rosbags read-back)':<40} {len(q)} ({len(seq)} distinct, metadata "
              f"{info['message_count']})")
        print(f"  {'lost':<40} {lost}")
        print(f"  {'gaps (receive time, over threshold)':<40} {custom.get('dvrk_ident.gap_count')} over "
              f"{1e3 * float(custom.get('dvrk_ident.gap_threshold', 0)):.2f} ms; largest interval "
              f"{1e3 * float(custom.get('dvrk_ident.max_gap', 0)):.2f} ms")
        print(f"  {'header-stamp period p50 / p99 / max (ms)':<40} {1e3 * np.median(period):.3f} / "
              f"{1e3 * np.percentile(period, 99):.3f} / {1e3 * period.max():.3f}")
        print(f"  {'bag size':<40} {size / 2**20:.1f} MiB ({size / len(q):.0f} bytes/message)")
        print(f"  {'recorder CPU while publishing':<40} {100 * (cpu1 - cpu0) / (wall1 - wall0):.1f} % of one core "
              f"({cpu1 - cpu0:.1f} s over {wall1 - wall0:.1f} s)")
        ok = lost == 0 and len(q) == published
        print(f"  verdict: {'no message lost, the bag reads back' if ok else 'MESSAGES LOST'}")
        return ok
