"""Issue 34 acceptance (the fit check before a take-over, gc/runtime/fit_check.py): how often a right file is
refused and a wrong file accepted, ROS-free.

The arm: the simulated MTML (dVRK 2.4, its own compensation on, as the node finds it), brought by move_jp to
random poses in the central 80 % of the shipped grid's range, settled 1 s, its commanded effort averaged over
0.2 s at 100 Hz (the node's window on ``setpoint_js``), for ``DVRK_IDENT_BENCH_FIT_POSES`` poses (default 30)
under each of two noise seeds. The files, each checked at every pose with the node's default tolerances:

- right: MLSE files of the same simulated arm (its shipped truth), from the shipped grid thinned as
  ``GRIDS`` says and from the real MTML-41878's grid (CUHK's poses, played on the simulated arm), under two
  noise seeds each (other seeds than the evaluation's);
- wrong: the real MTML's file (../shared's CUHK MTML-41878, fitted as ``dvrk-ident gc fit`` does) and the
  files of perturbed arms (the shipped truth's link masses and first moments scaled by N(1, s) and the
  centres of mass moved by N(0, c), as two arms of one design differ: ``PERTURBATIONS``), each fitted on the
  design grid;
- neither: the tests' 68-pose grid's files (excitation/grid.py NARROW_SPEC, a pipeline fixture no command
  offers), checked at poses of their own data's range widened by the check's margin; and at the design grid's,
  far outside it (printed apart).

Printed per file: the score's median and extremes over the poses and the poses refused (beyond the range its
data cover, or off the band). Then the real arm's own file at its held-out sweeps (../shared), the drift of the
wrong files where they were accepted, and the take-over guard (gc/runtime/takeover_guard.py) run at every
accepted (file, pose): what it stops. Then the same for the PSM (:func:`psm`): models identified on the
simulated PSM1 (right) and on perturbed PSMs (wrong), each refitted to the static holds of the arm it is checked
on, checked at random poses of the arm as shipped and with static friction, as the node does by default (the fit
probe, gc/runtime/fit_probe.py: the pose held from above and from below, ModelFitCheck.check_span), and at the pose
alone (``fit_probe:=false``, ModelFitCheck.check: printed beside); the guard behind the fit probe.
Pass: no right file refused or stopped, no wrong file left compensating. ``DVRK_IDENT_BENCH_FIT_ARMS``
("mtm,psm") chooses the arms.
"""
from __future__ import annotations

import dataclasses
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import NamedTuple

import numpy as np

from dvrk_ident_ros.excitation.files import load_grid
from dvrk_ident_ros.excitation.grid import narrow_grid
from dvrk_ident_ros.excitation.playback import GridPlayback
from dvrk_ident_ros.gc.fitting.fits import FITS
from dvrk_ident_ros.gc.fitting.gc_file import gc_parameters
from dvrk_ident_ros.gc.runtime.fit_check import FitCheck
from dvrk_ident_ros.gc.runtime.law import CompensationLaw
from dvrk_ident_ros.model.description import config_directory
from dvrk_ident_ros.sim.arm import SimulatedArm
from dvrk_ident_ros.sim.config import SimConfig, load_sim_config
from dvrk_ident_ros.sim.experiments import collect_pose_grid, random_poses

CUHK = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "cuhk-mtm-gc" / "MTML-41878"
#: (pose stride, sweep stride) of the shipped grid: the design's (3, 2) first; the demo's (10, 2)
GRIDS = ((3, 2), (5, 1), (5, 2), (10, 2))
FILE_SEEDS = (11, 12)
EVAL_SEEDS = (1, 2)
#: (relative spread of masses and first moments, spread of the centres of mass in m, seeds)
PERTURBATIONS = ((0.05, 0.002, (21, 22, 23)), (0.10, 0.005, (31, 32, 33)))
PERTURBED_GRID = (5, 2)
SETTLE, WINDOW, RATE = 1.0, 20, 100.0  # s after the move; samples averaged at RATE (the node's 0.2 s)
WORKERS = 2


def _law(data, source: str, orders: dict[int, int] | None = None) -> CompensationLaw:
    """The file `dvrk-ident gc fit` writes from ``data``, its own fit residual recorded."""
    return CompensationLaw(gc_parameters(FITS["mlse"](data, orders), data, "MTML", source, source))


