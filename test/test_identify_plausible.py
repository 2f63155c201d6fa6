"""The second stage: plausible standard parameters closest to a prior (identify/plausible.py)."""
from __future__ import annotations

import numpy as np
import pytest

from dvrk_ident_ros.errors import SolverError
from dvrk_ident_ros.identify.plausible import active_bounds, choose_plausible, summary_line
from dvrk_ident_ros.identify.prior import divergences, geometric_prior
from dvrk_ident_ros.identify.problem import Regression
from dvrk_ident_ros.identify.sdp import parameter_bounds, solve_sdp
from dvrk_ident_ros.identify.synthetic import plausible_parameters, random_fourier, synthetic_recording
from dvrk_ident_ros.model.arm_model import load_model
from dvrk_ident_ros.model.physical import min_pseudo_inertia_eigenvalues
from dvrk_ident_ros.sim.config import load_sim_config


def _sdp_of(model, delta, rng):
    traj = random_fourier(model, rng, base_frequency=0.1, amplitude=0.25)
    data, qdd = synthetic_recording(model, delta, traj, rate=100.0, duration=2 * traj.period)
    reg = Regression(model.base_regressor(data.q, data.qd, qdd), data.tau - model.known_torques(data.q))
    A, b = reg.weighted(np.ones(model.dof))
    return solve_sdp(model, A, b)


@pytest.fixture(scope="module", params=["mtm", "psm"])
def synthetic(request):
    """SDP answer on exact data of plausible parameters (masses inside their bounds)."""
    model = load_model(request.param)
    rng = np.random.default_rng(11)
    delta = plausible_parameters(model, rng)
    sdp = _sdp_of(model, delta, rng)
    return model, sdp, choose_plausible(model, sdp.base, sdp.standard)


@pytest.fixture(scope="module", params=["mtm", "psm"])
def simulated(request):
    """SDP answer on exact data of the simulator's true parameters (config/sim/<arm>_true.json)."""
    model = load_model(request.param)
    delta = load_sim_config(request.param).delta
    sdp = _sdp_of(model, delta, np.random.default_rng(3))
    return model, sdp, choose_plausible(model, sdp.base, sdp.standard)


def _base_kept(model, sdp, result) -> float:
    truth = sdp.base
    after = model.base.matrix(len(model.layout)) @ result.standard
    return float((np.abs(after - truth) / np.maximum(np.abs(truth), 1e-3 * np.abs(truth).max())).max())


def test_geometric_prior_is_strictly_consistent_and_inside_the_mass_bounds():
    for arm in ("mtm", "psm"):
        model = load_model(arm)
        prior = geometric_prior(model)
        assert min(min_pseudo_inertia_eigenvalues(model.layout, prior).values()) > 0
        for name, (lo, hi) in parameter_bounds(model).items():
            if name.startswith("m"):
                assert lo < prior[model.layout.index(name)] < hi, name


def test_on_plausible_truth_the_base_parameters_are_kept_and_the_prior_approached(synthetic):
    _check_second_stage(*synthetic)


def test_on_the_simulators_truth_the_base_parameters_are_kept_and_the_prior_approached(simulated):
    _check_second_stage(*simulated)


def _check_second_stage(model, sdp, result):
    assert _base_kept(model, sdp, result) < 1e-6
    assert result.max_base_change < 1e-6
    # friction, motor inertias and springs as the SDP found them
    other = [i for i, kind in enumerate(model.layout.kinds) if kind not in ("L", "l", "m")]
    assert np.array_equal(result.standard[other], sdp.standard[other])
    # the SDP's answer is feasible for the second stage: the divergence can only drop, and it does
    assert result.total_divergence < 0.5 * result.fit_total_divergence  # measured: 5x to 400x lower
    assert result.fit_total_divergence == pytest.approx(sum(divergences(model, sdp.standard, result.prior).values()))
    assert min(v["min_pseudo_inertia_eigenvalue"] for v in result.links.values()) > 0


