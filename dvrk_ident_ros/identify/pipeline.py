"""From recordings to a parameter file, and from a parameter file to predictions.

The same functions serve the command line and the /identify service.
"""
from __future__ import annotations

import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from dvrk_ident_ros.data.dataset import Dataset
from dvrk_ident_ros.data.processing import FilterSettings, lowpass, process
from dvrk_ident_ros.errors import DataError, DvrkIdentError, SolverError
from dvrk_ident_ros.estimators import DYNAMICS, estimator
from dvrk_ident_ros.identify.least_squares import solve_least_squares
from dvrk_ident_ros.identify.plausible import FitRegion, choose_plausible, choose_within_fit, fit_region
from dvrk_ident_ros.identify.prior import prior_from_standard
from dvrk_ident_ros.identify.problem import (
    Regression,
    build_regression,
    default_filter,
    delayed,
    range_weights,
    relative_errors,
)
from dvrk_ident_ros.identify.results import IdentificationResult
from dvrk_ident_ros.identify.sdp import solve_sdp
from dvrk_ident_ros.model.arm_model import ArmModel, load_model

MAX_TORQUE_LAG = 0.08  # s: the search range of the per-joint torque delay


def estimate_torque_lags(regressions: list[Regression], rate: float, max_lag: float = MAX_TORQUE_LAG,
                         sweeps: int = 3) -> np.ndarray:
    """Per-joint delay (in samples) of the measured torque behind the motion.

    Coordinate descent on the weighted least-squares residual: each joint in
    turn takes the delay that minimises its own residual with the other
    joints' delays fixed, for a few sweeps. Every candidate fit is solved from
    precomputed per-joint normal equations (G_j(L) = H_j^T H_j, h_j(L) = H_j^T y_j
    on a common sample range), so the search costs little. Training data only.
    """
    top = round(max_lag * rate)
    candidates = np.arange(top + 1)
    weights = range_weights(np.concatenate([r.y for r in regressions]))
    n = regressions[0].joints
    r = regressions[0].Hb.shape[2]
    G = np.zeros((n, len(candidates), r, r))
    h = np.zeros((n, len(candidates), r))
    yy = np.zeros(n)
    for reg in regressions:
        N = reg.y.shape[0] - top
        for j in range(n):
            y = reg.y[top:top + N, j] * weights[j]
            yy[j] += y @ y
            for k, lag in enumerate(candidates):
                H = reg.Hb[top - lag:top - lag + N, j, :] * weights[j]
                G[j, k] += H.T @ H
                h[j, k] += H.T @ y
    lags = np.zeros(n, dtype=int)

    def residual_of(j: int, config: np.ndarray) -> float:
        x = np.linalg.lstsq(sum(G[i, config[i]] for i in range(n)), sum(h[i, config[i]] for i in range(n)),
                            rcond=None)[0]
        return (yy[j] - 2 * x @ h[j, config[j]] + x @ G[j, config[j]] @ x) / yy[j]

    for _ in range(sweeps):
        previous = lags.copy()
        for j in range(n):
            scores = []
            for k in range(len(candidates)):
                trial = lags.copy()
                trial[j] = k
                scores.append(residual_of(j, trial))
            lags[j] = int(np.argmin(scores))
        if np.array_equal(previous, lags):
            break
    return candidates[lags]


def prepare(model: ArmModel, data: Dataset, settings: FilterSettings | None = None) -> Dataset:
    return process(data, settings or default_filter(model))