def perturbed(config: SimConfig, spread: float, shift: float, seed: int) -> SimConfig:
    """The shipped truth with every link's mass and first moments scaled by N(1, spread) and its centre of mass
    moved by N(0, shift) m per axis: another arm of the same design."""
    rng = np.random.default_rng(seed)
    names = config.model.parameter_names
    delta = config.delta.copy()
    index = {name: i for i, name in enumerate(names)}
    for name in names:
        if not name.startswith("m"):
            continue
        link = name[1:]
        scale = 1.0 + spread * rng.normal()
        mass = delta[index[name]] * scale
        for axis in "xyz":
            k = index.get(f"l{link}{axis}")
            if k is not None:
                delta[k] = delta[k] * (1.0 + spread * rng.normal()) + mass * shift * rng.normal()
        delta[index[name]] = mass
    return dataclasses.replace(config, delta=delta)


def make_file(job: tuple[str, dict, tuple[int, int], int, float, float, int, dict | None]
              ) -> tuple[str, CompensationLaw | str]:
    """One file: (label, the law) or (label, why none), from (label, grid, strides, noise seed, perturbation
    spread, shift, seed, polynomial orders or None); a bag's rules (every pose kept, the cable's travel
    state), as `gc fit` loads a bag."""
    from dvrk_ident_ros.errors import DvrkIdentError

    label, grid, strides, seed, spread, shift, arm_seed, orders = job
    config = load_sim_config("mtm")
    if spread > 0:
        config = perturbed(config, spread, shift, arm_seed)
    arm = SimulatedArm(config, "MTML", seed=seed)
    playback = GridPlayback(grid, arm.checker, pose_stride=strides[0], sweep_stride=strides[1])
    try:
        return label, _law(collect_pose_grid(arm, playback, trim=(0, 0)), label, orders)
    except DvrkIdentError as exc:
        return label, str(exc)


def holding_efforts(config: SimConfig, poses: np.ndarray, seed: int,
                    arm_name: str = "MTML") -> tuple[np.ndarray, np.ndarray]:
    """Per pose: the arm's mean position and commanded effort at rest (its PID and its own compensation)."""
    arm = SimulatedArm(config, arm_name, seed=seed)
    rests = [rest_at(arm, goal) for goal in poses]
    return np.array([q for q, _ in rests]), np.array([e for _, e in rests])