def test_no_mass_on_a_bound_when_the_truth_is_inside(synthetic):
    model, _, result = synthetic
    bounds = parameter_bounds(model)
    for link, v in result.links.items():
        lo, hi = bounds[f"m{link}"]
        assert not [b for b in v["active_bounds"] if b.startswith("mass")], (link, v["mass"])
        assert lo + 1e-3 * (hi - lo) < v["mass"] < hi - 1e-3 * (hi - lo), (link, v["mass"])


def test_active_bounds_are_reported_as_they_are(simulated):
    """The simulator's truth has masses on their bounds (config/sim/README.md); whatever the
    answer, a mass within 1e-6 of a bound is reported, one far from both is not."""
    model, _, result = simulated
    bounds = parameter_bounds(model)
    for link, v in result.links.items():
        lo, hi = bounds[f"m{link}"]
        reported = {b for b in v["active_bounds"] if b.startswith("mass")}
        if abs(v["mass"] - hi) < 1e-6 * (hi - lo):
            assert "mass upper" in reported, link
        elif abs(v["mass"] - lo) < 1e-6 * (hi - lo):
            assert "mass lower" in reported, link
        elif min(v["mass"] - lo, hi - v["mass"]) > 1e-3 * (hi - lo):
            assert not reported, link
    line = summary_line(result.as_dict(model.parameter_names, result.standard))
    assert "plausible inertials" in line and all(f"{link} " in line for link in result.links)


def test_active_bounds_finds_a_mass_put_on_its_bound():
    model = load_model("psm")
    delta = geometric_prior(model)
    link = next(iter(model.layout.inertial_blocks))
    i = model.layout.inertial_blocks[link]
    delta[i:i + 10] *= parameter_bounds(model)[f"m{link}"][1] / delta[i + 9]
    assert "mass upper" in active_bounds(model, delta)[link]


def test_base_parameters_no_consistent_arm_can_give_are_refused_clearly():
    """A negative insertion mass (PSM base parameter m3): no physically consistent answer."""
    model = load_model("psm")
    delta = geometric_prior(model)
    base = model.base.from_standard(delta)
    base[model.base_parameter_names.index("m3")] = -0.1
    with pytest.raises(SolverError, match="infeasible"):
        choose_plausible(model, base, delta)


def test_the_pipeline_records_the_plausible_parameters_or_the_failure(tmp_path):
    from dvrk_ident_ros.data.processing import FilterSettings
    from dvrk_ident_ros.identify.pipeline import _plausible, identify
    from dvrk_ident_ros.identify.results import IdentificationResult

    model = load_model("psm")
    rng = np.random.default_rng(4)
    delta = plausible_parameters(model, rng)
    traj = random_fourier(model, rng, base_frequency=0.1, amplitude=0.25)
    data, _ = synthetic_recording(model, delta, traj, rate=200.0, duration=3 * traj.period, noise=0.002, rng=rng)
    result = identify(model, [data], "sdp", FilterSettings(cutoff_hz=3.0))
    assert result.plausibility["status"] == "optimal" and "plausible" in result.timings
    standard = np.array([result.standard[n] for n in model.parameter_names])
    fit = np.array([result.plausibility["fit_standard"][n] for n in model.parameter_names])
    K = model.base.matrix(len(model.layout))
    assert np.allclose(K @ standard, result.base, rtol=1e-6, atol=1e-9)
    assert not np.allclose(standard, fit)  # the file's standard parameters are the plausible ones
    path = result.save(tmp_path / "p.json")
    loaded = IdentificationResult.load(path)
    assert loaded.plausibility["links"].keys() == result.plausibility["links"].keys()
    # a prior from a file that already gives these base parameters is the answer itself
    again = identify(model, [data], "sdp", FilterSettings(cutoff_hz=3.0), prior=path)
    assert again.plausibility["prior_source"] == str(path)
    assert again.plausibility["total_divergence"] < 1e-5
    assert np.allclose([again.standard[n] for n in model.parameter_names], standard, rtol=1e-4, atol=1e-7)
    # a failing second stage leaves the SDP's answer and says so
    bad = result.base.copy()
    bad[model.base_parameter_names.index("m3")] = -0.1
    failed = _plausible(model, bad, fit, None)
    assert failed["status"].startswith("failed: plausible parameters: infeasible")
    assert "SDP's own" in summary_line(failed)


