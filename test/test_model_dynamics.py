"""The generated model against independent computations (issue: MTM and PSM dynamics).

Reference: LagrangianReference (kinematics by 4x4 products, geometric
Jacobians, Lagrange's equation with complex-step derivatives), which shares
only the arm description with the symbolic derivation.
"""
from __future__ import annotations

import numpy as np
import pytest

from dvrk_ident_ros.model.arm_model import load_model
from dvrk_ident_ros.model.physical import min_pseudo_inertia_eigenvalues, random_physical_parameters
from dvrk_ident_ros.model.reference import LagrangianReference

ARMS = ["mtm", "psm"]


@pytest.fixture(scope="module", params=ARMS)
def model(request, tmp_path_factory):
    return load_model(request.param, cache_dir=tmp_path_factory.mktemp("cache"))


def _states(rng, n, count=4):
    return [(rng.uniform(-1.2, 1.2, n), rng.normal(0, 1.5, n), rng.normal(0, 3, n)) for _ in range(count)]


def test_regressor_matches_lagrangian_reference(model):
    rng = np.random.default_rng(1)
    ref = LagrangianReference(model.description)
    # generic parameters: the identity is linear in them, so one random vector checks every column at once
    delta = rng.normal(0, 1, len(model.parameter_names))
    for q, qd, qdd in _states(rng, model.dof, 3):
        ours = model.regressor(q, qd, qdd)[0] @ delta
        theirs = ref.torques(q, qd, qdd, delta)
        assert np.linalg.norm(ours - theirs) <= 1e-9 * np.linalg.norm(theirs)


def test_gravity_is_the_gradient_of_the_potential(model):
    rng = np.random.default_rng(2)
    ref = LagrangianReference(model.description)
    delta = random_physical_parameters(model.layout, rng)
    delta[model.layout.of_kind("K")] = 0.0  # the springs' potential is not part of P
    for q, _, _ in _states(rng, model.dof):
        ours = model.gravity(q, delta)[0]
        assert np.linalg.norm(ours - ref.gravity_torques(q, delta)) <= 1e-9 * np.linalg.norm(ours)


def test_mass_matrix_symmetric_positive_definite(model):
    rng = np.random.default_rng(3)
    delta = random_physical_parameters(model.layout, rng)
    assert min(min_pseudo_inertia_eigenvalues(model.layout, delta).values()) > 0
    q = rng.uniform(-np.pi, np.pi, (50, model.dof))
    M = model.mass_matrix(q, delta)
    assert np.allclose(M, M.transpose(0, 2, 1), rtol=0, atol=1e-12)
    assert np.linalg.eigvalsh(M).min() > 0


def test_energy_balance_mdot_minus_2c_is_skew(model):
    """qd^T (Mdot - 2C) qd = 0: the rate of kinetic energy equals the power of the applied torques."""
    rng = np.random.default_rng(4)
    delta = random_physical_parameters(model.layout, rng)
    h = 1e-30
    for q, qd, _ in _states(rng, model.dof):
        Mdot = np.imag(model.mass_matrix(q + 1j * h * qd, delta.astype(complex)))[0] / h
        c_qd = model.coriolis(q, qd, delta)[0]
        lhs, rhs = qd @ Mdot @ qd, 2 * qd @ c_qd
        assert abs(lhs - rhs) <= 1e-9 * max(abs(lhs), 1e-12)


def test_full_model_is_the_sum_of_its_parts(model):
    """H delta = M qdd + C qd + g + friction: M, C, g come from the same derivation."""
    rng = np.random.default_rng(5)
    delta = random_physical_parameters(model.layout, rng)
    friction = [i for k in ("Fv", "Fc", "Fo") for i in model.layout.of_kind(k)]
    for q, qd, qdd in _states(rng, model.dof):
        H = model.regressor(q, qd, qdd)[0]
        parts = (model.mass_matrix(q, delta)[0] @ qdd + model.coriolis(q, qd, delta)[0]
                 + model.gravity(q, delta)[0] + H[:, friction] @ delta[friction])
        assert np.allclose(H @ delta, parts, rtol=1e-10, atol=1e-12)


