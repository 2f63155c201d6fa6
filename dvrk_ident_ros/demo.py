"""``dvrk-ident demo``: the main job, as far as the package has grown.

Today: the dynamic models of the MTM and PSM are generated (or loaded from
cache), their base parameters printed, and the generated regressor checked on
random states against the independent Lagrangian reference. Later stages (the
simulated arm, data collection, identification, gravity compensation) are
added here as they land.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

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


def run_demo(args: argparse.Namespace) -> int:
    rng = np.random.default_rng(args.seed)
    print("dvrk_ident demo: dynamic models of the dVRK arms")
    for arm in ("mtm", "psm"):
        _model_stage(arm, rng)
    print("done.")
    return 0


def add_demo_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the main job on simulated arms and print a summary")
    p.add_argument("--seed", type=int, default=7)
    p.set_defaults(handler=run_demo)
