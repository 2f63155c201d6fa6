"""Issue 3 acceptance: model correctness against an independent reference, build
times (cold, cached, whole command), regressor speed, base-parameter counts."""
from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.timing import median_seconds, verdict
from dvrk_ident_ros.model.arm_model import load_model
from dvrk_ident_ros.model.physical import random_physical_parameters
from dvrk_ident_ros.model.reference import LagrangianReference

ORIGINAL_COUNTS = {"mtm": (122, 73), "psm": (115, 49)}


def _correctness(model, rng, states: int = 20) -> dict[str, float]:
    ref = LagrangianReference(model.description)
    worst = {"H delta vs Lagrangian (rel)": 0.0, "gravity vs dP/dq (rel)": 0.0, "energy balance (rel)": 0.0}
    min_eig = np.inf
    max_asym = 0.0
    for _ in range(states):
        q, qd, qdd = rng.uniform(-1.5, 1.5, model.dof), rng.normal(0, 1.5, model.dof), rng.normal(0, 3, model.dof)
        delta = rng.normal(0, 1, len(model.parameter_names))
        ours = model.regressor(q, qd, qdd)[0] @ delta
        theirs = ref.torques(q, qd, qdd, delta)
        worst["H delta vs Lagrangian (rel)"] = max(worst["H delta vs Lagrangian (rel)"],
                                                   np.linalg.norm(ours - theirs) / np.linalg.norm(theirs))
        phys = random_physical_parameters(model.layout, rng)
        phys[model.layout.of_kind("K")] = 0.0
        g = model.gravity(q, phys)[0]
        worst["gravity vs dP/dq (rel)"] = max(worst["gravity vs dP/dq (rel)"],
                                              np.linalg.norm(g - ref.gravity_torques(q, phys)) / np.linalg.norm(g))
        M = model.mass_matrix(q, phys)[0]
        min_eig = min(min_eig, np.linalg.eigvalsh(M).min())
        max_asym = max(max_asym, np.abs(M - M.T).max())
        h = 1e-30
        Mdot = np.imag(model.mass_matrix(q + 1j * h * qd, phys.astype(complex)))[0] / h
        lhs, rhs = qd @ Mdot @ qd, 2 * qd @ model.coriolis(q, qd, phys)[0]
        worst["energy balance (rel)"] = max(worst["energy balance (rel)"], abs(lhs - rhs) / abs(lhs))
    worst["M(q) min eigenvalue (physical params)"] = min_eig
    worst["M(q) max |M - M^T|"] = max_asym
    return worst


def run() -> bool:
    ok = True
    rng = np.random.default_rng(2026)
    for arm in ("mtm", "psm"):
        print(f"-- {arm.upper()}")
        with tempfile.TemporaryDirectory() as tmp:
            cold = []
            for i in range(3):
                model = load_model(arm, use_cache=False, cache_dir=Path(tmp) / str(i))
                cold.append(model.build.seconds)
            cold_median = float(np.median(cold))
            cached, _ = median_seconds(lambda a=arm, t=tmp: load_model(a, cache_dir=Path(t) / "0"), repeat=7)
            assert load_model(arm, cache_dir=Path(tmp) / "0").build.cache_used
        n_std, n_base = len(model.parameter_names), model.base.count
        orig = ORIGINAL_COUNTS[arm]
        print(f"  parameters: {n_std} standard -> {n_base} base (original package: {orig[0]} -> {orig[1]})")
        diag = model.base.diagonal
        print(f"  rank decision: |R_ii|/|R_00| = {diag[n_base - 1]:.2e} (last kept) vs "
              f"{diag[n_base]:.2e} (first dropped); tolerance 1e-10")
        ok &= verdict(f"cold build, no cache (median of 3; original ~{80 if arm == 'mtm' else 12} min)",
                      cold_median, 60.0)
        ok &= verdict("load from cache, in process (median of 7)", cached, 1.0)
        for name, value in _correctness(model, rng).items():
            limit = {"M(q) min eigenvalue (physical params)": None, "M(q) max |M - M^T|": 1e-12}.get(name, 1e-9)
            if limit is None:
                good = value > 0
                print(f"  {name:<58} {value:.3e}  (must be > 0)  {'ok' if good else 'FAIL'}")
                ok &= good
            else:
                ok &= verdict(name + " (worst of 20)", value, limit, unit="", fmt=".1e")
    # regressor speed, against the natural baseline: one numpy pass over the same arrays
    model = load_model("mtm")
    q, qd, qdd = (rng.normal(0, 1, (6000, 7)) for _ in range(3))
    t_reg, _ = median_seconds(lambda: model.regressor(q, qd, qdd), repeat=15)
    t_base, _ = median_seconds(lambda: np.sin(q) * np.cos(qd) + qdd, repeat=15)
    ok &= verdict("MTM regressor, 6000 samples (median of 15)", t_reg * 1e3, 100.0, unit="ms", fmt=".1f")
    print(f"  {'baseline: np.sin(q)*np.cos(qd)+qdd on the same arrays':<58} {t_base * 1e3:.2f} ms")
    # the whole command, cache warm, in a new process (what a user waits for)
    load_model("mtm")
    runs = []
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "dvrk_ident_ros.app.cli", "model", "info", "--arm", "mtm", "--json"],
                       check=True, capture_output=True)
        runs.append(time.perf_counter() - start)
    print(f"  {'`dvrk-ident model info --arm mtm`, new process, warm cache':<58} {np.median(runs):.3f} s (median of 3)")
    return bool(ok)
