"""``dvrk-ident trajectory optimize | check | grid | holds``."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from dvrk_ident_ros import __version__
from dvrk_ident_ros.arm.registry import arm_spec
from dvrk_ident_ros.errors import DvrkIdentError, SolverError
from dvrk_ident_ros.excitation import holds
from dvrk_ident_ros.excitation.files import load_trajectory, save_grid, save_trajectory
from dvrk_ident_ros.excitation.grid import make_grid
from dvrk_ident_ros.excitation.objective import condition_number, verify
from dvrk_ident_ros.excitation.optimize import DEFAULT_ITERATIONS, DEFAULT_STARTS, optimise
from dvrk_ident_ros.files import add_command_group, resolve_package_file
from dvrk_ident_ros.model.arm_model import load_model
from dvrk_ident_ros.model.limits import cartesian_boxes, coordinate_limits


def arm_family(arm: str) -> str:
    """The arm family's model of a description (psm_simplified describes a psm: the arm registry's ``models``);
    a description outside the registry (a .yaml path) is its own."""
    try:
        return arm_spec(arm).model
    except DvrkIdentError:
        return arm


def default_frequency(arm: str) -> float:
    """`trajectory optimize`'s base frequency: the arm registry's ``base_frequency`` (0.1 Hz outside it)."""
    try:
        return arm_spec(arm).base_frequency
    except DvrkIdentError:
        return 0.1


def _optimize(args: argparse.Namespace) -> int:
    model = load_model(args.arm)
    limits = coordinate_limits(model, args.variant)
    boxes = cartesian_boxes(model)
    frequency = args.base_frequency or default_frequency(model.description.arm)
    print(f"optimising a {args.harmonics}-harmonic trajectory at {frequency} Hz for the {model.description.arm} "
          f"({len(limits)} limited coordinates, {len(boxes)} Cartesian boxes, {args.starts} starts, seed {args.seed})",
          file=sys.stderr)
    initial = None
    if args.initial:
        initial, _ = load_trajectory(resolve_package_file(args.initial, "trajectory file"),
                                     arm=arm_family(model.description.arm), joints=model.dof)
    result = optimise(model, limits, boxes, harmonics=args.harmonics, base_frequency=frequency, starts=args.starts,
                      seed=args.seed, max_iterations=args.iterations, progress=not args.quiet, initial=initial,
                      workers=args.workers)
    note = (f"dvrk-ident {__version__} trajectory optimize --arm {args.arm} --seed {args.seed} "
            f"--starts {args.starts} --iterations {args.iterations}"
            + (f" --initial {Path(args.initial).name}" if args.initial else "")
            + f"; optimised on the {model.description.arm} model")
    save_trajectory(args.out, result.trajectory, arm=arm_family(model.description.arm), variant=args.variant,
                    condition_number=result.condition_number, description_hash=model.description.content_hash,
                    note=note)
    worst = min(result.margins, key=lambda m: m.margin)
    explored = sorted(c for c in result.starts if np.isfinite(c))
    summary = (f"explorations: best {', '.join(f'{c:.1f}' for c in explored[:5])}, median "
               f"{np.median(explored):.1f} of {len(explored)}; " if explored else "")
    print(f"condition number {result.condition_number:.1f} ({summary}"
          f"{len(result.starts) - len(explored)} starts failed) in {result.seconds:.0f} s; worst margin "
          f"{worst.margin:.4g} ({worst.name}, {worst.kind}) at 1 kHz; written to {args.out}")
    return 0


def _check(args: argparse.Namespace) -> int:
    model = load_model(args.arm)
    traj, meta = load_trajectory(resolve_package_file(args.file, "trajectory file"),
                                 arm=arm_family(model.description.arm), joints=model.dof)
    variant = args.variant or meta.get("variant")
    margins = verify(model, traj, coordinate_limits(model, variant), cartesian_boxes(model))
    cond = condition_number(model, traj, 120)
    print(f"{args.file}: {traj.harmonics} harmonics at {traj.base_frequency} Hz, period {traj.period:.2f} s")
    print(f"condition number of the column-normalised base regressor: {cond:.1f}")
    print("worst margin to every limit over one period at 1 kHz (negative: violated):")
    for m in margins:
        unit = {"position": "", "speed": "/s", "cartesian": " m"}[m.kind]
        print(f"  {m.name:<12} {m.kind:<9} {m.margin:+.4f}{unit}  at t = {m.at_time:.3f} s")
    violated = [m for m in margins if m.margin < 0]
    if violated:
        raise SolverError(f"{len(violated)} limit(s) violated, the worst {min(m.margin for m in violated):.4g} "
                          f"on {min(violated, key=lambda m: m.margin).name}")
    print("all limits respected")
    return 0


def _holds(args: argparse.Namespace) -> int:
    from dvrk_ident_ros.safety import CommandChecker

    spec = arm_spec(args.arm)
    model = load_model(spec.model)
    checker = CommandChecker(model, args.arm, section="hardware")  # what the player's grids are checked against
    grid = holds.holds_grid(args.arm, checker, poses=args.poses, seed=args.seed, fraction=args.fraction,
                            settle=args.settle, samples=args.samples, approach=args.approach)
    save_grid(args.out, grid)
    count = len(grid["sweeps"][0]["poses"])
    print(f"{grid['arm']}: {count} static holds ({args.approach}; settle {args.settle:g} s, {args.samples} samples "
          f"each) written to {args.out}; play it with the player and the recorder, then dvrk-ident gc refit")
    return 0


def _grid(args: argparse.Namespace) -> int:
    grid = make_grid(args.arm)
    save_grid(args.out, grid)
    poses = sum(len(s["poses"]) for s in grid["sweeps"])
    print(f"{grid['arm']}: {len(grid['sweeps'])} sweeps, {poses} poses written to {args.out}")
    return 0


def add_trajectory_commands(sub: argparse._SubParsersAction) -> None:
    tsub = add_command_group(sub, "trajectory", "excitation trajectories and MLSE pose grids")
    p = tsub.add_parser("optimize", help="optimise a Fourier excitation trajectory")
    p.add_argument("--arm", required=True)
    p.add_argument("--variant", default=None, help="MTML or MTMR: mirrored wrist limits")
    p.add_argument("--harmonics", type=int, default=6)
    p.add_argument("--base-frequency", type=float, default=None, help="Hz (default: MTM 0.1, PSM 0.18)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--starts", type=int, default=DEFAULT_STARTS, help="random starts (short explorations)")
    p.add_argument("--iterations", type=int, default=DEFAULT_ITERATIONS,
                   help="SLSQP iterations of a full polish (a quarter per start and per brief polish)")
    p.add_argument("--workers", type=int, default=None,
                   help="worker processes (default: one per CPU; 0: none); the answer does not depend on it")
    p.add_argument("--initial", default=None,
                   help="a trajectory file to refine (same harmonics and frequency); competes with the starts")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--out", required=True)
    p.set_defaults(handler=_optimize)
    p = tsub.add_parser("check", help="condition number and worst margin to every limit (1 kHz)")
    p.add_argument("--arm", required=True)
    p.add_argument("--variant", default=None)
    p.add_argument("file", help="absolute, relative to the working directory, or in the package share "
                                "(config/trajectories/psm_fourier.yaml)")
    p.set_defaults(handler=_check)
    p = tsub.add_parser("grid", help="the MLSE pose grid of an MTM side")
    p.add_argument("--arm", required=True, type=str.upper, choices=["MTML", "MTMR"])
    p.add_argument("--out", required=True)
    p.set_defaults(handler=_grid)
    p = tsub.add_parser("holds", help="static holds of an arm at random poses (a pose grid the player plays) for "
                                      "dvrk-ident gc refit")
    p.add_argument("--arm", required=True, type=str.upper, help="e.g. PSM1")
    p.add_argument("--poses", type=int, default=holds.DEFAULT_POSES,
                   help="holds (both_sides: rounded up to a multiple of 4)")
    p.add_argument("--approach", choices=holds.APPROACHES, default=holds.APPROACHES[0],
                   help="both_sides: each pose p held as p + d, p, p - d, p (static friction cancels in part); "
                        "random: every hold a random pose")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--fraction", type=float, default=0.9, help="central fraction of each joint's range")
    p.add_argument("--settle", type=float, default=holds.DEFAULT_SETTLE,
                   help="s at rest before sampling (the PID settling)")
    p.add_argument("--samples", type=int, default=holds.DEFAULT_SAMPLES, help="samples per pose (100 Hz: 1 s)")
    p.add_argument("--out", required=True)
    p.set_defaults(handler=_holds)
