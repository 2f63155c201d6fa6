"""The held-out protocol of gc estimates (gc/validation/validation.py, the folds of gc/fitting/folds.py) and the
regularised MLSE (gc/fitting/regularised.py)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_gc import _synthetic, _thetas

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.gc.fitting.fits import FITS
from dvrk_ident_ros.gc.fitting.folds import held_out_folds
from dvrk_ident_ros.gc.fitting.mlse import fit_mlse
from dvrk_ident_ros.gc.fitting.regularised import Settings, fit_regularised
from dvrk_ident_ros.gc.validation.bound import format_bound, own_torque_design
from dvrk_ident_ros.gc.validation.validation import FixedFile, held_out_errors


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


def test_format_bound_is_the_least_held_out_figure_of_any_file(synthetic):
    data, theta_pos, theta_neg = synthetic
    rng = np.random.default_rng(11)
    noisy = replace(data, tau=data.tau + 0.004 * rng.normal(size=data.tau.shape))
    folds = held_out_folds(noisy)
    bound = format_bound(noisy, folds)
    # its figures are the protocol's own for that file
    scored = held_out_errors(FixedFile(bound.theta_pos, bound.theta_neg).fit, noisy, folds)
    assert np.allclose(bound.per_joint, scored.per_joint(), rtol=1e-9)
    # no file scores lower: the true one, MLSE's on all poses, nor small moves from the bound's own
    assert bound.mean() < held_out_errors(FixedFile(theta_pos, theta_neg).fit, noisy, folds).mean()
    mlse = fit_mlse(noisy)
    assert bound.mean() < held_out_errors(FixedFile(mlse.theta(+1), mlse.theta(-1)).fit, noisy, folds).mean()
    for _ in range(20):
        step = 1e-4 * rng.normal(size=80)
        moved = FixedFile(bound.theta_pos + step[:40], bound.theta_neg + step[40:])
        assert held_out_errors(moved.fit, noisy, folds).mean() > bound.mean()
    # first-order optimality of the sum of norms: its gradient vanishes at the bound
    X, y = own_torque_design(noisy)
    w = np.sqrt(np.sum([f.test for f in folds], axis=0))
    r = (X @ np.concatenate([bound.theta_pos, bound.theta_neg]) - y) * w
    gradient = sum((X * w[:, None])[noisy.joint == j].T @ r[noisy.joint == j]
                   / (np.linalg.norm(r[noisy.joint == j]) * np.linalg.norm((y * w)[noisy.joint == j]))
                   for j in range(1, 7))
    assert np.linalg.norm(gradient) < 1e-6 * np.linalg.norm(X * w[:, None], axis=0).max()


def test_format_bound_is_zero_on_noise_free_data_and_needs_every_joint(synthetic):
    data, _, _ = synthetic
    assert format_bound(data).mean() < 1e-9
    no_joint_3 = [replace(f, test=f.test & (data.joint != 3)) for f in held_out_folds(data)]
    with pytest.raises(DataError, match=r"joint\(s\) \[3\]"):
        format_bound(data, no_joint_3)


@pytest.mark.slow
def test_regularised_mlse_generalises_better_than_mlse_on_mtml_41878(shared_dir):
    """Measured (bench/bench_gc_generalisation.py): held-out mean 15.04 % (rmlse) vs 15.51 % (MLSE), cross
    guard 53.7 % vs 55.9 %; the original file 13.53 % (its held-out poses were in its fit); the format's
    bound (gc/validation/bound.py: the least figure of any file) 13.08 %: 15 % below the original is out of reach."""
    from dvrk_ident_ros.gc.fitting.data import load_cuhk
    from dvrk_ident_ros.gc.model.params import load_gc

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
    bound = format_bound(data, folds)
    assert bound.mean() < theirs.mean() < 1.05 * bound.mean()  # measured 13.08 vs 13.53 %
    assert bound.mean() > 0.85 * theirs.mean()  # why issue 20's -15 % is out of the format's reach


def test_gc_check_prints_the_held_out_report_beside_the_file_and_the_bound(synthetic, tmp_path, capsys):
    import json

    from dvrk_ident_ros.app import cli
    from dvrk_ident_ros.gc.model.params import GcParameters

    data, theta_pos, theta_neg = synthetic
    rng = np.random.default_rng(3)
    tau = data.tau + 0.003 * rng.normal(size=data.tau.shape)
    poses = tmp_path / "poses.npz"
    np.savez(poses, q=data.q, tau=tau, joint=data.joint, direction=data.direction, auxiliary=data.auxiliary,
             sweep=data.sweep)
    params = GcParameters("MTML", "1", 1.1 * theta_pos, 1.1 * theta_neg, np.full(7, 5.0), np.full(7, -5.0))
    path = params.save(tmp_path / "gc-MTML-1.json")
    assert cli.main(["gc", "check", "--params", str(path), "--data", str(poses), "--sweep-folds", "3"]) == 0
    report = json.loads(capsys.readouterr().out)["held_out"]
    noisy = replace(data, tau=tau)
    folds = held_out_folds(noisy, 3, 0.1)
    expected = held_out_errors(FixedFile(params.theta_pos, params.theta_neg).fit, noisy, folds)
    assert report["folds"] == 4 and report["file"]["mean"] == pytest.approx(100 * expected.mean(), abs=0.006)
    assert report["format_bound"]["mean"] == pytest.approx(100 * format_bound(noisy, folds).mean(), abs=0.006)
    assert report["format_bound"]["mean"] <= min(report["file"]["mean"], report["estimator"]["mean"])
