"""Physically consistent identification as a semidefinite program (Wang 2019 section V).

    minimise  || R K delta - Q^T b ||^2  (+ rho ||delta||^2, a tiny tie-break)
    s.t.      J_k(delta) >= 0 for every link (4x4 pseudo-inertia, equivalent to eq. 25),
              mass and centre-of-mass bounds (m r_lo <= l <= m r_hi),
              friction, motor inertia and spring stiffness within their bounds,

where A = Q R is the QR factorisation of the weighted base regressor (Q^T b
its projected target) and delta_b = K delta: the program's size does not grow
with the number of samples. Solved with Clarabel (interior point) to
optimality; any other status is a failure, and every constraint is verified
on the returned parameters.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np

from dvrk_ident_ros.errors import SolverError
from dvrk_ident_ros.model.arm_model import ArmModel
from dvrk_ident_ros.model.physical import min_pseudo_inertia_eigenvalues

CONSTRAINT_TOLERANCE = 1e-9


@dataclass
class SdpResult:
    standard: np.ndarray
    base: np.ndarray
    status: str
    solve_seconds: float
    iterations: int | None
    min_pseudo_inertia_eigenvalue: float
    max_bound_violation: float
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
            out[f"m{link}"] = tuple(float(x) for x in link_spec["mass"])
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


def solve_sdp(model: ArmModel, A: np.ndarray, b: np.ndarray, *, tie_break: float = 1e-8,
              prior: np.ndarray | None = None, prior_weight: float = 0.0) -> SdpResult:
    """A (rows x r) weighted base regressor, b its target."""
    start = time.perf_counter()
    Q, R = np.linalg.qr(A)
    c = Q.T @ b
    layout = model.layout
    P = len(layout)
    K = model.base.matrix(P)
    RK = R @ K
    # The tie-break picks one standard-parameter vector among the many with the
    # same base parameters; each parameter is weighted by its column's norm so
    # that the stiff-but-small columns (a spring's deflection is ~1e-4) are not
    # shrunk more than the others.
    column = np.linalg.norm(RK, axis=0)
    column[column == 0] = np.median(column[column > 0])
    delta = cp.Variable(P)
    objective = cp.sum_squares(RK @ delta - c) + tie_break * cp.sum_squares(cp.multiply(column, delta))
    if prior is not None and prior_weight > 0:
        objective += prior_weight * cp.sum_squares(cp.multiply(column, delta - prior))
    constraints = []
    for i in layout.inertial_blocks.values():
        constraints.append(_pseudo_inertia(delta, i) >> 0)
    bounds = parameter_bounds(model)
    for name, (lo, hi) in bounds.items():
        j = layout.index(name)
        if np.isfinite(lo):
            constraints.append(delta[j] >= lo)
        if np.isfinite(hi):
            constraints.append(delta[j] <= hi)
    com_bounds = {}
    for link, link_spec in ((model.description.bounds or {}).get("links") or {}).items():
        if "com" not in link_spec:
            continue
        i = layout.inertial_blocks[link]
        for axis, (lo, hi) in enumerate(link_spec["com"]):
            constraints += [delta[i + 6 + axis] >= lo * delta[i + 9], delta[i + 6 + axis] <= hi * delta[i + 9]]
            com_bounds[(link, axis)] = (float(lo), float(hi))
    problem = cp.Problem(cp.Minimize(objective), constraints)
    try:
        problem.solve(solver=cp.CLARABEL)
    except cp.error.SolverError as exc:
        raise SolverError(f"SDP: the solver failed: {exc}") from exc
    status = problem.status
    if status != cp.OPTIMAL or delta.value is None:
        raise SolverError(f"SDP: solver status {status!r} (only 'optimal' is accepted; check the bounds)")
    value = np.asarray(delta.value, dtype=float)
    min_eig = min(min_pseudo_inertia_eigenvalues(layout, value).values(), default=np.inf)
    violation = 0.0
    for name, (lo, hi) in bounds.items():
        v = value[layout.index(name)]
        violation = max(violation, lo - v, v - hi)
    for (link, axis), (lo, hi) in com_bounds.items():
        i = layout.inertial_blocks[link]
        lv, m = value[i + 6 + axis], value[i + 9]
        violation = max(violation, lo * m - lv, lv - hi * m)
    if min_eig < -CONSTRAINT_TOLERANCE or violation > CONSTRAINT_TOLERANCE:
        raise SolverError(f"SDP: answer violates its constraints (min pseudo-inertia eigenvalue {min_eig:.2e}, "
                          f"worst bound violation {violation:.2e})")
    stats = problem.solver_stats
    return SdpResult(
        standard=value, base=K @ value, status=status, solve_seconds=time.perf_counter() - start,
        iterations=getattr(stats, "num_iters", None), min_pseudo_inertia_eigenvalue=min_eig,
        max_bound_violation=max(violation, 0.0), bounds={k: list(v) for k, v in bounds.items()},
    )
