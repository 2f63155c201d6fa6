"""Added-mass estimation from a recording with a known mass and its no-weight twin.

Wang 2019 (Table IV) divides the change of each base parameter that contains
m_k by its coefficient, giving seven scattered estimates. Here all the
evidence is combined in one joint weighted least-squares fit of both
recordings: the arm's base parameters are shared, and the after-recording
has extra columns for the added body on link k, modelled as a point mass m_w
at the link frame's origin or at an unknown position r in the link frame
(mass and first moment m_w r; the inertia of a small weight is negligible),
whichever the Bayesian information criterion prefers:

    [y_before]   [H_b   0        ] [delta_b ]
    [y_after ] = [H_b   H_k(m, l)] [m_w, l_w]

The standard deviation comes from the joint fit's covariance, inflated for
the correlation of low-pass filtered residuals (about fs / (2 fc) samples
per independent value). For comparison the result also carries the
per-parameter ratios of the paper, from two separate fits, and both point-mass
models. The per-joint torque lags are estimated on both recordings together.
Several recordings per side (repeated runs) are stacked into the same fit.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dvrk_ident_ros.data.dataset import Dataset
from dvrk_ident_ros.data.processing import FilterSettings, lowpass
from dvrk_ident_ros.errors import DataError, SolverError
from dvrk_ident_ros.identify.pipeline import estimate_torque_lags, prepare
from dvrk_ident_ros.identify.problem import Regression, build_regression, default_filter, delayed, range_weights
from dvrk_ident_ros.model.arm_model import ArmModel


@dataclass(frozen=True)
class AddedMass:
    mass_kg: float
    std_kg: float
    model: str  # "origin" or "position": which point-mass model the data support (BIC)
    offset_m: list[float]  # the weight's estimated position in the link frame (position model)
    at_position: tuple[float, float]  # (mass, std) with the position estimated
    at_origin: tuple[float, float]  # (mass, std) with the weight at the frame origin
    per_parameter: list[dict]

    def as_dict(self) -> dict:
        return {"mass_kg": self.mass_kg, "std_kg": self.std_kg, "model": self.model,
                "point_mass_at_frame_origin": {"mass_kg": self.at_origin[0], "std_kg": self.at_origin[1]},
                "point_mass_at_estimated_position": {"mass_kg": self.at_position[0], "std_kg": self.at_position[1],
                                                     "offset_m": self.offset_m},
                "per_parameter_ratios": self.per_parameter}


def _joint_fit(A_top, A_bottom, y, extra_top, extra_bottom, weights, correlation):
    A = np.concatenate([np.concatenate([A_top, extra_top], axis=2), np.concatenate([A_bottom, extra_bottom], axis=2)])
    A = (A * weights[None, :, None]).reshape(-1, A.shape[2])
    b = (y * weights[None, :]).reshape(-1)
    x, _, rank, _ = np.linalg.lstsq(A, b, rcond=None)
    if rank < A.shape[1]:
        raise SolverError(f"added mass: the joint fit is rank deficient ({rank} of {A.shape[1]})")
    residual = b - A @ x
    s2 = residual @ residual / (len(b) - A.shape[1])
    cov = correlation * s2 * np.linalg.inv(A.T @ A)
    return x, cov, float(residual @ residual), len(b)


_PRIMES = {"\u2032": "'", "\u2033": "''", "\u2034": "'" * 3, "\u2019": "'"}


def link_name(model: ArmModel, name: str) -> str:
    """The model's name of a link with inertial parameters, from the paper's spelling (2'') or a
    shell-friendly one: typographic primes (2\u2033) or a trailing p per prime (2pp)."""
    blocks = model.layout.inertial_blocks
    spelled = "".join(_PRIMES.get(c, c) for c in name.strip())
    stem = spelled.rstrip("p")
    for candidate in (spelled, stem + "'" * (len(spelled) - len(stem))):
        if candidate in blocks:
            return candidate
    raise DataError(f"link {name!r} carries no inertial parameters in the {model.description.arm} model "
                    f"(links: {', '.join(blocks)}; 2pp also means 2'')")


def _recordings(what: str, data: Dataset | Sequence[Dataset]) -> list[Dataset]:
    recordings = [data] if isinstance(data, Dataset) else list(data)
    if not recordings:
        raise DataError(f"added mass: no {what} recording")
    return recordings


def _link_columns(model: ArmModel, processed: Dataset, start: int, lags: np.ndarray, samples: int,
                  settings: FilterSettings) -> np.ndarray:
    """The regressor columns (lx ly lz m) of the link's inertial block, filtered like the torques and
    delayed per joint like the base regressor (samples x joints x 4)."""
    H = model.regressor(processed.q, processed.qd, processed.qdd)[:, :, start + 6:start + 10]
    H = lowpass(H.reshape(len(H), -1), processed.rate, settings.cutoff_hz, settings.order).reshape(H.shape)
    top = int(lags.max(initial=0))
    return np.stack([H[top - lag:top - lag + samples, j, :] for j, lag in enumerate(lags)], axis=1)


def _separable_moments(rb: Regression, ra: Regression, H_link: np.ndarray, weights: np.ndarray) -> list[int]:
    """The first-moment components (0, 1, 2 = x, y, z) the data can separate from the rest of the fit
    (on a link that only translates, a component along the motion is not)."""
    samples, dof, r = rb.Hb.shape
    moments: list[int] = []
    for axis in range(3):
        trial = [*moments, axis, 3]
        A = np.concatenate([np.concatenate([rb.Hb, np.zeros((samples, dof, len(trial)))], axis=2),
                            np.concatenate([ra.Hb, H_link[:, :, trial]], axis=2)]).reshape(-1, r + len(trial))
        if np.linalg.matrix_rank(A * weights[np.arange(A.shape[0]) % dof, None]) == A.shape[1]:
            moments.append(axis)
    return moments


def _per_parameter_ratios(model: ArmModel, mass_index: int, rb: Regression, ra: Regression,
                          weights: np.ndarray) -> list[dict]:
    """Wang 2019 Table IV: two separate fits; each base parameter containing the link's mass gives
    m = (delta_after - delta_before) / c (shown for comparison)."""
    K = model.base.matrix(len(model.layout))
    fit_b, fit_a = (np.linalg.lstsq(*reg.weighted(weights), rcond=None)[0] for reg in (rb, ra))
    return [{"base_parameter": model.base_parameter_names[i][:80], "coefficient": float(K[i, mass_index]),
             "mass_kg": float((fit_a[i] - fit_b[i]) / K[i, mass_index])}
            for i in np.flatnonzero(np.abs(K[:, mass_index]) > 1e-12)]


def estimate_added_mass(model: ArmModel, link: str, before: Dataset | Sequence[Dataset],
                        after: Dataset | Sequence[Dataset]) -> AddedMass:
    """The mass taped on ``link`` from recordings without it (``before``) and with it (``after``): one
    recording each, or several (repeated runs average out what changes from run to run)."""
    link = link_name(model, link)
    befores, afters = _recordings("no-weight", before), _recordings("with-weight", after)
    settings = default_filter(model)
    pb = [prepare(model, d, settings) for d in befores]
    pa = [prepare(model, d, settings) for d in afters]
    rate = pb[0].rate
    if any(abs(d.rate - rate) > 1e-3 * rate for d in pb + pa):
        raise DataError("added mass: the recordings have different sampling rates "
                        f"({', '.join(f'{d.rate:g}' for d in pb + pa)} Hz)")
    regs_b = [build_regression(model, d) for d in pb]
    regs_a = [build_regression(model, d) for d in pa]
    lags = estimate_torque_lags(regs_b + regs_a, rate)  # the same arm, the same delays
    regs_b = [delayed(r, lags) for r in regs_b]
    regs_a = [delayed(r, lags) for r in regs_a]
    start = model.layout.inertial_blocks[link]
    H_link = np.concatenate([_link_columns(model, d, start, lags, len(r.y), settings)
                             for d, r in zip(pa, regs_a, strict=True)])
    rb, ra = Regression.stacked(regs_b), Regression.stacked(regs_a)
    y = np.concatenate([rb.y, ra.y])
    weights = range_weights(y)
    correlation = max(1.0, rate / (2.0 * settings.cutoff_hz))
    r = model.base.count
    moments = _separable_moments(rb, ra, H_link, weights)
    columns = [*moments, 3]
    zeros = np.zeros((len(rb.y), model.dof, len(columns)))
    x, cov, rss, rows = _joint_fit(rb.Hb, ra.Hb, y, zeros, H_link[:, :, columns], weights, correlation)
    mass, std = float(x[-1]), float(np.sqrt(cov[-1, -1]))
    offset = [0.0, 0.0, 0.0]
    for k, axis in enumerate(moments):
        offset[axis] = float(x[r + k] / mass) if mass != 0 else 0.0
    x0, cov0, rss0, _ = _joint_fit(rb.Hb, ra.Hb, y, zeros[:, :, :1], H_link[:, :, 3:], weights, correlation)
    per = _per_parameter_ratios(model, start + 9, rb, ra, weights)
    # Model choice by the Bayesian information criterion on the effective
    # number of independent rows: the weight's position is estimated only if
    # the data support it better than a weight at the frame origin.
    n_eff = rows / correlation
    bic_position = n_eff * np.log(rss / rows) + len(columns) * np.log(n_eff)
    bic_origin = n_eff * np.log(rss0 / rows) + np.log(n_eff)
    at_origin = (float(x0[r]), float(np.sqrt(cov0[r, r])))
    at_position = (mass, std)
    chosen = "origin" if bic_origin <= bic_position else "position"
    mass, std = at_origin if chosen == "origin" else at_position
    return AddedMass(mass, std, chosen, offset, at_position, at_origin, per)