@pytest.fixture(scope="module")
def noisy_psm_on_bounds():
    """The simulator's PSM truth (masses on their bounds, config/sim/README.md), torques with noise."""
    from dvrk_ident_ros.identify.plausible import fit_region

    model = load_model("psm")
    rng = np.random.default_rng(5)
    traj = random_fourier(model, rng, base_frequency=0.1, amplitude=0.25)
    data, qdd = synthetic_recording(model, load_sim_config("psm").delta, traj, rate=100.0,
                                    duration=2 * traj.period, noise=0.01, rng=rng)
    reg = Regression(model.base_regressor(data.q, data.qd, qdd), data.tau - model.known_torques(data.q))
    A, b = reg.weighted(np.ones(model.dof))
    sdp = solve_sdp(model, A, b)
    return model, sdp, fit_region(model, A, b, sdp.base), A, b


def test_the_fit_region_is_the_least_squares_confidence_ellipsoid():
    """For an unconstrained fit, a residual (1 + limit) times the best is the boundary of the 95 %
    ellipsoid of identify/least_squares.py's covariance (Cov = c s^2 (A^T A)^-1)."""
    from scipy.stats import chi2

    from dvrk_ident_ros.identify.least_squares import solve_least_squares
    from dvrk_ident_ros.identify.plausible import fit_region

    model = load_model("psm")
    rng = np.random.default_rng(8)
    A = rng.normal(size=(400, len(model.base_parameter_names)))
    b = A @ rng.normal(size=A.shape[1]) + rng.normal(0, 0.1, 400)
    reg = Regression(A.reshape(400, 1, -1), b.reshape(400, 1))
    lsq = solve_least_squares(reg, "none", correlation=3.0)
    region = fit_region(model, A, b, lsq.base, correlation=3.0)
    d = rng.normal(size=A.shape[1])
    d *= np.sqrt(region.limit * region.best / np.sum((A @ d) ** 2))  # on the region's boundary
    assert np.sum((A @ (lsq.base + d) - b) ** 2) == pytest.approx((1 + region.limit) * region.best, rel=1e-9)
    assert d @ np.linalg.solve(lsq.covariance, d) == pytest.approx(chi2.ppf(0.95, A.shape[1]), rel=1e-9)


def test_within_the_fit_region_the_links_leave_their_bounds(noisy_psm_on_bounds):
    """The exact stage must keep the base parameters and so the bounds they force; within the fit's
    region the divergence can only drop, the residual stays inside the region, and what it reports
    active is what is active."""
    from dvrk_ident_ros.identify.plausible import choose_within_fit

    model, sdp, region, A, b = noisy_psm_on_bounds
    exact = choose_plausible(model, sdp.base, sdp.standard)
    relaxed = choose_within_fit(model, region, sdp.standard)
    assert relaxed.total_divergence <= exact.total_divergence + 1e-6
    assert relaxed.residual_increase <= relaxed.tried[-1] * (1 + 1e-4) + 1e-9
    assert relaxed.tried[-1] <= region.limit
    assert region.residual(relaxed.standard) == pytest.approx(np.sum((A @ (model.base.matrix(len(model.layout))
                                                                            @ relaxed.standard) - b) ** 2))
    reported = {k: v["active_bounds"] for k, v in relaxed.links.items()}
    assert reported == active_bounds(model, relaxed.standard)
    masses_on_bounds = [k for k, v in exact.links.items() if any(b.startswith("mass") for b in v["active_bounds"])]
    assert masses_on_bounds, "the exact stage should inherit the truth's masses on their bounds"
    if len(relaxed.tried) < len([e for e in (0.001, 0.003, 0.01, 0.03, 0.1) if e < region.limit]) + 1:
        assert not any(reported.values())  # it stopped early: nothing active
    assert min(v["min_pseudo_inertia_eigenvalue"] for v in relaxed.links.values()) > 0