def identify(model: ArmModel, datasets: list[Dataset], method: str = "sdp",
             settings: FilterSettings | None = None, torque_lags: str | list[float] = "auto",
             prior: str | Path | None = None) -> IdentificationResult:
    """Identify from raw datasets (filtered here with ``settings`` or the arm's defaults).

    ``torque_lags``: "auto" (estimated per joint, see :func:`estimate_torque_lags`),
    "none", or the delays in seconds. ``method``: a DYNAMICS estimator of the registry
    (:mod:`dvrk_ident_ros.estimators`), which says the weighting and whether the SDP runs.
    ``prior``: a parameter file whose standard parameters the SDP's standard answer is drawn
    to (:mod:`dvrk_ident_ros.identify.plausible`; default: a prior from the link geometry).
    """
    try:
        chosen = estimator(method, DYNAMICS)
    except DvrkIdentError as exc:
        raise SolverError(str(exc)) from None
    settings = settings or default_filter(model)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    processed = [prepare(model, d, settings) for d in datasets]
    timings["filter"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    regressions = [build_regression(model, d) for d in processed]
    timings["regressor"] = time.perf_counter() - t0
    rate = processed[0].rate
    t0 = time.perf_counter()
    if torque_lags == "auto":
        lags = estimate_torque_lags(regressions, rate)
    elif torque_lags == "none":
        lags = np.zeros(model.dof, dtype=int)
    else:
        lags = np.rint(np.asarray(torque_lags, dtype=float) * rate).astype(int)
    timings["torque_lags"] = time.perf_counter() - t0
    reg = Regression.stacked([delayed(r, lags) for r in regressions])
    t0 = time.perf_counter()
    # effective independent samples: the residual is correlated over about fs / (2 fc) samples
    correlation = max(1.0, processed[0].rate / (2.0 * settings.cutoff_hz))
    lsq = solve_least_squares(reg, chosen.weighting, correlation=correlation)
    timings["least_squares"] = time.perf_counter() - t0
    standard = None
    solver: dict[str, str | int | float | bool | None] = {"name": "lstsq", "status": "optimal"}
    base = lsq.base
    bounds: dict = {}
    plausibility: dict = {}
    if chosen.physically_consistent:
        A, b = reg.weighted(lsq.weights)
        sdp = solve_sdp(model, A, b)
        timings["qr_and_solve"] = sdp.solve_seconds
        base, standard = sdp.base, dict(zip(model.parameter_names, sdp.standard.tolist(), strict=True))
        bounds = sdp.bounds
        solver = {"name": "clarabel", "status": sdp.status, "iterations": sdp.iterations,
                  "min_pseudo_inertia_eigenvalue": sdp.min_pseudo_inertia_eigenvalue,
                  "max_bound_violation": sdp.max_bound_violation, "null_space_tie_break": sdp.tie_break}
        t0 = time.perf_counter()
        prior_values = None if prior is None else prior_from_standard(
            model, IdentificationResult.load(prior).standard or {})
        prior_source = "geometry" if prior is None else str(prior)
        plausibility = _plausible(model, sdp.base, sdp.standard, prior_values, prior_source)
        timings["plausible"] = time.perf_counter() - t0
        if plausibility["status"] == "optimal":
            standard = dict(zip(model.parameter_names, plausibility.pop("standard"), strict=True))
        t0 = time.perf_counter()
        region = fit_region(model, A, b, sdp.base, correlation)
        plausibility["relaxed"] = _relaxed(model, reg, region, sdp.standard, prior_values)
        timings["plausible_relaxed"] = time.perf_counter() - t0
    predicted = reg.Hb @ base
    errors = relative_errors(reg.y, predicted)
    return IdentificationResult(
        arm=model.description.arm, description_hash=model.description.content_hash, method=chosen.name,
        base_values=base.tolist(), base_definitions=model.base_parameter_names,
        base_indices=model.base.independent.tolist(), filter=asdict(settings), solver=solver,
        errors={"training": errors.tolist(), "joints": [f"tau{j + 1}" for j in range(model.dof)]},
        standard=standard, base_std=None if chosen.physically_consistent else np.sqrt(np.diag(lsq.covariance)).tolist(),
        bounds=bounds, data=[d.source for d in datasets], timings=timings,
        torque_lags=(lags / rate).tolist(), plausibility=plausibility,
    )


def _plausible(model: ArmModel, base: np.ndarray, standard: np.ndarray, prior: np.ndarray | None,
               prior_source: str = "geometry") -> dict:
    """The second stage (identify/plausible.py) as the parameter file records it; a failure is recorded
    (status "failed: ...") and leaves the SDP's own standard parameters. ``prior``: standard parameters
    (None: the description's geometric prior)."""
    try:
        result = choose_plausible(model, base, standard, prior, start=standard, prior_source=prior_source)
    except SolverError as exc:
        return {"status": f"failed: {exc}", "fit_standard": dict(zip(model.parameter_names, standard.tolist(),
                                                                       strict=True))}
    out = result.as_dict(model.parameter_names, standard)
    out["standard"] = result.standard.tolist()
    return out


def _relaxed(model: ArmModel, reg: Regression, region: FitRegion, standard: np.ndarray,
             prior: np.ndarray | None) -> dict:
    """The standard parameters for simulators (identify/plausible.py, :func:`choose_within_fit`) with
    the training errors their base parameters give beside the fit's; a failure is recorded."""
    try:
        result = choose_within_fit(model, region, standard, prior)
    except SolverError as exc:
        return {"status": f"failed: {exc}"}
    out = result.as_dict(model.parameter_names)
    K = model.base.matrix(len(model.layout))
    out["errors"] = relative_errors(reg.y, reg.Hb @ (K @ result.standard)).tolist()
    out["fit_errors"] = relative_errors(reg.y, reg.Hb @ (K @ standard)).tolist()
    return out


def model_for(result: IdentificationResult) -> ArmModel:
    """The installed model of the file's arm; the file must come from the same description.

    A file whose base parameters were kept on other (equivalent) columns is re-expressed, in
    place, on the installed model's (:meth:`ArmModel.rebase`); their standard deviations are
    then dropped (they would need the covariance).
    """
    model = load_model(result.arm)
    if model.description.content_hash != result.description_hash:
        raise DataError(f"the parameters were identified with a different {result.arm} description "
                        f"(hash {result.description_hash[:12]}, installed {model.description.content_hash[:12]})")
    if list(model.base.independent) != list(result.base_indices):
        result.base_values = model.rebase(result.base_indices, result.base_values).tolist()
        result.base_indices = model.base.independent.tolist()
        result.base_definitions = model.base_parameter_names
        result.base_std = None
    return model


def predict(result: IdentificationResult, data: Dataset, model: ArmModel | None = None) -> np.ndarray:
    """Predicted motor torques (N x n) for every sample, from recorded positions and velocities.

    Positions and velocities are low-pass filtered with the file's settings
    (no trimming: one prediction per input sample; padded so the filtered
    states keep their slope up to the edges); accelerations come from the
    filtered velocities; the known torques (MTM cable) are included. The
    predicted torque passes through the same zero-phase low-pass as the
    measured torques it is fitted to and compared with: the model's Coulomb
    term switches instantly, the filtered measurement cannot.
    """
    model = model or model_for(result)
    settings = FilterSettings(**result.filter)
    fs = data.rate
    # The states are filtered to the very edges (settled padding): the raw torque
    # predicted from them then matches the raw measured torque there, and the
    # evaluation filter applied to both leaves them the same edge transients.
    q = lowpass(data.q, fs, settings.cutoff_hz, settings.order, settle=True)
    qd = lowpass(data.qd, fs, settings.cutoff_hz, settings.order, settle=True)
    qdd = np.gradient(qd, data.t, axis=0)
    tau = model.base_regressor(q, qd, qdd) @ result.base + model.known_torques(q)
    tau = lowpass(tau, fs, settings.cutoff_hz, settings.order)
    for j, lag in enumerate(result.torque_lags or []):
        if lag > 0:  # the measured torque lags the motion: delay the prediction alike
            tau[:, j] = np.interp(data.t - lag, data.t, tau[:, j])
    return tau


def filtered_torques(result_or_settings, data: Dataset) -> np.ndarray:
    """The measured torques filtered zero-phase as in the evaluation protocol (results-to-beat.md)."""
    settings = (result_or_settings if isinstance(result_or_settings, FilterSettings)
                else FilterSettings(**result_or_settings.filter))
    return lowpass(data.tau, data.rate, settings.cutoff_hz, settings.order)


def split(data: Dataset, fraction: float) -> tuple[Dataset, Dataset]:
    """The first ``fraction`` of the samples and the rest."""
    cut = round(fraction * data.samples)
    if not 0 < cut < data.samples:
        raise DataError(f"split fraction {fraction} leaves nothing on one side")
    return (replace(data.select(slice(0, cut)), source=f"{data.source}[:{cut}]"),
            replace(data.select(slice(cut, None)), source=f"{data.source}[{cut}:]"))
