"""Issue 4 acceptance: identification on simulated data (recovery), on the real
WPI recordings (errors on data not used for the fit, against Wang 2019), the
105 g added-mass estimate, and the SDP's speed against the uncompressed problem."""
from __future__ import annotations

import time
from pathlib import Path

import cvxpy as cp
import numpy as np

from bench.timing import verdict
from dvrk_ident_ros.data.loaders import load_dataset
from dvrk_ident_ros.data.processing import FilterSettings, lowpass
from dvrk_ident_ros.identify.added_mass import estimate_added_mass
from dvrk_ident_ros.identify.compare import relative_parameter_errors
from dvrk_ident_ros.identify.least_squares import solve_least_squares
from dvrk_ident_ros.identify.pipeline import filtered_torques, identify, predict, prepare, split
from dvrk_ident_ros.identify.problem import (
    Regression,
    build_regression,
    default_filter,
    range_weights,
    relative_errors,
)
from dvrk_ident_ros.identify.sdp import _constraints, solve_sdp
from dvrk_ident_ros.identify.synthetic import plausible_parameters, random_fourier, synthetic_recording
from dvrk_ident_ros.model.arm_model import load_model

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "wpi-identification"
WANG = {"mtm": [7.6, 14.9, 17.0, 22.3, 28.0, 23.4, 34.0], "psm": [9.3, 17.8, 19.1, 13.4, 23.9, 21.3, 26.4]}


def _fmt(values) -> str:
    return " ".join(f"{100 * v:5.1f}" for v in values)


def _noise_level(arm: str) -> np.ndarray:
    """Torque noise per joint of the real recording: std of what a 20 Hz low-pass removes."""
    data = load_dataset(DATA / arm / "one_results.csv")
    return np.std(data.tau - lowpass(data.tau, data.rate, 20.0, 4), axis=0)


def _recovery(arm: str, rng) -> bool:
    model = load_model(arm)
    delta = plausible_parameters(model, rng)
    traj = random_fourier(model, rng, base_frequency=0.1, amplitude=0.25)
    truth = model.base.from_standard(delta)
    names = model.base_parameter_names
    ok = True
    data, qdd = synthetic_recording(model, delta, traj, rate=200.0, duration=2 * traj.period)
    reg = Regression(model.base_regressor(data.q, data.qd, qdd), data.tau - model.known_torques(data.q))
    A, b = reg.weighted(range_weights(reg.y))
    sdp = solve_sdp(model, A, b)
    err = relative_parameter_errors(names, sdp.base, truth)
    print(f"  no noise, exact derivatives: SDP base-parameter error max {100 * err.max():.3f} %, "
          f"median {100 * np.median(err):.1e} %; min pseudo-inertia eigenvalue {sdp.min_pseudo_inertia_eigenvalue:.2e}")
    ok &= verdict("  worst base-parameter error without noise", 100 * err.max(), 1.0, unit="%", fmt=".3f")
    ok &= sdp.min_pseudo_inertia_eigenvalue >= -1e-9
    noise = _noise_level(arm)
    print(f"  realistic torque noise (real {arm.upper()} recording, above 20 Hz), per joint: {np.round(noise, 4)}")
    for label, level in (("filtered pipeline, no noise", 0.0), ("filtered pipeline, realistic noise", noise)):
        data, _ = synthetic_recording(model, delta, traj, rate=200.0, duration=3 * traj.period, noise=level,
                                      rng=rng)
        result = identify(model, [data], "sdp", FilterSettings(cutoff_hz=3.0))
        err = relative_parameter_errors(names, result.base, truth)
        within = int(np.sum(err < 0.01))
        print(f"  {label:<36} base parameters within 1 %: {within}/{len(err)}, within 10 %: "
              f"{int(np.sum(err < 0.1))}/{len(err)}; median error {100 * np.median(err):.2f} %; "
              f"min pseudo-inertia eigenvalue {result.solver['min_pseudo_inertia_eigenvalue']:.1e}")
        ok &= result.solver["min_pseudo_inertia_eigenvalue"] >= -1e-9
    return ok


