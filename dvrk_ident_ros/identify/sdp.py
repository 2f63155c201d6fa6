"""Physically consistent identification as a semidefinite program (Wang 2019 section V).

    minimise  || R K delta - Q^T b ||^2  (+ rho ||delta||^2, a tiny tie-break)
    s.t.      J_k(delta) >= 0 for every link (4x4 pseudo-inertia, equivalent to eq. 25),
              mass and centre-of-mass bounds (m r_lo <= l <= m r_hi),
              friction, motor inertia and spring stiffness within their bounds,

where A = Q R is the QR factorisation of the weighted base regressor (Q^T b
its projected target) and delta_b = K delta: the program's size does not grow
with the number of samples. Solved with Clarabel (interior point) to
optimality; any other status is a failure, and every constraint is verified
on the returned parameters. The standard parameters a parameter file carries
are then chosen closest to a prior with these base parameters (identify/plausible.py).
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np
import scipy.linalg

from dvrk_ident_ros.errors import SolverError
from dvrk_ident_ros.model.arm_model import ArmModel
from dvrk_ident_ros.model.physical import min_pseudo_inertia_eigenvalues

CONSTRAINT_TOLERANCE = 1e-9
# The pseudo-inertias are constrained to J >= PSEUDO_INERTIA_FLOOR * I, not >= 0:
# the interior-point solver stops within its feasibility tolerance (about 1e-8
# here) of the cone, and a link the data cannot see is drawn to the cone's tip.
# 1e-7 kg m^2 is far below any dVRK link's (a 10 g, 2 mm shaft has 1e-8 about
# its axis only along one direction, and costs at most 1e-6 N m at 10 rad/s^2).
PSEUDO_INERTIA_FLOOR = 1e-7


@dataclass
class SdpResult:
    standard: np.ndarray
    base: np.ndarray
    status: str
    solve_seconds: float
    iterations: int | None
    min_pseudo_inertia_eigenvalue: float
    max_bound_violation: float
    tie_break: bool = True  # whether the null-space choice converged (else: the first optimal fit)
    bounds: dict = field(default_factory=dict)


def parameter_bounds(model: ArmModel) -> dict[str, tuple[float, float]]:
    """Lower/upper bounds per standard parameter name from the description's ``bounds``."""
    spec = model.description.bounds or {}
    out: dict[str, tuple[float, float]] = {}
    friction = spec.get("friction") or {}
    overrides = spec.get("friction_overrides") or {}
    for name, kind, owner in zip(model.layout.names, model.layout.kinds, model.layout.owners, strict=True):
        if kind in ("Fv", "Fc", "Fo"):
            default = {"Fv": (0.0, np.inf), "Fc": (0.0, np.inf), "Fo": (-np.inf, np.inf)}[kind]
            lo, hi = (overrides.get(owner) or {}).get(kind, friction.get(kind, default))
            out[name] = (float(lo), float(hi))
        elif kind == "Im":
            lo, hi = spec.get("motor_inertia", (0.0, np.inf))
            out[name] = (float(lo), float(hi))
        elif kind == "K":
            lo, hi = spec.get("spring", (0.0, np.inf))
            out[name] = (float(lo), float(hi))
    for link, link_spec in (spec.get("links") or {}).items():
        if "mass" in link_spec:
            lo, hi = link_spec["mass"]
            out[f"m{link}"] = (float(lo), float(hi))
    return out


def _pseudo_inertia(delta: cp.Variable, i: int) -> cp.Expression:
    xx, xy, xz, yy, yz, zz, lx, ly, lz, m = (delta[i + k] for k in range(10))
    half_trace = 0.5 * (xx + yy + zz)
    return cp.bmat([
        [half_trace - xx, -xy, -xz, lx],
        [-xy, half_trace - yy, -yz, ly],
        [-xz, -yz, half_trace - zz, lz],
        [lx, ly, lz, m],
    ])


def _constraints(model: ArmModel, delta: cp.Variable) -> list:
    constraints = [_pseudo_inertia(delta, i) >> PSEUDO_INERTIA_FLOOR * np.eye(4)
                   for i in model.layout.inertial_blocks.values()]
    return constraints + bound_constraints(model, delta)


def bound_constraints(model: ArmModel, delta: cp.Expression) -> list:
    """The description's bounds: per-parameter (mass, friction, ...) and centre of mass (m r_lo <= l <= m r_hi)."""
    layout = model.layout
    constraints = []
    for name, (lo, hi) in parameter_bounds(model).items():
        j = layout.index(name)
        if np.isfinite(lo):
            constraints.append(delta[j] >= lo)
        if np.isfinite(hi):
            constraints.append(delta[j] <= hi)
    for (link, axis), (lo, hi) in _com_bounds(model).items():
        i = layout.inertial_blocks[link]
        constraints += [delta[i + 6 + axis] >= lo * delta[i + 9], delta[i + 6 + axis] <= hi * delta[i + 9]]
    return constraints


def _com_bounds(model: ArmModel) -> dict[tuple[str, int], tuple[float, float]]:
    out = {}
    for link, link_spec in ((model.description.bounds or {}).get("links") or {}).items():
        for axis, (lo, hi) in enumerate(link_spec.get("com") or []):
            out[(link, axis)] = (float(lo), float(hi))
    return out