def rest_at(arm: SimulatedArm, goal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The arm moved to ``goal`` by its PID, settled SETTLE s, then its mean position and commanded effort over
    WINDOW samples at RATE (the node's window on setpoint_js)."""
    steps = max(1, round(1.0 / (RATE * arm.dt)))
    arm.advance(arm.move_jp(goal) + SETTLE)
    qs, efforts = [], []
    for _ in range(WINDOW):
        sample = arm.sample()
        qs.append(sample.position)
        efforts.append(sample.setpoint_effort)
        arm.advance(steps * arm.dt)
    return np.mean(qs, axis=0), np.mean(efforts, axis=0)


def run() -> bool:
    arms = os.environ.get("DVRK_IDENT_BENCH_FIT_ARMS", "mtm,psm").split(",")
    ok = True
    if "mtm" in arms:
        ok = mtm() and ok
    if "psm" in arms:
        ok = psm() and ok
    return ok


class Held(NamedTuple):
    """The arm at rest at one random pose (:func:`held_poses`)."""

    goal: np.ndarray
    seed: int
    q: np.ndarray
    effort: np.ndarray


def held_poses(box: tuple[np.ndarray, np.ndarray], fraction: float, rng_base: int) -> list[Held]:
    """The simulated MTML held by its PID at ``DVRK_IDENT_BENCH_FIT_POSES`` random poses in the central
    ``fraction`` of ``box`` under each evaluation seed."""
    count = int(os.environ.get("DVRK_IDENT_BENCH_FIT_POSES", "30"))
    config = load_sim_config("mtm")
    reference = SimulatedArm(config, "MTML", noise=False)
    held = []
    for seed in EVAL_SEEDS:
        poses = random_poses(reference, count, np.random.default_rng(rng_base + seed), fraction=fraction, box=box)
        q, effort = holding_efforts(config, poses, seed)
        held += [Held(goal, seed, qi, ei) for goal, qi, ei in zip(poses, q, effort, strict=True)]
    return held


def narrow_box() -> tuple[np.ndarray, np.ndarray]:
    """The range the narrow grid's poses span, widened on joints 1-6 by the fit check's margin (RANGE_MARGIN_DEG
    plus RANGE_REACH times the range): where its files are taken at their word (gc/runtime/fit_check.py).
    :func:`mtm` draws in its central 95 % (a pose at the margin itself is on the edge of the rule)."""
    from dvrk_ident_ros.gc.runtime.fit_check import RANGE_JOINTS, RANGE_MARGIN_DEG, RANGE_REACH

    box = np.vstack([sweep["poses"] for sweep in narrow_grid("MTML")["sweeps"]])
    low, high = box.min(0), box.max(0)
    margin = np.radians(RANGE_MARGIN_DEG) + RANGE_REACH * (high - low)
    margin[RANGE_JOINTS:] = 0.0
    return low - margin, high + margin


def mtm() -> bool:
    grid = load_grid(config_directory() / "grids" / "mtml_gc_grid.yaml", arm="MTML")
    box = np.vstack([s["poses"] for s in grid["sweeps"]])
    start = time.perf_counter()
    design = held_poses((box.min(0), box.max(0)), 0.8, 100)
    narrow = held_poses(narrow_box(), 0.95, 300)
    print(f"  the simulated MTML held at {len(design)} random poses of the design grid's range and {len(narrow)} of "
          f"the narrow grid's (widened by the check's range margin), seeds {EVAL_SEEDS} "
          f"({time.perf_counter() - start:.0f} s here)", flush=True)

    jobs, kind = [], {}
    for strides in GRIDS:
        for seed in FILE_SEEDS:
            label = f"same arm, every {strides[0]}th pose of every {strides[1]} sweep pair(s), seed {seed}"
            jobs.append((label, grid, strides, seed, 0.0, 0.0, 0, None))
            kind[label] = "right"
    if CUHK.is_dir():
        real_grid = cuhk_grid()
        for seed in FILE_SEEDS:
            label = f"same arm, the real MTML-41878's grid (CUHK's 4312 poses), seed {seed}"
            jobs.append((label, real_grid, (1, 1), seed, 0.0, 0.0, 0, None))
            kind[label] = "right"
    for seed in FILE_SEEDS:
        label = f"same arm, the 68-pose test grid (first-order polynomials), seed {seed}"
        jobs.append((label, narrow_grid("MTML"), (1, 1), seed, 0.0, 0.0, 0, {i: 1 for i in range(1, 7)}))
        kind[label] = "fixture"
    for spread, shift, seeds in PERTURBATIONS:
        for arm_seed in seeds:
            label = f"perturbed arm (masses {100 * spread:.0f} %, centres {1e3 * shift:.0f} mm), seed {arm_seed}"
            jobs.append((label, grid, PERTURBED_GRID, FILE_SEEDS[0], spread, shift, arm_seed, None))
            kind[label] = "wrong"
    made: list[tuple[str, str, CompensationLaw]] = []
    start = time.perf_counter()
    with ProcessPoolExecutor(WORKERS) as pool:
        for label, law in pool.map(make_file, jobs):
            if isinstance(law, str):
                print(f"    no file: {label}: {law}", flush=True)
            else:
                made.append((label, kind[label], law))
    print(f"  {len(made)} files made on the simulated arms ({time.perf_counter() - start:.0f} s here, "
          f"{WORKERS} processes)", flush=True)
    if CUHK.is_dir():
        from dvrk_ident_ros.gc.fitting.loaders import load_poses

        made.append(("real MTML-41878 (../shared, CUHK)", "wrong", _law(load_poses(CUHK), "41878")))
    else:
        print(f"  {CUHK} absent: the real arm's file and grid are left out")

    def poses_of(kind: str) -> list[Held]:
        return narrow if kind == "fixture" else design

    print("  each file at the poses of the range its data cover: the design grid's (the 68-pose test grid's files: "
          "its own, widened by the check's margin)")
    print(f"  {'file':<72} {'right':>5} {'median':>7} {'min':>6} {'max':>6} refused")
    wrong_accepted = right_refused = right_pairs = wrong_pairs = 0
    distances, accepted_wrong, accepted = [], [], {}
    for label, what, law in made:
        check = FitCheck(law)
        verdicts = [check.check(h.q, h.effort) for h in poses_of(what)]
        scores = np.array([v.score for v in verdicts])
        fits = np.array([v.fits for v in verdicts], dtype=bool)
        if what != "fixture":
            distances.append([v.distance for v in verdicts])
        accepted[label] = [h for h, ok in zip(poses_of(what), fits, strict=True) if ok]
        refused = int(np.sum(~fits))
        if what == "right":
            right_refused += refused
            right_pairs += len(fits)
        elif what == "wrong":
            wrong_accepted += len(fits) - refused
            wrong_pairs += len(fits)
            accepted_wrong += [(law, h) for h in accepted[label]]
        shown = {"right": "yes", "wrong": "no", "fixture": "(1)"}[what]
        print(f"  {label:<72} {shown:>5} {np.median(scores):7.2f} {scores.min():6.2f} "
              f"{scores.max():6.2f} {refused:3d}/{len(fits)}", flush=True)
    print("  (1) the tests' 68-pose grid (0.2 s settles, joints swept 10-20 deg, the wrist pitch held at -90 to 90 deg "
          "by the other sweeps, swept over 0-20 deg only): counted neither right nor wrong; the take-over guard "
          "below shows whether its files hold the arm even inside their own range")
    files = [(label, what == "right", law) for label, what, law in made if what != "fixture"]
    fixtures = [(label, True, law) for label, what, law in made if what == "fixture"]
    out = Path(__file__).resolve().parent.parent / "build" / "bench-fit-check.npz"
    out.parent.mkdir(exist_ok=True)
    np.savez(out, distance=np.array(distances), right=np.array([r for _, r, _ in files]),
             labels=np.array([label for label, _, _ in files]))
    print(f"  per-joint distances (N m, file x pose x joint; the files checked at the design grid's poses) in {out}")
    narrow_outside(fixtures, design)
    real_refused, real_pairs = real_arm_held_out()
    if accepted_wrong:
        drift_of_accepted(accepted_wrong, files[0][2])
    start = time.perf_counter()
    trips, _, stopped, _ = guard_rates(files, accepted)
    if fixtures:
        print("  the 68-pose test grid's files at their own range, behind the check:")
        guard_rates(fixtures, accepted, sums=False)
    print(f"  ({time.perf_counter() - start:.0f} s here)")
    print(f"  fit_check: right files refused {right_refused}/{right_pairs} (simulated) and {real_refused}/"
          f"{real_pairs} (real MTML-41878, held-out sweeps), wrong files accepted {wrong_accepted}/{wrong_pairs} "
          f"(goal 0 and 0); with the take-over guard: right files stopped {right_refused + trips}/{right_pairs}, "
          f"wrong files left compensating {wrong_accepted - stopped}/{wrong_pairs}")
    return right_refused + trips == 0 and real_refused == 0 and wrong_accepted - stopped == 0


def cuhk_grid() -> dict:
    """The pose grid of CUHK's MTML-41878 recordings (../shared; the MLSE tool's grid, as its bags were trimmed to
    the poses `gc fit` keeps): each recorded sweep's poses in order, to play on the simulated MTML."""
    from dvrk_ident_ros.gc.fitting.loaders import load_poses

    data = load_poses(CUHK)
    sweeps = []
    for sweep in dict.fromkeys(data.sweep.tolist()):
        mine = data.sweep == sweep
        sweeps.append({"estimated_joint": int(data.joint[mine][0]), "auxiliary_joint": None,
                       "auxiliary_value": float(data.auxiliary[mine][0]),
                       "direction": "positive" if data.direction[mine][0] > 0 else "negative",
                       "poses": data.q[mine].tolist()})
    return {"arm": "MTML", "coordinates": "dvrk", "units": "rad", "settle_time": 0.5, "samples_per_pose": 10,
            "sweeps": sweeps}


def narrow_outside(files: list, design: list[Held]) -> None:
    """The narrow grid's files at the design grid's poses, mostly far outside the 10-20 deg their grid swept:
    refused for the range; what the band alone would say there, and what such a file does to the arm where
    the band would have let it take over (bench drift's 2 s drift test)."""
    from dvrk_ident_ros.sim.experiments import drift_test

    for label, _, law in files:
        check = FitCheck(law)
        verdicts = [check.check(h.q, h.effort) for h in design]
        outside = sum(bool(v.outside) for v in verdicts)
        band_ok = [h for h, v in zip(design, verdicts, strict=True) if v.outside and v.score <= 1.0]
        drift = [drift_test(SimulatedArm(load_sim_config("mtm"), "MTML", seed=h.seed), law,
                            h.goal[None]).position_mm[0] for h in band_ok[:10]]
        shown = f", tip drift over 2 s at 10 of them: max {np.nanmax(drift):.1f} mm" if drift else ""
        print(f"  {label}, at the design grid's poses: refused as outside its data's range {outside}/{len(design)}, "
              f"refused by the band {sum(not v.fits and not v.outside for v in verdicts)}; of those outside, the "
              f"band alone would have accepted {len(band_ok)}{shown}")


def real_arm_held_out() -> tuple[int, int]:
    """A right file on a real arm: MLSE refitted on the CUHK MTML-41878 data without each fold of whole sweeps
    (gc/validation/validation.py), checked at the held-out sweeps' poses against their recorded holding efforts; and at
    the 10 % farthest poses of each joint (outside the refit's range: extrapolation, printed apart)."""
    from dvrk_ident_ros.gc.fitting.folds import held_out_folds
    from dvrk_ident_ros.gc.fitting.loaders import load_poses

    if not CUHK.is_dir():
        print(f"  {CUHK} absent: no real arm's held-out check")
        return 0, 0
    data = load_poses(CUHK)
    by_family: dict[str, list] = {}
    for fold in held_out_folds(data):
        check = FitCheck(_law(data.select(~fold.test), "fold"))
        held = data.select(fold.test)
        by_family.setdefault(fold.family, []).extend(check.check(q, tau) for q, tau in
                                                     zip(held.q, held.tau, strict=True))
    for family, verdicts in by_family.items():
        s = np.array([v.score for v in verdicts])
        outside = sum(bool(v.outside) for v in verdicts)
        print(f"  real MTML-41878, its own refitted file at held-out {family} poses: {len(s)} poses, score median "
              f"{np.median(s):.2f} p99 {np.percentile(s, 99):.2f} max {s.max():.2f}, refused "
              f"{sum(not v.fits for v in verdicts)} ({outside} outside the refit's range)")
    sweeps = by_family.get("sweeps", [])
    return sum(not v.fits for v in sweeps), len(sweeps)


class Takeover(NamedTuple):
    """One guarded take-over (:func:`guarded_takeover`)."""

    tripped: bool
    worst: float  # the largest displacement seen, over its joint's guard limit
    drift: float  # mm, the tip's over the window
    moved: np.ndarray  # per guarded joint, the largest displacement seen (rad; m for a prismatic joint)


def guarded_takeover(job: tuple) -> Takeover:
    """The take-over at one pose as the node does it, ROS-free: the arm brought there by its PID (its own
    compensation on) and settled 1 s, then the law alone at 1 kHz (servo_jf from each state sample) for the
    take-over guard's window."""
    from dvrk_ident_ros.gc.runtime.fit_probe import PROBE_SETTLE
    from dvrk_ident_ros.gc.runtime.model_law import ModelCompensation
    from dvrk_ident_ros.gc.runtime.takeover_guard import GUARD_LIMITS, TakeoverGuard
    from dvrk_ident_ros.sim.experiments import tip_drift

    law, goal, seed, *psm = job  # a PSM's: (its model's parameters, goal, seed, sticky, the fit probe's goals)
    if psm:
        config = load_sim_config("psm")
        if psm[0]:
            config = sticky_arm(config)
        law = ModelCompensation(config.model, law, np.array(config.spec.compensation_torque_limit, dtype=float))
        arm = SimulatedArm(config, "PSM1", seed=seed)
        guard = TakeoverGuard(GUARD_LIMITS["PSM"])
    else:
        arm = SimulatedArm(load_sim_config("mtm"), "MTML", seed=seed)
        guard = TakeoverGuard(GUARD_LIMITS["MTM"])
    arm.use_gravity_compensation(not psm)
    arm.advance(arm.move_jp(goal) + SETTLE)
    for through in psm[1] if psm else ():  # the fit probe's holds, the arm left at rest after the last
        arm.advance(arm.move_jp(np.concatenate([through, goal[len(through):]])) + PROBE_SETTLE + 0.3)
    steps = max(1, round(1e-3 / arm.dt))
    q0 = arm.q.copy()
    q, qd, _ = arm.measured()
    guard.start(q, qd, arm.time)
    arm.use_gravity_compensation(False)
    tripped = False
    guarded = len(guard.limit)
    moved = np.zeros(guarded)
    while guard.watching and arm.ready:
        q, qd, _ = arm.measured()
        moved = np.maximum(moved, np.abs(np.asarray(q[:guarded]) - q0[:guarded]))
        if guard.check(q, arm.time) >= 0:
            tripped = True
            break
        arm.servo_jf(np.asarray(law.compute(q, qd, 1.0), dtype=float))
        for _ in range(steps):
            arm.step()
    return Takeover(tripped, guard.worst, tip_drift(arm, q0, arm.q)[0], moved)


def guard_rates(files: list, accepted: dict[str, list[Held]], sums: bool = True) -> tuple[int, int, int, int]:
    """The take-over guard behind the check: at every pose where a file was accepted, does the guard end the
    compensation? Right files: how many trips (false); wrong files: how many accepted pairs it stops; per file
    the joints it stopped on."""
    from dvrk_ident_ros.gc.runtime.takeover_guard import MTM_GUARD_LIMIT

    jobs, kinds = [], []
    for label, right, law in files:
        for h in accepted[label]:
            jobs.append((law, h.goal, h.seed))
            kinds.append(right)
    with ProcessPoolExecutor(WORKERS) as pool:
        results = list(pool.map(guarded_takeover, jobs))
    k = 0
    for label, _right, _ in files:
        mine = results[k:k + len(accepted[label])]
        k += len(accepted[label])
        if mine:
            joints = [int(np.argmax(t.moved / np.asarray(MTM_GUARD_LIMIT[:len(t.moved)]))) + 1 for t in mine
                      if t.tripped]
            by_joint = ", ".join(f"joint {j} {joints.count(j)}" for j in sorted(set(joints)))
            print(f"    {label:<70} guard stopped {sum(t.tripped for t in mine):3d}/{len(mine):<3d} tip drift max "
                  f"{max(t.drift for t in mine):7.1f} mm" + (f" ({by_joint})" if joints else ""))
    right_trips = sum(t.tripped for t, r in zip(results, kinds, strict=True) if r)
    right_n = sum(kinds)
    wrong_stopped = sum(t.tripped for t, r in zip(results, kinds, strict=True) if not r)
    wrong_n = len(kinds) - right_n
    worst_right = max((t.worst for t, r in zip(results, kinds, strict=True) if r), default=0.0)
    drift_right = max((t.drift for t, r in zip(results, kinds, strict=True) if r), default=0.0)
    if sums:
        print(f"  take-over guard (gc/runtime/takeover_guard.py) where the check accepted: right files tripped "
              f"{right_trips}/{right_n} (worst {100 * worst_right:.0f} % of a limit, tip drift at most "
              f"{drift_right:.1f} mm), wrong files stopped {wrong_stopped}/{wrong_n}")
    return right_trips, right_n, wrong_stopped, wrong_n


def drift_of_accepted(pairs: list, right_law: CompensationLaw) -> None:
    """What an accepted wrong file does: the tip's drift over 2 s under it, at each pose where it was accepted,
    against the design grid's right file at the same poses (sim/experiments.py drift_test)."""
    from dvrk_ident_ros.sim.experiments import drift_test

    wrong_mm, right_mm = [], []
    for law, held in pairs:
        wrong_mm.append(drift_test(SimulatedArm(load_sim_config("mtm"), "MTML", seed=held.seed), law,
                                   held.goal[None]).position_mm[0])
        right_mm.append(drift_test(SimulatedArm(load_sim_config("mtm"), "MTML", seed=held.seed), right_law,
                                   held.goal[None]).position_mm[0])
    w, r = np.array(wrong_mm), np.array(right_mm)
    print(f"  where a wrong file was accepted ({len(w)} poses), tip drift over 2 s under it: median "
          f"{np.nanmedian(w):.2f} mm, max {np.nanmax(w):.2f} mm; under the right file (design grid) at the same "
          f"poses: median {np.nanmedian(r):.2f} mm, max {np.nanmax(r):.2f} mm")


# -- the PSM: an identified model's check (gc/runtime/fit_check.py ModelFitCheck) -------------------------------------
PSM_SEEDS = (3, 4)  # the simulated recording's noise: two identifications of the same arm
PSM_PERTURBATIONS = ((0.05, 0.002, (41, 42, 43)), (0.10, 0.005, (51, 52, 53)))
PSM_HOLD_POSES = 32


def sticky_arm(config: SimConfig) -> SimConfig:
    """The arm with static friction on joints 1-3 (Coulomb velocity 1e-4, as bench drift's sticky PSM)."""
    return dataclasses.replace(config, coulomb_velocity={"1": 1e-4, "2": 1e-4, "3": 1e-4})


def psm_file(job: tuple[str, int, float, float, int]) -> tuple[str, np.ndarray, list]:
    """(label, the identified model's parameters, per arm variant (as shipped, sticky) the same refitted to that
    arm's static holds with the holds' RMS residual) of a simulated PSM (its truth perturbed when ``spread`` > 0):
    SDP on a simulated recording of the shipped excitation trajectory (noise ``seed``), then `dvrk-ident gc
    refit`'s gravity refit to holds from both sides, as a lab refits on the arm it compensates."""
    from dvrk_ident_ros.excitation.files import load_trajectory
    from dvrk_ident_ros.excitation.holds import holds_grid
    from dvrk_ident_ros.gc.fitting.static_refit import refit_gravity
    from dvrk_ident_ros.identify.pipeline import identify
    from dvrk_ident_ros.sim.experiments import static_holds
    from dvrk_ident_ros.sim.physics import ArmPhysics
    from dvrk_ident_ros.sim.run import simulate_tracking
    from dvrk_ident_ros.sim.servo import PidServo

    label, seed, spread, shift, arm_seed = job
    config = load_sim_config("psm")
    if spread > 0:
        config = perturbed(config, spread, shift, arm_seed)
    model = config.model
    traj, meta = load_trajectory(config.spec.trajectory, arm=config.family)
    duration = int(meta.get("periods") or 3) * traj.period
    physics = ArmPhysics(model, config.delta, coulomb_velocity=config.coulomb_velocity)
    data = simulate_tracking(physics, PidServo(config.gains, model.dof), traj, duration, record_every=5,
                             noise=config.noise, rng=np.random.default_rng(seed))
    result = identify(model, [data], "sdp")
    delta = np.array([float(result.standard[name]) for name in model.parameter_names])
    refits = []
    for variant in (config, sticky_arm(config)):
        arm = SimulatedArm(variant, "PSM1", seed=seed)
        grid = holds_grid("PSM1", arm.checker, poses=PSM_HOLD_POSES, seed=seed, approach="both_sides", settle=2.0,
                          samples=100)
        holds = static_holds(arm, np.asarray(grid["sweeps"][0]["poses"]), settle=2.0, samples=100)
        refit = refit_gravity(model, delta, holds.q, holds.effort)
        refits.append((refit.delta, np.asarray(refit.after, dtype=float)))
    return label, delta, refits


class Probed(NamedTuple):
    """The PSM at rest at one pose (:func:`probed_poses`): the one-sided check's evidence and the probe's."""

    seed: int
    goal: np.ndarray
    q: np.ndarray  # at rest after the move, and its effort (the check with fit_probe:=false)
    effort: np.ndarray
    low: np.ndarray  # the efforts it rested under there from both sides (fit_probe), at q_probed
    high: np.ndarray
    q_probed: np.ndarray
    goals: tuple  # the probe's moves


def probed_poses(job: tuple) -> list[Probed]:
    """(sticky, poses, seed): per pose the arm (:func:`sticky_arm` or as shipped) moved there by its PID and held
    as :func:`holding_efforts` does, then the node's fit probe from there (sim/experiments.py run_fit_probe)."""
    from dvrk_ident_ros.excitation.holds import joint_ranges
    from dvrk_ident_ros.gc.runtime.fit_probe import BothSidesProbe
    from dvrk_ident_ros.sim.experiments import run_fit_probe

    is_sticky, poses, seed = job
    config = load_sim_config("psm")
    config = sticky_arm(config) if is_sticky else config
    arm = SimulatedArm(config, "PSM1", seed=seed)
    n = config.spec.arm_joints
    lower, upper = joint_ranges(arm.checker)
    out = []
    for goal in poses:
        q, effort = rest_at(arm, goal)
        probe = BothSidesProbe(arm.sample().setpoint_position[:n], lower[:n], upper[:n])
        run_fit_probe(arm, probe, rate=RATE, window=WINDOW)
        if probe.failed:
            raise RuntimeError(f"the fit probe failed at {goal}: {probe.failed}")
        low, high = probe.span()
        out.append(Probed(seed, goal, q[:n], effort[:n], np.array(low), np.array(high), arm.q[:n].copy(),
                          tuple(probe.goals)))
    return out


def psm() -> bool:
    """The PSM's files: each model identified once, refitted to the holds of the arm it is checked on (as
    shipped, and with static friction), checked at that arm's poses."""
    from dvrk_ident_ros.gc.runtime.fit_check import ModelFitCheck
    from dvrk_ident_ros.gc.runtime.model_law import ModelCompensation

    count = int(os.environ.get("DVRK_IDENT_BENCH_FIT_POSES", "30"))
    config = load_sim_config("psm")
    reference = SimulatedArm(config, "PSM1", noise=False)
    start = time.perf_counter()
    variants = (("as shipped", config, False), ("sticky", sticky_arm(config), True))
    held_jobs = [(is_sticky, random_poses(reference, count, np.random.default_rng(200 + seed), fraction=0.8), seed)
                 for seed in EVAL_SEEDS for _, _, is_sticky in variants]
    with ProcessPoolExecutor(WORKERS) as pool:
        held = list(pool.map(probed_poses, held_jobs))
    at_rest: dict[str, list[Probed]] = {name: [] for name, _, _ in variants}
    for k, rests in enumerate(held):
        at_rest[variants[k % len(variants)][0]] += rests
    print(f"  the simulated PSM1 held by its PID at {count} random poses under each of seeds {EVAL_SEEDS}, as "
          "shipped and with static friction on joints 1-3 (Coulomb velocity 1e-4, as bench drift's sticky PSM), "
          "then at each the node's fit probe (gc/runtime/fit_probe.py: the pose held from above and from below) "
          f"({time.perf_counter() - start:.0f} s here)", flush=True)
    jobs = [(f"same arm, identified (recording noise seed {s})", s, 0.0, 0.0, 0) for s in PSM_SEEDS]
    for spread, shift, seeds in PSM_PERTURBATIONS:
        jobs += [(f"perturbed arm (masses {100 * spread:.0f} %, centres {1e3 * shift:.0f} mm), seed {a}",
                  PSM_SEEDS[0], spread, shift, a) for a in seeds]
    start = time.perf_counter()
    with ProcessPoolExecutor(WORKERS) as pool:
        made = list(pool.map(psm_file, jobs))
    print(f"  {len(made)} PSM models identified, each refitted to the holds of both arms "
          f"({time.perf_counter() - start:.0f} s here, {WORKERS} processes)")
    print(f"  {'file':<72} {'right':>5} score median, min, max, refused: fit probe (the default); at the pose alone "
          "(fit_probe:=false)")
    right_refused = right_pairs = wrong_accepted = wrong_pairs = alone_right = alone_wrong = 0
    limit = np.array(config.spec.compensation_torque_limit, dtype=float)
    checked = []  # (kind, delta, sticky, accepted rests)
    for (label, identified, refits), job in zip(made, jobs, strict=True):
        same_arm = job[2] == 0.0
        for (variant, _, sticky), (refitted, residual) in zip(variants, refits, strict=True):
            for delta, kind, holds, source in (
                    (identified, "unrefitted" if same_arm else "wrong", None, f"{label} ({variant})"),
                    (refitted, "right" if same_arm else "wrong", residual, f"{label}, refitted ({variant})")):
                if delta is identified and sticky:
                    continue  # the unrefitted model once per variant is enough: checked on the shipped arm only
                check = ModelFitCheck(ModelCompensation(config.model, delta, limit, source, holds))
                rests = at_rest[variant]
                scores = np.array([check.check_span(r.q_probed, r.low, r.high).score for r in rests])
                alone = np.array([check.check(r.q, r.effort).score for r in rests])
                refused, refused_alone = int(np.sum(scores > 1.0)), int(np.sum(alone > 1.0))
                if kind == "right":
                    right_refused, right_pairs = right_refused + refused, right_pairs + len(scores)
                    alone_right += refused_alone
                elif kind == "wrong":
                    wrong_accepted, wrong_pairs = wrong_accepted + len(scores) - refused, wrong_pairs + len(scores)
                    alone_wrong += len(alone) - refused_alone
                shown = {"right": "yes", "wrong": "no", "unrefitted": "(1)"}[kind]
                print(f"  {source:<72} {shown:>5} {np.median(scores):6.2f} {scores.min():6.2f} {scores.max():6.2f} "
                      f"{refused:3d}/{len(scores)}; {np.median(alone):6.2f} {alone.min():6.2f} {alone.max():6.2f} "
                      f"{refused_alone:3d}/{len(alone)}", flush=True)
                checked.append((kind, delta, sticky, [rests[k] for k in np.flatnonzero(scores <= 1.0)]))
    print("  (1) the same arm's identified model before its gravity refit: not the file a lab compensates a PSM "
          "with (`dvrk-ident gc refit` first), counted neither right nor wrong")
    print(f"  the check at the pose alone (fit_probe:=false): right files refused {alone_right}/{right_pairs}, wrong "
          f"files accepted {alone_wrong}/{wrong_pairs}")
    guard_jobs, guard_kind = [], []
    for kind, delta, sticky, accepted in checked:
        for r in accepted:
            guard_jobs.append((delta, r.goal, r.seed, sticky, r.goals))
            guard_kind.append(kind)
    start = time.perf_counter()
    with ProcessPoolExecutor(WORKERS) as pool:
        results = list(pool.map(guarded_takeover, guard_jobs))
    kinds = np.array(guard_kind)
    trips = np.array([t.tripped for t in results], dtype=bool)
    drift = np.array([t.drift for t in results])
    moved = np.array([t.moved for t in results]).reshape(len(results), -1)
    print(f"  take-over guard where the fit probe accepted ({time.perf_counter() - start:.0f} s here), tip drift "
          "over its window, and each joint's largest displacement (rad; insertion mm) of those left compensating:")
    for kind in ("right", "unrefitted", "wrong"):
        mine = kinds == kind
        if mine.any():
            left = moved[mine & ~trips].max(axis=0, initial=0.0) * np.where(np.arange(moved.shape[1]) == 2, 1e3, 1.0)
            print(f"    {kind:<10} files: stopped {int(trips[mine].sum())}/{int(mine.sum())}, tip drift of those left "
                  f"compensating at most {drift[mine & ~trips].max(initial=0.0):.1f} mm (of all "
                  f"{drift[mine].max():.1f} mm); displacement " + " ".join(f"{x:.4f}" for x in left))
    sticky = np.array([job[3] for job in guard_jobs], dtype=bool)
    left = (kinds == "wrong") & ~trips
    if left.any():
        print(f"    the wrong files left compensating: {int(np.sum(left & ~sticky))} on the arm as shipped, "
              f"{int(np.sum(left & sticky))} on the arm with static friction")
    right_refused += int(trips[kinds == "right"].sum()) if len(kinds) else 0
    wrong_accepted -= int(trips[kinds == "wrong"].sum()) if len(kinds) else 0
    print(f"  fit_check PSM, with the take-over guard: right files stopped {right_refused}/{right_pairs}, wrong "
          f"files left compensating {wrong_accepted}/{wrong_pairs} (goal 0 and 0)")
    return right_refused == 0 and wrong_accepted == 0
