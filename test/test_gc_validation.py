"""The held-out protocol of gc estimates (gc/validation.py) and the regularised MLSE (gc/regularised.py)."""
from __future__ import annotations

import numpy as np
import pytest
from test_gc import _synthetic, _thetas

from dvrk_ident_ros.gc.fits import FITS
from dvrk_ident_ros.gc.mlse import fit_mlse
from dvrk_ident_ros.gc.regularised import Settings, fit_regularised
from dvrk_ident_ros.gc.validation import FixedFile, held_out_errors, held_out_folds


@pytest.fixture(scope="module")
def synthetic():
    rng = np.random.default_rng(5)
    theta_pos, theta_neg = _thetas(rng)
    return _synthetic(rng, theta_pos, theta_neg), theta_pos, theta_neg


def test_sweep_folds_hold_out_whole_sweeps_in_both_directions(synthetic):
    data, _, _ = synthetic
    folds = held_out_folds(data, sweep_folds=3, far_fraction=0.1)
    sweeps = [f for f in folds if f.family == "sweeps"]
    assert len(sweeps) == 3 and [f.family for f in folds].count("far") == 1
    assert np.array_equal(np.sum([f.test for f in sweeps], axis=0), np.ones(len(data.q)))  # each pose once
    for fold in sweeps:
        for s in np.unique(data.sweep):
            assert len(set(fold.test[data.sweep == s])) == 1  # a sweep is held out whole or not at all
        for i in range(1, 7):  # both directions of a held-out group go together; training keeps both
            held = fold.test & (data.joint == i)
            assert np.sum(held & (data.direction > 0)) == np.sum(held & (data.direction < 0))
            kept = ~fold.test & (data.joint == i)
            assert set(data.direction[kept]) == {1, -1}


def test_far_fold_holds_out_the_ends_of_a_sweep(synthetic):
    data, _, _ = synthetic
    far = next(f for f in held_out_folds(data) if f.family == "far").test
    j1 = data.joint == 1
    assert np.sum(far & j1) == round(0.1 * np.sum(j1))
    held, kept = data.q[far & j1, 0], data.q[~far & j1, 0]
    assert np.all((held < kept.min()) | (held > kept.max()))  # the outermost values of q1, and only those


def test_figures_of_known_errors(synthetic):
    data, theta_pos, theta_neg = synthetic
    folds = held_out_folds(data)
    exact = held_out_errors(fit_mlse, data, folds)
    for family in ("sweeps", "far", "all"):
        for direction in ("both", "pos", "neg"):
            assert np.all(exact.per_joint(family, direction) < 1e-8)
    scaled = held_out_errors(FixedFile(1.1 * theta_pos, 1.1 * theta_neg).fit, data, folds)  # 10 % too strong
    for family in ("sweeps", "far", "all"):
        assert np.allclose(scaled.per_joint(family), 0.1, atol=1e-12)
    assert scaled.mean() == pytest.approx(0.1, abs=1e-12)
    offset = FixedFile(theta_pos.copy(), theta_neg.copy())
    offset.theta_pos[10 + 5 * 3] += 0.01  # joint 4's constant, positive direction only
    result = held_out_errors(offset.fit, data, folds)
    j4 = (data.joint == 4) & (data.direction > 0)
    expected = 0.01 * np.sqrt(j4.sum()) / np.linalg.norm(data.tau[j4, 3])
    assert result.per_joint("sweeps", "pos")[3] == pytest.approx(expected, rel=1e-9)
    assert np.all(np.delete(result.per_joint("sweeps"), 3) < 1e-12)


def test_regularised_mlse_is_exact_on_noise_free_data_and_registered(synthetic):
    data, theta_pos, theta_neg = synthetic
    fit = FITS["rmlse"](data)
    assert fit.method == "rmlse" and set(fit.lambdas) == set(range(1, 7))
    held = held_out_errors(lambda d: fit_regularised(d, None, Settings(lambdas=(0.0, 1e-4))), data)
    assert held.mean() < 1e-6
    assert np.allclose(fit.predict(data), FixedFile(theta_pos, theta_neg).predict(data), atol=1e-6)


@pytest.mark.slow
def test_regularised_mlse_generalises_better_than_mlse_on_mtml_41878(shared_dir):
    """Measured (bench/bench_gc_generalisation.py): held-out mean 15.04 % (rmlse) vs 15.51 % (MLSE), cross
    guard 53.7 % vs 55.9 %; the original file 13.53 % (its held-out poses were in its fit), the
    least-squares oracle on all poses 13.20 %: 15 % below the original is out of the format's reach."""
    from dvrk_ident_ros.gc.data import load_cuhk
    from dvrk_ident_ros.gc.params import load_gc

    root = shared_dir / "data" / "cuhk-mtm-gc" / "MTML-41878"
    data = load_cuhk(root)
    folds = held_out_folds(data)
    ours = held_out_errors(fit_regularised, data, folds)
    plain = held_out_errors(fit_mlse, data, folds)
    assert ours.mean() < 0.99 * plain.mean()  # measured -3.0 %
    assert ours.mean("cross") <= plain.mean("cross")  # measured -3.9 %
    assert ours.per_joint("cross")[1] < 1.05 * plain.per_joint("cross")[1]  # joint 2's gravity kept
    original = load_gc(root / "gc-MTML-41878.json")
    theirs = held_out_errors(FixedFile(original.theta_pos, original.theta_neg).fit, data, folds)
    oracle = fit_regularised(data, dict.fromkeys(range(1, 7), 4), Settings(lambdas=(0.0,), split_gravity=True))
    floor = held_out_errors(FixedFile(oracle.theta(+1), oracle.theta(-1)).fit, data, folds)
    assert floor.mean() > 0.95 * theirs.mean()  # measured 13.20 vs 13.53 %
