"""Whole jobs, as the CLI and the /identify service run them (one code path for both).

:func:`identification_job`: load -> filter -> OLS/WLS/SDP -> parameter file,
text report and torque plot. :func:`gc_fit_job`: pose data -> MLSE/SLSE ->
gc JSON 2.0. Each returns a :class:`JobOutcome` with the files written, the
per-joint errors, the parameters and the stage timings.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dvrk_ident_ros.arm.state_rate import IDENTIFICATION_RATE, low_rate_advice, rate_from_stamps
from dvrk_ident_ros.errors import DataError, SolverError
from dvrk_ident_ros.estimators import GRAVITY, estimator
from dvrk_ident_ros.gc.fitting.static_refit import MIN_HOLD, REST_TOLERANCE, SETTLE
from dvrk_ident_ros.gc.model.travel import DEFAULT_TRAVEL


@dataclass
class JobOutcome:
    arm: str
    method: str
    result_file: Path
    report_file: Path | None
    joint_names: list[str]
    relative_error: list[float]
    parameter_names: list[str]
    parameter_values: list[float]
    solver_status: str
    timings: dict[str, float] = field(default_factory=dict)
    plot_file: Path | None = None
    summary: str = ""


def low_rate_note(sources: Sequence[str | Path], times: Sequence[np.ndarray]) -> str:
    """A note for recordings sampled below IDENTIFICATION_RATE (the dVRK bridge's default 100 Hz): the efforts of
    a PID tracking a fast stream alias there (arm/state_rate.py; docs/lab-procedure.md); "" if none."""
    slow = []
    for source, t in zip(sources, times, strict=True):
        rate = rate_from_stamps(np.asarray(t))
        if rate is not None and rate < IDENTIFICATION_RATE:
            slow.append((Path(source).name, rate))
    if not slow:
        return ""
    return ", ".join(f"{name} at {rate:.0f} Hz" for name, rate in slow) + ": " + low_rate_advice(
        min(rate for _, rate in slow))


def identification_job(arm: str, files: Sequence[str | Path], method: str, out: Path, fmt: str | None = None, *,
                       cutoff: float | None = None, torque_lags: str = "auto", plots: bool = True,
                       prior: str | Path | None = None) -> JobOutcome:
    from dvrk_ident_ros.data.loaders import load_dataset
    from dvrk_ident_ros.identify.pipeline import filtered_torques, identify, predict
    from dvrk_ident_ros.identify.plausible import summary_line
    from dvrk_ident_ros.identify.problem import default_filter
    from dvrk_ident_ros.identify.report import plot_torques, write_text_report
    from dvrk_ident_ros.model.arm_model import load_model

    if not files:
        raise DataError("no data files given")
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    model = load_model(arm)
    timings["model"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    datasets = [load_dataset(f, fmt, joints=model.dof, dvrk_from_motor=model.A) for f in files]
    timings["load"] = time.perf_counter() - t0
    settings = default_filter(model)
    if cutoff is not None:
        settings = type(settings)(cutoff_hz=cutoff, order=settings.order, trim_seconds=settings.trim_seconds)
    result = identify(model, datasets, method, settings, torque_lags=torque_lags, prior=prior)
    timings.update(result.timings)
    if result.solver.get("status") != "optimal":
        raise SolverError(f"solver status {result.solver.get('status')!r}: no parameter file written")
    out = Path(out)
    t0 = time.perf_counter()
    result.save(out)
    stem = out.with_suffix("")
    report = write_text_report(result, stem.with_name(stem.name + "_report.txt"))
    plot = None
    if plots:
        data = datasets[0]
        plot = plot_torques(data.t, filtered_torques(result, data), predict(result, data, model),
                            stem.with_name(stem.name + "_torques.png"),
                            f"{result.arm.upper()} {result.method}: {Path(files[0]).name}")
    timings["report"] = time.perf_counter() - t0
    names, values = (list(result.standard), list(result.standard.values())) if result.standard else \
        (list(result.base_definitions), list(result.base_values))
    errors = [float(e) for e in result.errors["training"]]
    return JobOutcome(arm=result.arm, method=method, result_file=out, report_file=report,
                      joint_names=list(model.description.dvrk_joint_names), relative_error=errors,
                      parameter_names=names, parameter_values=[float(v) for v in values],
                      solver_status=str(result.solver.get("status")), timings=timings, plot_file=plot,
                      summary=f"{result.arm} {method}: solver {result.solver['status']}; training error per joint (%): "
                              + " ".join(f"{100 * e:.1f}" for e in errors)
                              + (f"; {summary_line(result.plausibility)}" if result.plausibility else "")
                              + (f"; {note}" if (note := low_rate_note(files, [d.t for d in datasets])) else ""))


def gc_fit_job(data_path: str | Path, arm: str | None, out: Path | None, *, serial: str = "unknown",
               method: str = "mlse", orders: dict[int, int] | str | None = None,
               effort: str = "setpoint", trim: tuple[int, int] | None = None,
               travel: float = DEFAULT_TRAVEL) -> JobOutcome:
    """``effort``: a bag's commanded ("setpoint", Lin 2019's choice) or "measured" effort; ``trim``: poses
    left out at each sweep's start and end (None: the loader's default, gc/fitting/loaders.py); ``travel``: the
    width (rad) of the cable state a bag's poses are weighted by (gc/model/travel.py), 0: by their sweep's
    direction."""
    from dvrk_ident_ros.gc.fitting.crossval import select_orders
    from dvrk_ident_ros.gc.fitting.fits import FITS
    from dvrk_ident_ros.gc.fitting.gc_file import gc_parameters
    from dvrk_ident_ros.gc.fitting.loaders import load_poses
    from dvrk_ident_ros.gc.fitting.mlse import relative_errors
    from dvrk_ident_ros.gc.model.params import SIDES

    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    if not travel >= 0:
        raise DataError(f"travel {travel}: the cable state's width must be >= 0 rad (0: sweep directions)")
    data = load_poses(data_path, effort=effort, travel=travel or None, **({} if trim is None else {"trim": trim}))
    timings["load"] = time.perf_counter() - t0
    arm = (arm or "").upper() or next((s for s in SIDES if s in str(data.source).upper()), "")
    if arm not in SIDES:
        raise DataError(f"unknown arm {arm or '(not given)'!r}: the gc model is for MTML or MTMR")
    t0 = time.perf_counter()
    if orders == "auto":
        orders, _ = select_orders(data)
    elif isinstance(orders, str):
        raise DataError(f"orders {orders!r}: expected 'auto' or polynomial orders per joint")
    fit = FITS[estimator(method, GRAVITY).name](data, orders or None)
    timings["fit"] = time.perf_counter() - t0
    used = fit.orders
    params = gc_parameters(fit, data, arm, serial, str(data_path))
    out = Path(out or f"gc-{arm}-{serial}.json")
    params.save(out)
    errors = relative_errors(fit, data)
    per_joint = [float(errors[(i, "both")]) for i in range(1, 7)]
    summary = (f"{arm} {fit.method} with orders {[used[i] for i in range(1, 7)]}: relative RMS error per joint (%) "
               + " ".join(f"{100 * e:.1f}" for e in per_joint))
    if data.effort_topic:
        summary += f"; efforts from {data.effort_topic}"
    if params.position_lower_deg is not None and params.position_upper_deg is not None:
        summary += ("; joints 1-6 measured over (deg) " + " ".join(
            f"{lo:.0f}..{hi:.0f}" for lo, hi in zip(params.position_lower_deg[:6], params.position_upper_deg[:6],
                                                    strict=True))
                    + " (the node takes the file a little beyond, fit_range_margin)")
    if data.skipped:
        summary += f"; {data.skipped}"
    if data.dropped:
        summary += f"; {data.dropped} pose(s) with no finite sample were dropped"
    if data.branch is not None:
        summary += f"; poses weighted by their cable's recorded state (travel width {travel:g} rad)"
    if fit.notes:
        summary += "; " + "; ".join(fit.notes)
    return JobOutcome(arm=arm, method=method, result_file=out, report_file=None,
                      joint_names=[f"joint{i}" for i in range(1, 7)], relative_error=per_joint,
                      parameter_names=[f"pos{k}" for k in range(40)] + [f"neg{k}" for k in range(40)],
                      parameter_values=[float(x) for x in np.concatenate([params.theta_pos, params.theta_neg])],
                      solver_status="optimal", timings=timings, summary=summary)


def gravity_refit_job(params_path: str | Path, data_path: str | Path, out: Path | None, *,
                      tolerance: float = REST_TOLERANCE, min_hold: float = MIN_HOLD,
                      settle: float = SETTLE) -> JobOutcome:
    """An identified parameter file's gravity refitted to the static holds of a recording of the same arm
    (gc/fitting/static_refit.py): the arm at rest at poses spread over its workspace, each for ``min_hold`` s or
    more. Writes the file with the corrected standard and base parameters and a ``gravity_refit`` record."""
    from dataclasses import replace

    from dvrk_ident_ros.data.bags import load_bag
    from dvrk_ident_ros.data.loaders import detect_format, load_dataset
    from dvrk_ident_ros.gc.fitting import static_refit
    from dvrk_ident_ros.identify.pipeline import model_for
    from dvrk_ident_ros.identify.results import IdentificationResult

    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    result = IdentificationResult.load(params_path)
    if not result.standard:
        raise DataError(f"{params_path}: no standard parameters (identify with --method sdp first)")
    model = model_for(result)
    delta = np.array([float(result.standard[name]) for name in model.parameter_names])
    path = Path(data_path)
    if not path.exists():
        raise DataError(f"{path}: no such file")
    data = (load_bag(path, model.A, playing_only=False) if detect_format(path) == "bag"
            else load_dataset(path, joints=model.dof))
    timings["load"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    holds = static_refit.rest_holds(data.t, model.dvrk_from_motor(data.q), model.dvrk_torque_from_motor(data.tau),
                                    tolerance=tolerance, min_hold=min_hold, settle=settle)
    if not len(holds.q):
        raise DataError(f"{path}: no static hold (every joint within {tolerance:g} for {min_hold:g} s): record the "
                        "arm at rest at poses spread over its workspace")
    refit = static_refit.refit_gravity(model, delta, holds.q, holds.effort)
    timings["refit"] = time.perf_counter() - t0
    standard = dict(zip(model.parameter_names, (float(x) for x in refit.delta), strict=True))
    record = {"data": str(path), "holds": len(holds.q), "samples_per_hold_median": int(np.median(holds.samples)),
              "combinations": refit.rank, "residual_rms_before": refit.before.tolist(),
              "residual_rms_after": refit.after.tolist(), "standard_before": dict(result.standard),
              "method": "least-norm least-squares correction of the gravity columns (gc/fitting/static_refit.py)",
              "note": "errors and solver are the identification's, before this refit"}
    refitted = replace(result, standard=standard, base_values=model.base.from_standard(refit.delta).tolist(),
                       base_std=None, gravity_refit=record)
    out = Path(out or Path(params_path).with_name(Path(params_path).stem + "-refit.json"))
    refitted.save(out)
    names = [f"tau{j + 1}" for j in range(model.dof)]
    return JobOutcome(arm=result.arm, method=result.method, result_file=out, report_file=None, joint_names=names,
                      relative_error=refit.after.tolist(), parameter_names=list(model.parameter_names),
                      parameter_values=refit.delta.tolist(), solver_status="least squares", timings=timings,
                      summary=f"{result.arm} gravity refitted: {refit.summary()}")