def _solve(problem: cp.Problem) -> None:
    try:
        with warnings.catch_warnings():  # an inaccurate answer is reported by its status, below
            warnings.simplefilter("ignore", UserWarning)
            problem.solve(solver=cp.CLARABEL)
    except cp.error.SolverError as exc:
        raise SolverError(f"SDP: the solver failed: {exc}") from exc
    if problem.status != cp.OPTIMAL:
        raise SolverError(f"SDP: solver status {problem.status!r} (only 'optimal' is accepted; check the bounds)")


def check_constraints(model: ArmModel, value: np.ndarray) -> tuple[float, float]:
    """(smallest pseudo-inertia eigenvalue, worst bound violation) of standard parameters."""
    layout = model.layout
    min_eig = min(min_pseudo_inertia_eigenvalues(layout, value).values(), default=np.inf)
    violation = 0.0
    for name, (lo, hi) in parameter_bounds(model).items():
        v = value[layout.index(name)]
        violation = max(violation, lo - v, v - hi)
    for (link, axis), (lo, hi) in _com_bounds(model).items():
        i = layout.inertial_blocks[link]
        lv, m = value[i + 6 + axis], value[i + 9]
        violation = max(violation, lo * m - lv, lv - hi * m)
    return min_eig, max(violation, 0.0)


def solve_sdp(model: ArmModel, A: np.ndarray, b: np.ndarray, *, tie_break: float = 1e-6,
              prior: np.ndarray | None = None) -> SdpResult:
    """A (rows x r) weighted base regressor, b its target; ``prior``: standard parameters
    the unidentifiable directions are drawn to (default zero)."""
    start = time.perf_counter()
    Q, R = np.linalg.qr(A)
    c = Q.T @ b
    P = len(model.layout)
    K = model.base.matrix(P)
    RK = R @ K
    # Only base parameters are identifiable: the standard parameters are fixed
    # in the null space of K by a small penalty that acts on that null space
    # alone (in column-scaled units, so the small-valued columns such as a
    # spring's deflection are not favoured), drawing it to the prior (zero by
    # default). The fit of the identifiable part is not traded for it except
    # through the constraints, and the unidentifiable directions get no
    # implausible values (the original package's 20 kg m^2 link).
    column = np.linalg.norm(RK, axis=0)
    column[column == 0] = np.median(column[column > 0])
    null = scipy.linalg.null_space(K / column[None, :])  # P x (P - r), orthonormal
    project = null.T * column[None, :]  # null-space coordinates of the scaled parameters
    target = np.zeros(P) if prior is None else np.asarray(prior, dtype=float)
    # The penalty's weight follows the misfit of the best constrained fit, so
    # exact data are fitted exactly and noisy data lose nothing measurable.
    delta = cp.Variable(P)
    constraints = _constraints(model, delta)
    residual = cp.sum_squares(RK @ delta - c)
    first = cp.Problem(cp.Minimize(residual), constraints)
    _solve(first)
    fit_value = np.asarray(delta.value, dtype=float)
    iterations = getattr(first.solver_stats, "num_iters", 0) or 0
    energy = float(c @ c)
    scale = 1.0 / energy if energy > 0 else 1.0  # all-zero torques: nothing to scale by
    weight = tie_break * float(first.value) * scale
    penalty = cp.sum_squares(project @ (delta - target))
    # The interior-point solver occasionally ends this second problem short of
    # its tolerances; the same problem with its objective scaled to order one
    # usually converges. If neither does, the first (optimal) answer stands,
    # without the tie-break, and the result says so.
    tie_break_used = False
    for objective in (residual + weight * penalty, scale * residual + weight * scale * penalty):
        problem = cp.Problem(cp.Minimize(objective), constraints)
        try:
            _solve(problem)
        except SolverError:
            continue
        iterations += getattr(problem.solver_stats, "num_iters", 0) or 0
        tie_break_used = True
        break
    value = np.asarray(delta.value, dtype=float) if tie_break_used else fit_value
    min_eig, violation = check_constraints(model, value)
    if tie_break_used and (min_eig < -CONSTRAINT_TOLERANCE or violation > CONSTRAINT_TOLERANCE):
        # the tie-break ended inside the solver's tolerances but outside the constraints': the first answer
        # stands, as when the tie-break does not converge
        tie_break_used = False
        value = fit_value
        min_eig, violation = check_constraints(model, value)
    if min_eig < -CONSTRAINT_TOLERANCE or violation > CONSTRAINT_TOLERANCE:
        raise SolverError(f"SDP: answer violates its constraints (min pseudo-inertia eigenvalue {min_eig:.2e}, "
                          f"worst bound violation {violation:.2e})")
    return SdpResult(
        standard=value, base=K @ value, status=first.status, solve_seconds=time.perf_counter() - start,
        iterations=iterations, min_pseudo_inertia_eigenvalue=min_eig, tie_break=tie_break_used,
        max_bound_violation=violation, bounds={k: list(v) for k, v in parameter_bounds(model).items()},
    )
