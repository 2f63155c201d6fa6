"""``dvrk-ident demo``: the main job on simulated arms, through the ROS 2 nodes.

No ROS command-line tools are needed: the nodes run as processes started by
:mod:`dvrk_ident_ros.jobs.launcher` (what ``ros2 launch`` does on a full install).

Every simulated arm starts as a freshly started dVRK console leaves it: DISABLED
and not homed. The player powers it on and homes it (``home_arm``) before it
plays, the hold stage does the same through ``/<ARM>/state_command``, as a lab
does from the console. Stages longer than a few seconds print their progress.

1. Models of the MTM and PSM: generated or loaded from cache, checked against
   the independent Lagrangian.
2. PSM: simulated_arm (/clock, at ``--real-time-factor``, 0.5 by default) + trajectory_player
   (the shipped excitation trajectory) + recorder -> a rosbag2 bag; then
   identification_service: ``/identify`` (SDP) on that bag -> per-joint errors,
   report and plot, and the identified base parameters against the
   simulator's own.
3. MTML: the shipped pose grid (every ``pose_stride``-th pose) played with
   move_jp, recorded, ``/identify`` (mlse) -> a gc file.
4. gravity_compensation with that gc file holding the simulated MTML at
   random poses (drift test: tip motion over 2 s under compensation only).
5. With ``--psm-gravity`` (longer: not in ``make demo``, which keeps within
   10 minutes; the stages' times: docs/results.md): PSM1's gravity at
   rest: static holds (``dvrk-ident trajectory holds``)
   played and recorded through the nodes, the identified model's gravity
   refitted to them (``dvrk-ident gc refit``: the residual at rest before and
   after), and gravity_compensation with the refitted file holding the
   simulated PSM1 (the identified model alone lets it fall: docs/gravity-compensation.md, "The drift
   test in simulation").
"""
from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path

import numpy as np

from dvrk_ident_ros.arm.player_phase import PlayerPhase
from dvrk_ident_ros.model.arm_model import load_model
from dvrk_ident_ros.model.physical import random_physical_parameters
from dvrk_ident_ros.model.reference import LagrangianReference


def _model_stage(arm: str, rng: np.random.Generator) -> None:
    model = load_model(arm)
    source = "cache" if model.build.cache_used else "generated"
    print(f"[{arm.upper()}] model {source} in {model.build.seconds:.2f} s: "
          f"{len(model.parameter_names)} standard -> {model.base.count} base parameters")
    combined = [t for t in model.base_parameter_names if " + " in t or " - " in t]
    for text in combined[:2]:
        print(f"      e.g. {text[:100]}{'...' if len(text) > 100 else ''}")
    ref = LagrangianReference(model.description)
    delta = random_physical_parameters(model.layout, rng)
    worst = 0.0
    for _ in range(3):
        q, qd, qdd = rng.uniform(-1, 1, model.dof), rng.normal(0, 1, model.dof), rng.normal(0, 2, model.dof)
        ours = model.torques(q, qd, qdd, delta)[0] - model.known_torques(q)[0]
        theirs = ref.torques(q, qd, qdd, delta)
        worst = max(worst, float(np.linalg.norm(ours - theirs) / np.linalg.norm(theirs)))
    q = rng.uniform(-1, 1, (6000, model.dof))
    model.regressor(q, q, q)  # warm-up: the first call pays for page faults
    start = time.perf_counter()
    model.regressor(q, q, q)
    elapsed = time.perf_counter() - start
    print(f"      regressor vs independent Lagrangian: worst relative error {worst:.1e}; "
          f"6000 samples in {elapsed * 1e3:.1f} ms")


PSM, MTM = "PSM1", "MTML"
DEMO_HOLD_SETTLE, DEMO_HOLD_SAMPLES = 2.0, 50  # s, samples at 100 Hz: 2.5 s at rest, gc refit keeps the last 1.5 s
#: rad (insertion: m); twice the robot's defaults: streamed servo_jp in simulation depends on the machine keeping up
SIM_PSM_TRACKING_LIMITS = [0.3, 0.3, 0.04, 0.3, 0.3, 0.3, 0.3]