def test_base_parameters_reproduce_the_torques(model):
    rng = np.random.default_rng(6)
    delta = rng.normal(0, 1, len(model.parameter_names))
    q, qd, qdd = (rng.normal(0, 1, (30, model.dof)) for _ in range(3))
    full = model.regressor(q, qd, qdd) @ delta
    base = model.base_regressor(q, qd, qdd) @ model.base.from_standard(delta)
    assert np.allclose(full, base, rtol=1e-9, atol=1e-9 * np.abs(full).max())
    W = model.base_regressor(q, qd, qdd).reshape(-1, model.base.count)
    assert np.linalg.matrix_rank(W) == model.base.count


def test_base_parameter_counts_match_the_original_package(model):
    expected = {"mtm": (122, 73), "psm": (115, 49)}[model.description.arm]
    assert (len(model.parameter_names), model.base.count) == expected


def test_forward_kinematics_matches_reference(model):
    rng = np.random.default_rng(7)
    ref = LagrangianReference(model.description)
    q = rng.uniform(-1, 1, (3, model.dof))
    fk = model.forward_kinematics(q)
    for s in range(3):
        poses = ref.poses(q[s])
        for i, frame in enumerate(model.description.frames):
            assert np.allclose(fk[s, i], poses[frame.name], atol=1e-12)


def test_vectorised_equals_per_sample(model):
    rng = np.random.default_rng(8)
    q, qd, qdd = (rng.normal(0, 1, (5, model.dof)) for _ in range(3))
    batch = model.regressor(q, qd, qdd)
    for s in range(5):
        assert np.array_equal(batch[s], model.regressor(q[s], qd[s], qdd[s])[0])


def test_joint_space_conversions_preserve_power(model):
    rng = np.random.default_rng(9)
    qm, qdm, taum = (rng.normal(0, 1, (4, model.dof)) for _ in range(3))
    assert np.allclose(model.motor_from_dvrk(model.dvrk_from_motor(qm)), qm)
    qdd = model.dvrk_from_motor(qdm)
    taud = model.dvrk_torque_from_motor(taum)
    assert np.allclose(np.sum(taum * qdm, axis=1), np.sum(taud * qdd, axis=1))
    assert np.allclose(model.motor_torque_from_dvrk(taud), taum)


def test_base_parameters_on_other_equivalent_columns_are_rebased_exactly(model):
    """A parameter file whose base parameters sit on other columns of the same groups (pivoted QR
    breaking a rounding tie the other way) maps onto the installed model's exactly."""
    from dvrk_ident_ros.errors import DataError
    from dvrk_ident_ros.model.arm_model import _random_states
    from dvrk_ident_ros.model.base_parameters import compute_base_parameters

    P = len(model.parameter_names)
    q, qd, qdd = _random_states(model.dof, 60, 7)
    W = model.regressor(q, qd, qdd).reshape(-1, P)
    reverse = np.arange(P)[::-1]  # the columns in the opposite order: pivoting keeps others of each group
    alt = compute_base_parameters(W[:, reverse])
    alt_indices = reverse[alt.independent]
    assert set(alt_indices.tolist()) != set(model.base.independent.tolist())
    delta = np.random.default_rng(3).normal(0, 1, P)
    alt_values = alt.from_standard(delta[reverse])
    ours = model.rebase(alt_indices, alt_values)
    expected = model.base.from_standard(delta)
    assert np.allclose(ours, expected, rtol=1e-8, atol=1e-10 * np.abs(expected).max())
    with pytest.raises(DataError, match="not base parameters"):
        model.rebase(np.append(alt_indices[1:], P), alt_values)  # a column the model does not have
    with pytest.raises(DataError, match="not base parameters"):
        model.rebase(alt_indices, alt_values[1:])
