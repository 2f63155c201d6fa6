"""Issue 6 acceptance: MLSE on the CUHK MTML-41878 data against the original tool's
file, cross-validated errors (original vs best settings), the JSON round trip,
and the compensation law's speed and allocations."""
from __future__ import annotations

import gc as garbage
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.timing import verdict
from dvrk_ident_ros.gc.fitting.crossval import cross_validate, select_orders
from dvrk_ident_ros.gc.fitting.data import load_cuhk
from dvrk_ident_ros.gc.fitting.mlse import DEFAULT_ORDERS, fit_mlse, relative_errors
from dvrk_ident_ros.gc.model.params import GcParameters, load_gc
from dvrk_ident_ros.gc.model.regressor import torques
from dvrk_ident_ros.gc.runtime.law import CompensationLaw

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "cuhk-mtm-gc" / "MTML-41878"


def _row(label: str, values) -> None:
    print(f"  {label:<44} " + " ".join(f"{100 * v:6.1f}" for v in values))


def _law_timing() -> bool:
    rng = np.random.default_rng(0)
    theta_pos, theta_neg = rng.normal(0, 0.05, 40), rng.normal(0, 0.05, 40)
    law = CompensationLaw(GcParameters("MTML", "0", theta_pos, theta_neg, np.ones(7), -np.ones(7)))
    q, v = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7], [0.05, -0.3, 0.0, 0.2, -0.01, 0.5, 0.0]
    runs, baseline = [], []
    qa = np.array([q])
    for _ in range(7):
        start = time.perf_counter()
        for _ in range(20000):
            law.compute(q, v)
        runs.append((time.perf_counter() - start) / 20000 * 1e6)
        start = time.perf_counter()
        for _ in range(2000):
            torques(qa, theta_pos)
        baseline.append((time.perf_counter() - start) / 2000 * 1e6)
    garbage.collect()
    growth = []
    for calls in (10000, 100000):
        blocks = sys.getallocatedblocks()
        for _ in range(calls):
            law.compute(q, v)
        growth.append(sys.getallocatedblocks() - blocks)
    grown = max(growth)
    ok = verdict("compensation law, 7 joints, per call (median of 7 x 20000)", statistics.median(runs), 20.0,
                 unit="us", fmt=".2f")
    print(f"  {'baseline: the vectorised R(q) theta for one sample (numpy)':<58} {statistics.median(baseline):.2f} us")
    print(f"  memory blocks retained after 10000 / 100000 calls: {growth[0]} / {growth[1]} (no growth with the "
          "number of calls: the output lists are reused, nothing is kept)")
    return ok and grown <= 64


def run() -> bool:
    ok = _law_timing()
    if not DATA.is_dir():
        print(f"  {DATA} absent: the CUHK figures need ../shared")
        return False
    data = load_cuhk(DATA)
    original = load_gc(DATA / "gc-MTML-41878.json")
    print(f"-- {DATA.name}: {len(data.q)} averaged poses (first two and last pose of each sweep dropped)")
    print(f"  {'relative RMS error on each joint own sweeps (%)':<44} " + " ".join(f"{'J' + str(i):>6}"
                                                                           for i in range(1, 7)))
    e_orig = relative_errors((original.theta_pos, original.theta_neg), data)
    fit = fit_mlse(data, DEFAULT_ORDERS)
    e_ours = relative_errors(fit, data)
    _row("original tool's gc-MTML-41878.json", [e_orig[(i, "both")] for i in range(1, 7)])
    _row("our MLSE, original settings (4POL, 1POL J2)", [e_ours[(i, "both")] for i in range(1, 7)])
    for d in ("pos", "neg"):
        eo = relative_errors((original.theta_pos, original.theta_neg), data, by_direction=True)
        eu = relative_errors(fit, data, by_direction=True)
        _row(f"  {d}: original / ours", [eo[(i, d)] for i in range(1, 7)])
        _row("", [eu[(i, d)] for i in range(1, 7)])
    print("-- cross-validation, whole auxiliary-joint values held out (5 folds)")
    cv_default = cross_validate(data, DEFAULT_ORDERS)
    orders, _ = select_orders(data)
    cv_best = cross_validate(data, orders)
    _row("original settings", [cv_default[i] for i in range(1, 7)])
    _row(f"best settings (orders {[orders[i] for i in range(1, 7)]})", [cv_best[i] for i in range(1, 7)])
    mean_default, mean_best = np.mean(list(cv_default.values())), np.mean(list(cv_best.values()))
    print(f"  mean: original settings {100 * mean_default:.2f} %, best {100 * mean_best:.2f} %")
    ok &= mean_best <= mean_default
    with tempfile.TemporaryDirectory() as tmp:
        params = GcParameters("MTML", "41878", fit.theta(+1), fit.theta(-1), np.ones(7), -np.ones(7))
        back = load_gc(params.save(Path(tmp) / "gc-MTML-41878.json"))
        pred = np.where(data.direction[:, None] > 0, torques(data.q, back.theta_pos),
                        torques(data.q, back.theta_neg))
        diff = float(np.max(np.abs(pred - fit.predict(data))))
    ok &= verdict("round trip: JSON model vs our predictions, max |difference|", diff, 1e-9, unit="N m", fmt=".1e")
    return bool(ok)