def _motion_period(data) -> float:
    """The lag (s) at which the recorded joint motion best repeats itself (at least 1 s)."""
    q = data.q - data.q.mean(axis=0)
    n, rate = len(q), data.rate
    lags = np.arange(round(rate), n // 2 + 1)
    mismatch = [np.mean((q[lag:] - q[:n - lag]) ** 2) for lag in lags]
    return float(lags[int(np.argmin(mismatch))] / rate)


def _real(arm: str) -> bool:
    model = load_model(arm)
    data = load_dataset(DATA / arm / "one_results.csv")
    print(f"  {'':<44} {'tau1':>5} {'tau2':>5} {'tau3':>5} {'tau4':>5} {'tau5':>5} {'tau6':>5} {'tau7':>5}  mean")
    print(f"  {'Wang 2019 (test trajectory)':<44} {_fmt(np.array(WANG[arm]) / 100)}  {np.mean(WANG[arm]):5.1f}")
    cases = []
    first, second = split(data, 0.5)
    cases += [("fit 1st half, test 2nd half", first, second), ("fit 2nd half, test 1st half", second, first)]
    if arm == "psm":
        twin = load_dataset(DATA / "psm" / "one_no_weight_results.csv")
        cases += [("fit one_results, test one_no_weight", data, twin),
                  ("fit one_no_weight, test one_results", twin, data)]
    all_errors = []
    for label, train, test in cases:
        for method in ("sdp", "wls"):
            result = identify(model, [train], method)
            tau = filtered_torques(result, test)
            errors = relative_errors(tau, predict(result, test, model))
            all_errors.append(errors) if method == "sdp" else None
            lags = " ".join(f"{1000 * x:.0f}" for x in result.torque_lags)
            print(f"  {label + ' (' + method + ')':<44} {_fmt(errors)}  {100 * errors.mean():5.1f}   lags ms: {lags}")
    if arm == "psm":
        _recording_floor(model, data, twin)
    period = _motion_period(data)
    print(f"  caveat: the recording repeats its motion every {period:.1f} s ({data.t[-1] - data.t[0]:.0f} s in all), "
          "so every test set above replays motion the fit has seen:")
    print("  these errors measure noise and run-to-run change, not a trajectory the model has never seen")
    worst = np.max(all_errors, axis=0)
    beats = np.all(100 * worst <= np.array(WANG[arm]))
    print(f"  SDP worst case over the splits vs Wang 2019 on every joint: {'at or below' if beats else 'ABOVE'}"
          f" (joints above: {[int(j) + 1 for j in np.flatnonzero(100 * worst > np.array(WANG[arm]))]})")
    return True


def _recording_floor(model, first, second) -> None:
    """What no model fitted on one recording can beat on the other: the two recordings of the same
    commanded trajectory compared directly (filtered torques, relative difference per joint), and the
    least-squares gain between their torques (a recording-wide scale, e.g. a current calibration)."""
    n = min(first.samples, second.samples)
    a, b = (filtered_torques(default_filter(model), d.select(slice(0, n))) for d in (first, second))
    motion = np.sqrt(np.mean((first.q[:n] - second.q[:n]) ** 2, axis=0))
    difference = np.linalg.norm(a - b, axis=0) / np.linalg.norm(b, axis=0)
    gain = np.sum(a * b, axis=0) / np.sum(b * b, axis=0)
    print(f"  {'one_results vs one_no_weight, no model':<44} {_fmt(difference)}  {100 * difference.mean():5.1f}   "
          f"(same motion: position rms difference <= {motion.max():.4f})")
    print(f"  {'':<44} torque gain one_results / one_no_weight per joint: {np.round(gain, 2)}")


def _speed() -> bool:
    model = load_model("mtm")
    data = load_dataset(DATA / "mtm" / "one_results.csv")
    t0 = time.perf_counter()
    processed = prepare(model, data)
    t1 = time.perf_counter()
    reg = build_regression(model, processed)
    t2 = time.perf_counter()
    w = solve_least_squares(reg, "range").weights
    A, b = reg.weighted(w)
    t3 = time.perf_counter()
    Q, R = np.linalg.qr(A)
    t4 = time.perf_counter()
    sdp = solve_sdp(model, A, b)
    t5 = time.perf_counter()
    total = t5 - t0
    print(f"  MTM, {data.samples} samples -> {processed.samples} after trimming; {A.shape[0]} x {A.shape[1]} rows")
    print(f"  breakdown: filter {t1 - t0:.3f} s, regressor {t2 - t1:.3f} s, weights {t3 - t2:.3f} s, "
          f"QR {t4 - t3:.3f} s, SDP (QR + 2 Clarabel solves) {t5 - t4:.3f} s; status {sdp.status}")
    ok = verdict("full MTM SDP, regressor included", total, 5.0)
    # baseline: the same first-stage problem, uncompressed (every row in the objective)
    K = model.base.matrix(len(model.layout))
    delta = cp.Variable(len(model.layout))
    uncompressed = cp.Problem(cp.Minimize(cp.sum_squares(A @ K @ delta - b)), _constraints(model, delta))
    start = time.perf_counter()
    uncompressed.solve(solver=cp.CLARABEL)
    t_unc = time.perf_counter() - start
    compressed = cp.Problem(cp.Minimize(cp.sum_squares(R @ K @ delta - Q.T @ b)), _constraints(model, delta))
    start = time.perf_counter()
    compressed.solve(solver=cp.CLARABEL)
    t_cmp = time.perf_counter() - start
    print(f"  baseline, one constrained least-squares solve: uncompressed ({A.shape[0]} rows) {t_unc:.2f} s "
          f"[{uncompressed.status}] vs QR-compressed ({R.shape[0]} rows) {t_cmp:.2f} s [{compressed.status}]")
    return ok


def run() -> bool:
    if not DATA.is_dir():
        print(f"  {DATA} absent: the real-data figures need ../shared")
        return False
    ok = True
    rng = np.random.default_rng(4)
    for arm in ("mtm", "psm"):
        print(f"-- recovery on simulated {arm.upper()} data")
        ok &= _recovery(arm, rng)
    for arm in ("mtm", "psm"):
        print(f"-- real {arm.upper()} recordings: relative error (%) on data not used for the fit")
        ok &= _real(arm)
    print("-- added mass: PSM, 105 g on link 2'' (one_no_weight vs one_105_grams_parallel)")
    model = load_model("psm")
    est = estimate_added_mass(model, "2''", load_dataset(DATA / "psm" / "one_no_weight_results.csv"),
                              load_dataset(DATA / "psm" / "one_105_grams_parallel_results.csv"))
    print(f"  estimate {1000 * est.mass_kg:.1f} +- {1000 * est.std_kg:.1f} g (true 105 g: "
          f"{100 * abs(est.mass_kg - 0.105) / 0.105:.1f} % off; model chosen by BIC: {est.model}); "
          f"at the frame origin {1000 * est.at_origin[0]:.1f} +- {1000 * est.at_origin[1]:.1f} g, "
          f"at an estimated position {1000 * est.at_position[0]:.1f} +- {1000 * est.at_position[1]:.1f} g")
    references = {"the other no-weight recording (one_results)": ["one_results.csv"],
                  "both no-weight recordings": ["one_no_weight_results.csv", "one_results.csv"]}
    for label, files in references.items():
        other = estimate_added_mass(model, "2''", [load_dataset(DATA / "psm" / f) for f in files],
                                    load_dataset(DATA / "psm" / "one_105_grams_parallel_results.csv"))
        print(f"  {label} as the reference: {1000 * other.mass_kg:.1f} +- {1000 * other.std_kg:.1f} g "
              f"(model {other.model})")
    print("  the paper's per-parameter ratios (g): "
          + ", ".join(f"{1000 * p['mass_kg']:.0f}" for p in est.per_parameter))
    print("-- speed")
    ok &= _speed()
    return bool(ok)