def _fresh(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    return path


def _collect(arm: str, trajectory: Path, bag: Path, logs: Path, env: dict, player: dict, rtf: float,
             timeout: float, rate: float = 100.0) -> float:
    """simulated_arm (+ /clock) + recorder + trajectory_player (autostart) until the player is done. The recorder
    expects the player (as collect.launch.py): a failed run leaves no bag that looks good at ``bag``."""
    from dvrk_ident_ros.errors import DvrkIdentError
    from dvrk_ident_ros.jobs.launcher import NodeProcess
    from dvrk_ident_ros.ros.clients import ArmClient

    start = time.perf_counter()
    # the simulated arm starts DISABLED and not homed; the player powers it on and homes it (home_arm)
    # the stream replayed at its stamps (servo_timing stamp): held as the dVRK holds it (the node's default), the
    # 200 Hz stream's steps reach the efforts the identification fits (docs/simulator.md)
    with NodeProcess("simulated_arm", {"arm": arm, "publish_clock": True, "real_time_factor": rtf,
                                       "publish_rate": rate, "servo_timing": "stamp"}, log_dir=logs, env=env,
                     name=f"sim_{arm}"), \
            NodeProcess("recorder", {"arm": arm, "bag_path": str(bag), "use_sim_time": True, "expect_player": True},
                        log_dir=logs, env=env, name=f"recorder_{arm}"), \
            ArmClient(arm, f"demo_progress_{arm}") as client:
        play = NodeProcess("trajectory_player", {"arm": arm, "trajectory_file": str(trajectory), "autostart": True,
                                                 "home_arm": True, "use_sim_time": True, **player}, log_dir=logs,
                           env=env, name=f"player_{arm}")
        code = _follow_player(play, client, timeout)
        play.stop()
    if code != 0:
        raise DvrkIdentError(f"the player failed (exit {code}):\n{play.tail()}")
    return time.perf_counter() - start


def _follow_player(play, client, timeout: float, every: float = 5.0) -> int:
    """Wait for the player to exit, printing the arm's state and the player's progress (its status on the arm's
    own topic, /dvrk_ident/<ARM>/player_status) every ``every`` s."""
    from dvrk_ident_ros.errors import DvrkIdentError

    start = time.monotonic()
    last_print = start
    said_ready = False
    while True:
        try:
            return play.wait(min(0.5, max(0.05, start + timeout - time.monotonic())))
        except DvrkIdentError:
            if time.monotonic() - start > timeout:
                raise
        now = time.monotonic()
        if not said_ready and client.operating.ready:
            said_ready = True
            print(f"      {client.arm} powered on and homed ({now - start:.0f} s)", flush=True)
        if now - last_print < every:
            continue
        last_print = now
        elapsed = now - start
        status = client.player_status
        if status is None or status.phase == PlayerPhase.IDLE:
            waiting = client.operating.reason() or "the recorder"
            print(f"      {elapsed:4.0f} s: waiting for {waiting}", flush=True)
            continue
        # pose_index names the pose in the whole grid; progress is (k + 1/2) / N over the poses played
        played = round(status.progress * status.pose_count - 0.5) + 1
        pose = f"pose {min(played, status.pose_count)} of {status.pose_count}, " if status.pose_count else ""
        remaining = elapsed * (1.0 - status.progress) / status.progress if status.progress > 0.01 else 0.0
        print(f"      {elapsed:4.0f} s: {pose}{100 * status.progress:.0f} % played, about {remaining:.0f} s "
              "remaining", flush=True)


def _identify(client, out: Path, **request):
    """/identify; results in the service's own output_directory (``out``): a request may only name a
    directory inside it, "" is that directory itself."""
    from dvrk_ident_ros.errors import DvrkIdentError

    response = client.identify(output_directory="", progress_every=5.0, **request)
    if not response.success:
        raise DvrkIdentError(f"/identify failed: {response.message}")
    return response


def _psm_stage(out: Path, logs: Path, env: dict, rtf: float, periods: int) -> Path:
    from dvrk_ident_ros.data.loaders import load_dataset
    from dvrk_ident_ros.model.description import config_directory

    bag = _fresh(out / "psm_bag")
    trajectory = config_directory() / "trajectories" / "psm_fourier.yaml"
    # streamed servo_jp in simulation depends on the machine keeping up: a looser tracking limit than on the robot
    seconds = _collect(PSM, trajectory, bag, logs, env, {"periods": periods, "stream_rate": 200.0,
                                                         "tracking_error_limit": SIM_PSM_TRACKING_LIMITS}, rtf, 600.0,
                       rate=200.0)
    model = load_model("psm")
    data = load_dataset(bag, "bag", joints=model.dof, dvrk_from_motor=model.A)
    print(f"[{PSM}] simulated arm (servo_jp replayed at its stamps) + trajectory player + recorder: "
          f"{data.t[-1] - data.t[0]:.1f} s of {trajectory.name} recorded in {seconds:.1f} s ({len(data.t)} samples) "
          f"-> {bag}")
    return bag


def _psm_identify(client, bag: Path, out: Path) -> Path:
    from dvrk_ident_ros.identify.compare import relative_parameter_errors
    from dvrk_ident_ros.identify.results import IdentificationResult
    from dvrk_ident_ros.sim.config import load_sim_config

    start = time.perf_counter()
    r = _identify(client, out, arm="psm", method="sdp", data_files=[str(bag)], data_format="bag")
    stages = ", ".join(f"{t.stage} {t.seconds:.2f}" for t in r.timings if t.stage != "total")
    print(f"[{PSM}] /identify sdp: {r.solver_status} in {time.perf_counter() - start:.1f} s ({stages} s)")
    print("      relative error per joint (%): " + " ".join(f"{100 * e:.1f}" for e in r.relative_error))
    result = IdentificationResult.load(r.result_file)
    config = load_sim_config("psm")
    model = config.model
    truth = model.base.from_standard(config.delta)
    err = relative_parameter_errors(model.base_parameter_names, result.base, truth)
    print(f"      base parameters vs the simulator's own: within 5 %: {int(np.sum(err < 0.05))}/{len(err)}, "
          f"within 20 %: {int(np.sum(err < 0.2))}; median error {100 * np.median(err):.1f} %")
    print(f"      {r.result_file}, {r.report_file}, {Path(r.result_file).with_suffix('')}_torques.png")
    return Path(r.result_file)


def _mtm_stage(client, out: Path, logs: Path, env: dict, stride: int) -> Path:
    from dvrk_ident_ros.model.description import config_directory

    bag = _fresh(out / "mtml_grid_bag")
    grid = config_directory() / "grids" / "mtml_gc_grid.yaml"
    seconds = _collect(MTM, grid, bag, logs, env, {"pose_stride": stride, "sweep_stride": 2}, 0.0, 1200.0)
    print(f"[{MTM}] pose grid {grid.name} (every {stride}th pose of every 2nd sweep pair) played and recorded in "
          f"{seconds:.0f} s -> {bag}")
    start = time.perf_counter()
    r = _identify(client, out, arm="mtml", method="mlse", data_files=[str(bag)])
    print(f"[{MTM}] /identify mlse in {time.perf_counter() - start:.1f} s: relative error per joint (%) "
          + " ".join(f"{100 * e:.1f}" for e in r.relative_error) + f" -> {r.result_file}")
    return Path(r.result_file)


#: rad (m): a pose is reached this close (the player's pose check too): a PSM rests under its setpoint, its PID
#: having no integral term (config/sim/README.md; how far: docs/results.md)
REACH_TOLERANCE = 0.02


def _reach(client, goal: np.ndarray, attempts: int = 3, timeout: float = 15.0) -> bool:
    """Send move_jp until the arm is within ``REACH_TOLERANCE`` of ``goal``.

    The previous node's last (zero) servo_jf and this move_jp come from two
    processes: a late servo_jf can arrive second and leave the arm in effort
    mode, as the dVRK would. So the move is sent again until the pose is reached."""
    from dvrk_ident_ros.errors import DvrkIdentError
    from dvrk_ident_ros.jobs.launcher import wait_for

    for _ in range(attempts):
        client.move_jp(goal)
        try:
            wait_for(lambda: np.max(np.abs(client.position() - goal)) < REACH_TOLERANCE, timeout, "the pose")
            return True
        except DvrkIdentError:
            pass
    return False


def _hold_with_node(arm: str, parameter_file: Path, goals: np.ndarray, reference, logs: Path,
                    env: dict) -> tuple[np.ndarray, np.ndarray]:
    """The gravity_compensation node with ``parameter_file`` holding the simulated ``arm`` at each of ``goals``
    (dVRK joint space; a PSM's jaw: the goal's value for the kinematics, never commanded) for 2 s of simulated
    time under its torques alone (the drift test); tip drift per pose (mm, deg)."""
    from dvrk_ident_ros.arm.registry import arm_spec
    from dvrk_ident_ros.errors import DvrkIdentError
    from dvrk_ident_ros.jobs.launcher import NodeProcess, wait_for
    from dvrk_ident_ros.ros.clients import ArmClient
    from dvrk_ident_ros.sim.experiments import tip_drift

    n = arm_spec(arm).arm_joints  # on measured_js and move_jp: all but a PSM's jaw

    def with_jaw(goal: np.ndarray, q: np.ndarray) -> np.ndarray:
        full = goal.copy()
        full[:n] = q
        return full

    drift_mm: list[float] = []
    drift_deg: list[float] = []
    # the simulator owns time (/clock, real time at most): on a starved machine simulated time slows down
    # instead of running on without the compensation's answers, and the 2 s are 2 s of simulated time
    with NodeProcess("simulated_arm", {"arm": arm, "publish_rate": 500.0, "publish_clock": True,
                                       "real_time_factor": 1.0}, log_dir=logs, env=env,
                     name=f"sim_{arm}_hold"), ArmClient(arm, f"demo_hold_{arm}") as client:
        seconds = client.home(120.0)  # a DISABLED, unhomed arm, as the console starts it: power on, home
        print(f"[{arm}] powered on and homed in {seconds:.1f} s (state_command enable, home)", flush=True)
        client.position(30.0)
        skipped = []
        hold_start = time.monotonic()
        for k, goal in enumerate(goals):
            if k:
                per_pose = (time.monotonic() - hold_start) / k
                print(f"      pose {k + 1} of {len(goals)}: elapsed {time.monotonic() - hold_start:.0f} s, about "
                      f"{per_pose * (len(goals) - k):.0f} s remaining", flush=True)
            if not _reach(client, goal[:n]):
                state_age = time.monotonic() - client.state[0] if client.state is not None else float("nan")
                print(f"      pose {k} not reached after 3 move_jp (worst joint "
                      f"{np.max(np.abs(client.position() - goal[:n])):.3f} off, last state {state_age:.2f} s old): "
                      "skipped", flush=True)
                skipped.append(k)
                if len(skipped) > len(goals) // 2:
                    raise DvrkIdentError(f"the simulated {arm} reached only {k + 1 - len(skipped)} of {k + 1} poses")
                continue
            time.sleep(0.5)
            client.first_effort_stamp = None
            client.history.clear()
            client.recording = True
            with NodeProcess("gravity_compensation", {"arm": arm, "parameter_file": str(parameter_file),
                                                      "ramp_in_time": 0.0}, log_dir=logs, env=env,
                             name=f"gravity_compensation_{arm}_{k}"):
                wait_for(lambda: client.first_effort_stamp is not None, 30.0, "the first servo_jf")
                t0 = client.first_effort_stamp
                if t0 is None:
                    raise DvrkIdentError("wait_for returned without the first servo_jf stamp")
                t_end = t0 + 2.0
                wait_for(lambda end=t_end: client.recorded_until() >= end, 60.0, "2 s of simulated time")
            client.recording = False
            mm, deg = tip_drift(reference, with_jaw(goal, client.position_at(t0)),
                                with_jaw(goal, client.position_at(t_end)))
            drift_mm.append(mm)
            drift_deg.append(deg)
    return np.array(drift_mm), np.array(drift_deg)


def _hold_stage(gc_file: Path, logs: Path, env: dict, poses: int, seed: int) -> None:
    from dvrk_ident_ros.gc.fitting.loaders import load_poses
    from dvrk_ident_ros.sim.arm import SimulatedArm
    from dvrk_ident_ros.sim.config import load_sim_config
    from dvrk_ident_ros.sim.experiments import random_poses

    reference = SimulatedArm(load_sim_config("mtm"), MTM)  # for the limits and the kinematics
    data = load_poses(logs.parent / "mtml_grid_bag")
    goals = random_poses(reference, poses, np.random.default_rng(seed), fraction=0.8,
                         box=(data.q.min(0), data.q.max(0)))
    drift_mm, drift_deg = _hold_with_node(MTM, gc_file, goals, reference, logs, env)
    print(f"[{MTM}] gravity_compensation node holding the simulated arm, {len(drift_mm)} random poses x 2 s: tip drift "
          f"mean {np.mean(drift_mm):.1f} mm (max {np.max(drift_mm):.1f}), {np.mean(drift_deg):.2f} deg "
          f"(max {np.max(drift_deg):.2f}) (Lin 2019, real MTM: 4.6 mm, 2.31 deg)")


def _psm_gravity_stage(result_file: Path, out: Path, logs: Path, env: dict, holds: int, poses: int,
                       seed: int) -> None:
    """Stage 5 (module docstring; docs/gravity-compensation.md, "The drift test in simulation", PSM)."""
    from dvrk_ident_ros.excitation.files import save_grid
    from dvrk_ident_ros.excitation.holds import holds_grid
    from dvrk_ident_ros.jobs.offline import gravity_refit_job
    from dvrk_ident_ros.safety import CommandChecker
    from dvrk_ident_ros.sim.arm import SimulatedArm
    from dvrk_ident_ros.sim.config import load_sim_config
    from dvrk_ident_ros.sim.experiments import random_poses

    config = load_sim_config("psm")
    model = config.model
    grid_file = out / "psm1_holds.yaml"
    # shorter holds than `dvrk-ident trajectory holds` writes (2 s + 1 s): 2.5 s at rest
    grid = holds_grid(PSM, CommandChecker(model, PSM, section="hardware"), poses=holds, seed=seed,
                      settle=DEMO_HOLD_SETTLE, samples=DEMO_HOLD_SAMPLES)
    save_grid(grid_file, grid)
    bag = _fresh(out / "psm_holds_bag")
    seconds = _collect(PSM, grid_file, bag, logs, env, {}, 0.0, 600.0)
    print(f"[{PSM}] {len(grid['sweeps'][0]['poses'])} static holds ({grid_file.name}: {grid['approach']}, "
          f"settle {grid['settle_time']:g} s, "
          f"{grid['samples_per_pose']} samples each) played and recorded in {seconds:.0f} s -> {bag}")
    refit = gravity_refit_job(result_file, bag, out / f"{result_file.stem}-refit.json")
    print(f"[{PSM}] gc refit: {refit.summary.split(': ', 1)[1]} -> {refit.result_file}")
    reference = SimulatedArm(config, PSM, seed=seed)  # the limits and the kinematics
    goals = random_poses(reference, poses, np.random.default_rng(seed + 1), fraction=0.8)
    drift_mm, drift_deg = _hold_with_node(PSM, refit.result_file, goals, reference, logs, env)
    print(f"[{PSM}] gravity_compensation node with the refitted model holding the simulated arm, {len(drift_mm)} "
          f"random poses x 2 s: tip drift mean {np.mean(drift_mm):.2f} mm (max {np.max(drift_mm):.2f}), "
          f"{np.mean(drift_deg):.2f} deg (max {np.max(drift_deg):.2f}) (the identified model alone: 124 mm, "
          "python -m bench drift)")


def run_demo(args: argparse.Namespace) -> int:
    from dvrk_ident_ros.jobs.launcher import NodeProcess, isolation_variables, ros_environment
    from dvrk_ident_ros.ros.clients import ArmClient

    rng = np.random.default_rng(args.seed)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    logs = out / "logs"
    env = ros_environment()
    os.environ.update(isolation_variables(env))
    start = time.perf_counter()
    print(f"dvrk_ident demo (nodes on ROS_DOMAIN_ID {env['ROS_DOMAIN_ID']}; logs in {logs}/)")
    for arm in ("mtm", "psm"):
        _model_stage(arm, rng)
    bag = _psm_stage(out, logs, env, args.real_time_factor, args.periods)
    with NodeProcess("identification_service", {"output_directory": str(out)}, log_dir=logs, env=env), \
            ArmClient(PSM, "demo_identify") as client:
        psm_file = _psm_identify(client, bag, out)
        gc_file = _mtm_stage(client, out, logs, env, args.pose_stride)
    _hold_stage(gc_file, logs, env, args.hold_poses, args.seed)
    if args.psm_gravity:
        _psm_gravity_stage(psm_file, out, logs, env, args.psm_holds, args.psm_hold_poses, args.seed)
    print(f"done in {time.perf_counter() - start:.0f} s; outputs in {out}/")
    return 0


def add_demo_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the main job on simulated arms through the nodes and print a summary")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", default="demo-output", help="directory for bags, parameter files, reports, logs")
    p.add_argument("--real-time-factor", type=float, default=0.5,
                   help="PSM simulation speed under /clock (streamed servo_jp needs the CPU to keep up: at 1 on a "
                        "2-core machine the starved stream's setpoint steps left the simulated efforts aliased and "
                        "the fit 2-3 times worse)")
    p.add_argument("--periods", type=int, default=3, help="periods of the PSM excitation trajectory")
    p.add_argument("--pose-stride", type=int, default=10, help="play every k-th pose of the MTML grid")
    p.add_argument("--hold-poses", type=int, default=5, help="random poses held by the gravity compensation")
    p.add_argument("--psm-gravity", action="store_true",
                   help="end with the PSM's gravity at rest: static holds, gc refit, the node holding PSM1 (~80 s)")
    p.add_argument("--psm-holds", type=int, default=24,
                   help="PSM static holds for the gravity refit: 6 poses, each from both sides (at least 18: three "
                        "per gravity combination)")
    p.add_argument("--psm-hold-poses", type=int, default=2,
                   help="random poses the refitted PSM compensation holds")
    p.set_defaults(handler=run_demo)
