"""Noise levels of the simulated arm, and their estimate from recordings."""
from __future__ import annotations

import numpy as np

from dvrk_ident_ros.data.dataset import Dataset
from dvrk_ident_ros.sim.noise import estimate_levels, noisy_effort, quantize


def test_levels_are_recovered_from_a_recording_made_with_them():
    rng = np.random.default_rng(0)
    t = np.arange(0, 20, 1 / 200)
    resolution = np.array([1e-4, 2e-4, 5e-5])
    q = quantize(np.sin(0.5 * t)[:, None] * np.array([1.0, 0.5, 0.2]), resolution)
    tau = noisy_effort(np.cos(0.5 * t)[:, None] * np.ones(3), np.array([0.01, 0.002, 0.03]), rng)
    levels = estimate_levels(Dataset(t=t, q=q, qd=np.gradient(q, t, axis=0), tau=tau))
    assert np.allclose(levels.resolution, resolution, rtol=1e-6)
    assert np.allclose(levels.effort_std, [0.01, 0.002, 0.03], rtol=0.15)


def test_real_recordings_levels(shared_dir):
    from dvrk_ident_ros.data.loaders import load_dataset

    data = load_dataset(shared_dir / "data" / "wpi-identification" / "psm" / "one_results.csv")
    levels = estimate_levels(data)
    assert np.all(levels.resolution > 0) and np.all(levels.resolution < 1e-2)
    assert np.all(levels.effort_std > 0) and np.all(levels.effort_std < 0.2)
